"""Names the page cannot trust to be short or left-to-right, in a real headless Chromium: a
repository and a task named by hundreds of characters without a space, a path in two
right-to-left scripts with an emoji and a zero-width joiner, a task id in Arabic letters. The
page stays within the screen at 1280 and at 390 px with its squares in sight, and no such name
moves the words beside it. The ledger's rows are written directly, with the test's dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from inprocess import loop_verify
from review_browser import LAYOUT, browser, open_page
from review_helpers import plain_ledger

from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.slow

# A name too long for any screen, with no place to break it; a path in two right-to-left
# scripts with an emoji and a zero-width joiner.
LONG = "X" * 500
RTL_CLONE = ("/home/me/\u05de\u05d0\u05d2\u05e8/\u0639\u0631\u0628\u064a/"
             "app-\U0001f468\u200d\U0001f469")
ARABIC_TASK = "\u0641\u062d\u0635"  # a task id in Arabic letters, no control character


@pytest.fixture(scope="module")
def extreme_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A page of rows written directly (the dates are the test's): a repository and a task
    named by 500 characters without a space, a right-to-left path, a failure every morning."""
    base = tmp_path_factory.mktemp("extreme")
    config, ledger = plain_ledger(base, machine="mac")
    start = datetime(2026, 11, 20, 7, tzinfo=UTC)
    for day in range(10):
        at = start + timedelta(days=day)
        save_run(ledger, Run(f"run-{day}", "mac", "launchd", at,
                             ended_at=at + timedelta(seconds=30), exit_code=1,
                             counts={"fail": 1, "pass": 1}))
        for i, (clone, task) in enumerate(((f"/srv/{LONG}", f"TASK-{LONG}"),
                                           (RTL_CLONE, "TASK-1"), ("/srv/ops", ARABIC_TASK))):
            ledger.save(Attempt(f"run-{day}", at + timedelta(seconds=i), clone,
                                "fail" if (day + i) % 2 else "pass", task_id=task,
                                label_date="2026-11-01", machine="mac",
                                repo_identity=f"github.com/{LONG}/{LONG}" if i == 0 else None))
    ledger.close()
    out = base / "review.html"
    done = loop_verify(["review", "--config", str(config), "--since", "2026-11-18",
                        "--until", "2026-11-30", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("width", [1280, 390])
def test_layout_holds_with_names_too_long_for_the_screen(browser: Any, extreme_page: Path,
                                                         width: int) -> None:
    # A 500-character repository name in the filter's list made the page wider than the
    # screen ("repository" written down it one letter a line); in the timeline, its heading
    # widened the table so far that the day squares were out of sight.
    page, problems = open_page(browser, extreme_page, width=width)
    try:
        assert problems == []
        facts = page.evaluate(LAYOUT)
        assert facts["wide"] == [], facts["wide"][:10]
        assert facts["scroll"] <= facts["vw"]
        assert facts["overlaps"] == [], facts["overlaps"][:10]
        square = page.locator("#timeline tr.runs td").first.bounding_box()
        assert square is not None and square["x"] + square["width"] <= width, square
        label = page.locator("#filters label", has_text="repository").first.bounding_box()
        assert label is not None and label["height"] < 60, label
    finally:
        page.context.close()


def test_right_to_left_text_does_not_move_the_counts_beside_it(browser: Any,
                                                               extreme_page: Path) -> None:
    # A task id in Arabic letters took the words after it into its right-to-left run: "ops
    # TASK: 5 pass(es)" read "ops 5 :TASK pass(es)", the count on the far side of the name.
    page, _ = open_page(browser, extreme_page)
    try:
        summary = page.locator("details.passes summary", has_text=ARABIC_TASK).first
        where = summary.evaluate("""(el, word) => {
          const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          const rect = (node, from, to) => {
            const r = document.createRange(); r.setStart(node, from); r.setEnd(node, to);
            return r.getBoundingClientRect();
          };
          let task = null, count = null;
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const t = n.textContent;
            if (t.includes(word)) { const i = t.indexOf(word); task = rect(n, i, i + word.length); }
            const m = t.match(/: (\\d+) pass/);
            if (m) { const i = t.indexOf(m[1], m.index); count = rect(n, i, i + m[1].length); }
          }
          return {task: task && task.right, count: count && count.left};
        }""", ARABIC_TASK)
        assert where["task"] is not None and where["count"] is not None, where
        assert where["count"] > where["task"], where
    finally:
        page.context.close()
