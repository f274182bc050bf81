"""The review's HTML in a real headless Chromium (Debian's, driven by Playwright): it loads with
no console error and no request, shows the timeline and the failing attempt, and a hostile task
title stays text. A screenshot is left in the test's temporary folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from review_helpers import HOSTILE_TITLE, ReviewWorld

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

# On a developer's machine without them the test is skipped with the reason; in CI (where
# .ci/run installs Chromium and `make setup` Playwright) their absence is a failure.
if os.environ.get("CI") and not Path(CHROMIUM).exists():
    raise RuntimeError(f"CI: {CHROMIUM} is missing; .ci/run should have installed chromium")
sync_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)",
                allow_module_level=True)



@pytest.mark.slow
def test_review_page_in_chromium(world: ReviewWorld, tmp_path: Path) -> None:
    page_file = tmp_path / "review.html"
    done = world.review("--out", str(page_file))
    assert done.returncode == 0, done.stderr
    console: list[str] = []
    requests: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        # The page does not depend on the time: a clock-moving library preloaded into the test
        # (scripts/test-any-hour) stays out of Chromium's processes. The bounds are far above
        # the second or two a page load takes, so a loaded machine cannot trip them.
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKETIME")}
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=env,
                                     timeout=180_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(180_000)

            def on_console(msg: Any) -> None:
                if msg.type in ("error", "warning"):
                    console.append(f"{msg.type}: {msg.text}")

            page.on("console", on_console)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("request", lambda req: requests.append(req.url))
            page.goto(page_file.as_uri(), wait_until="load")
            # Every request the page made: only the file itself.
            assert requests == [page_file.as_uri()], requests
            assert console == [] and errors == [], (console, errors)

            timeline = page.locator("#timeline table.tl").first
            assert timeline.is_visible()
            assert page.locator("#timeline td.v-fail").first.is_visible()
            assert page.locator("#timeline td.v-timeout").first.is_visible()
            # Read at a glance: a failing day is red, a passing one green, an empty one grey.
            colour = "el => getComputedStyle(el).backgroundColor"
            assert page.locator("#timeline td.v-fail").first.evaluate(colour) == "rgb(209, 36, 47)"
            assert page.locator("#timeline td.v-pass").first.evaluate(colour) == "rgb(46, 158, 79)"
            assert page.locator("#timeline td:not([class])").first.evaluate(colour) == \
                "rgb(238, 241, 244)"
            failure = page.locator("article.failure", has_text="TASK-2").first
            assert failure.is_visible()
            assert "exited 3" in failure.inner_text()
            assert "disk usage 97% over 90%" in failure.inner_text()
            # The hostile title is text on the page, and no element came of it.
            heading = failure.locator("h3")
            assert HOSTILE_TITLE in heading.inner_text()
            assert page.evaluate("document.scripts.length") == 0
            assert page.evaluate("window.__hostile === undefined")
            audit = page.locator("article.audit").first
            assert audit.is_visible() and "UNGRANTED" in audit.inner_text()
            shot = tmp_path / "review.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
