"""The review's page in a real headless Chromium (Debian's, driven by Playwright): the browser,
a page opened in it with every console message, error and request it makes collected, and the
layout facts the browser measures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import system

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

# The bounds are far above the second or two a page load takes: a loaded machine cannot trip them.
WAIT_MS = 180_000

# Layout facts, measured by the browser: every element whose box reaches past the viewport's
# right edge without a scrolling ancestor to hold it, and every pair of sibling boxes (sections,
# cards, paragraphs, tables, chips...) that overlap.
LAYOUT = """() => {
  const vw = document.documentElement.clientWidth;
  const held = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== 'visible') {
        return p.getBoundingClientRect().right <= vw + 0.5;
      }
    }
    return false;
  };
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if ((r.width || r.height) && r.right > vw + 0.5 && !held(el)) {
      wide.push(`${el.tagName}.${el.className} right=${r.right}`);
    }
  }
  const boxes = 'header,nav,section,article,h1,h2,h3,p,table,pre,dl,details,summary,ul,li,' +
                'div,span.chip,label,select';
  const overlaps = [];
  const parents = new Set([...document.querySelectorAll(boxes)].map(e => e.parentElement));
  for (const parent of parents) {
    const kids = [...parent.children].filter(e => e.matches(boxes) && e.getClientRects().length);
    for (let i = 0; i < kids.length; i++) {
      for (let j = i + 1; j < kids.length; j++) {
        const a = kids[i].getBoundingClientRect(), b = kids[j].getBoundingClientRect();
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 0.5 && y > 0.5) {
          overlaps.push(`${kids[i].tagName}.${kids[i].className} / ` +
                        `${kids[j].tagName}.${kids[j].className}`);
        }
      }
    }
  }
  return {wide, overlaps, scroll: document.documentElement.scrollWidth, vw,
          boxes: document.querySelectorAll(boxes).length};
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright. Without either, every test here skips saying how
    to install it (before the review's world is built), and fails in CI (tests/system.py)."""
    chromium = system.program("chromium", "chromium")
    try:
        from playwright import sync_api
    except ImportError:
        system.missing("Playwright", "make setup")
    with sync_api.sync_playwright() as pw:
        # The page does not depend on the time: a clock-moving library preloaded into the test
        # (scripts/test-any-hour) stays out of Chromium's processes.
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKETIME")}
        launched = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, env=env,
                                      timeout=WAIT_MS)
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser: Any, page_file: Path, *, width: int = 1280,
              scripts: bool = True) -> tuple[Any, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  java_script_enabled=scripts)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"{msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("request", lambda req: req.url != page_file.as_uri()
            and problems.append(f"request {req.url}"))
    page.goto(page_file.as_uri(), wait_until="load")
    return page, problems
