"""The review's HTML in a real headless Chromium (Debian's, driven by Playwright), on the ledger of
real runs (tests/review_helpers.py): it loads with no console error and no request but itself,
and a person can read off it whether the job ran (the runs, a day without one marked), what
failed and since when (new or still failing), why anything was not checked (every reason), with
both clones of one repository in one group; the filters work, the page reads fully with scripts
off, and its layout holds at 1280 and at 390 px (no overlapping boxes, nothing wider than the
viewport). Screenshots are left in the test's temporary folder."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from review_browser import LAYOUT, browser, open_page
from review_helpers import HOSTILE_TITLE, NO_RUN_DAYS_AGO, SECOND, ReviewWorld

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page_file(world: ReviewWorld, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "review.html"
    done = world.review("--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_loads_alone_and_runs_only_its_own_script(browser: Any, page_file: Path) -> None:
    page, problems = open_page(browser, page_file)
    try:
        assert problems == []
        assert page.evaluate("document.scripts.length") == 1
        assert page.evaluate("window.__hostile === undefined")
        failure = page.locator("article.failure", has_text="TASK-2").first
        assert HOSTILE_TITLE in failure.locator("h3").inner_text()
        assert "disk usage 97% over 90%" in failure.inner_text()
        colour = "el => getComputedStyle(el).backgroundColor"
        assert page.locator("#timeline td.v-fail").first.evaluate(colour) == "rgb(209, 36, 47)"
        assert page.locator("#timeline td.v-pass").first.evaluate(colour) == "rgb(46, 158, 79)"
        audit = page.locator("article.audit").first
        assert audit.is_visible() and "UNGRANTED" in audit.inner_text()
    finally:
        page.context.close()


def test_runs_and_the_day_without_one(browser: Any, page_file: Path, world: ReviewWorld) -> None:
    page, _ = open_page(browser, page_file)
    try:
        missing = (world.now - timedelta(days=NO_RUN_DAYS_AGO)).date().isoformat()
        yesterday = (world.now - timedelta(days=1)).date().isoformat()
        summary = page.locator("#summary").inner_text()
        assert "1 day(s) without a run" in summary
        runs = page.locator("#runs table.runs").first
        # Today's runs: each with its machine, trigger, duration, exit code and verdicts.
        second = runs.locator("tr.run", has_text=SECOND).first
        assert "manual" in second.inner_text() and "exit 1 failed" in second.inner_text()
        assert "1 drift" in second.inner_text() and "refused" in second.inner_text()
        assert runs.locator("tr.run", has_text="launchd").first.is_visible()
        assert yesterday in runs.locator("tr.run", has_text="launchd").first.inner_text()
        # The day without a run, in the list and in the grid, marked so.
        gap = runs.locator("tr.norun")
        assert gap.count() == 1 and f"no run {missing}" in gap.inner_text()
        cell = page.locator(f'#timeline tr.runs td.norun[title^="{missing}"]')
        assert cell.count() == 1 and "no run" in (cell.get_attribute("title") or "")
        assert "gradient" in cell.evaluate("el => getComputedStyle(el).backgroundImage")
        assert page.locator("#timeline tr.runs td.norun").count() == 1
        assert page.locator("#timeline tr.runs td.s-failed").count() == 1  # today
    finally:
        page.context.close()


def test_one_group_for_both_clones(browser: Any, page_file: Path, world: ReviewWorld) -> None:
    page, _ = open_page(browser, page_file)
    try:
        heads = page.locator("#timeline tr.repo")
        names = [h.inner_text().split()[0] for h in heads.all()]
        assert names.count("app") == 1 and "app-clone" not in names, names
        app = page.locator("#timeline tr.repo", has_text="app").first.get_attribute("data-repo")
        rows = page.locator(f'#timeline tr[data-repo="{app}"]:not(.repo)')
        labels = [r.locator("th").inner_text() for r in rows.all()]
        # TASK-0 exists only in the second clone; the others in both.
        assert any(x.startswith("TASK-0") for x in labels) and any(
            x.startswith("TASK-1 ") for x in labels), labels
        assert len(labels) == len(set(labels))
        # The machine is shown per attempt: the drift on each machine, in one group.
        drifts = page.locator(f'article.failure.drift[data-repo="{app}"]')
        assert {d.locator("dd").nth(2).inner_text() for d in drifts.all()} == {
            world.machine, SECOND}
    finally:
        page.context.close()


def test_new_and_still_failing(browser: Any, page_file: Path, world: ReviewWorld) -> None:
    page, _ = open_page(browser, page_file)
    try:
        since = (world.now - timedelta(days=2)).date().isoformat()
        today = world.now.date().isoformat()
        hostile = page.locator("article.failure.fail", has_text="TASK-2").first
        assert f"still failing since {since} (3 mornings)" in hostile.locator("h3").inner_text()
        # TASK-3 timed out two mornings ago, passed yesterday: today's timeout is new.
        slow = page.locator("article.failure.timeout", has_text=today).first
        assert "TASK-3" in slow.inner_text() and "new" in slow.locator("h3").inner_text()
        # The drift again on the second clone: the same task and label, no pass between.
        drift = page.locator("article.failure.drift", has_text=SECOND).first
        assert f"still failing since {today} (1 morning)" in drift.locator("h3").inner_text()
    finally:
        page.context.close()


def test_every_reason_is_shown(browser: Any, page_file: Path) -> None:
    page, _ = open_page(browser, page_file)
    try:
        expected = {"refused": "malformed verify-cmd 'verify-cmd: make check'",
                    "skipped": "work tree not clean",
                    "locked": "another loop-verify holds",
                    "error": "just",
                    "interrupted": "stopped"}
        table = page.locator("#unchecked table")
        for verdict, words in expected.items():
            row = table.locator(f'tr[data-verdicts="{verdict}"]', has_text=words).first
            assert row.is_visible(), verdict
            assert row.locator("p.reason").inner_text().strip(), verdict
        claimed = table.locator('tr[data-verdicts="skipped"]', has_text="verified by").first
        assert SECOND in claimed.inner_text()
        # The summary counts each kind by its name: there is no "other".
        summary = page.locator("#summary").inner_text()
        for verdict in expected:
            assert f" {verdict}" in summary, verdict
        assert "other" not in summary
    finally:
        page.context.close()


def test_filters_work_in_the_page(browser: Any, page_file: Path) -> None:
    page, problems = open_page(browser, page_file)
    try:
        assert page.locator("#filters").is_visible()
        passes = page.locator("details.passes").first
        timeout = page.locator("article.failure.timeout").first
        fail = page.locator("article.failure.fail").first
        assert passes.is_visible() and timeout.is_visible()
        page.select_option("#filter-verdict", "fail")
        assert fail.is_visible() and not timeout.is_visible() and not passes.is_visible()
        assert "hidden by the filters" in page.locator("#filter-said").inner_text()
        lib = page.locator("#filter-repo option", has_text="lib").get_attribute("value")
        page.select_option("#filter-repo", lib)
        shown = page.locator("article.failure:visible")
        assert shown.count() >= 1 and all("lib TASK-1" in a.locator("h3").inner_text()
                                          for a in shown.all())
        assert not page.locator('#timeline tr.repo:visible', has_text="app").count()
        # The runs are not a repository's: they stay.
        assert page.locator("#runs tr.norun").is_visible()
        page.select_option("#filter-verdict", "")
        page.select_option("#filter-repo", "")
        assert passes.is_visible() and timeout.is_visible()
        assert page.locator("#filter-said").inner_text() == ""
        assert problems == []
    finally:
        page.context.close()


def test_the_filters_shown_after_going_back_are_the_ones_applied(browser: Any,
                                                                page_file: Path) -> None:
    # Back from a commit's page, the browser put "fail" back in the verdict list but the page
    # showed everything: passes under a bar that said only failures were shown.
    page, _ = open_page(browser, page_file)
    try:
        page.select_option("#filter-verdict", "fail")
        page.goto("about:blank")
        page.go_back(wait_until="load")
        assert page.locator("#filter-verdict").input_value() == "fail"
        assert not page.locator("details.passes").first.is_visible()
        assert not page.locator("article.failure.timeout").first.is_visible()
        assert "hidden by the filters" in page.locator("#filter-said").inner_text()
    finally:
        page.context.close()


def test_a_section_the_filters_empty_says_so(browser: Any, page_file: Path) -> None:
    # Filtered to passes, "What failed (4)" stood over nothing: the filters, or no failure?
    page, _ = open_page(browser, page_file)
    try:
        page.select_option("#filter-verdict", "pass")
        for section in ("#failures", "#unchecked", "#audits"):
            note = page.locator(f"{section} .filtered-out")
            assert note.is_visible(), section
            assert "matches the filters" in note.inner_text(), section
        assert not page.locator("#passes .filtered-out").is_visible()
        # Keyboard alone: the verdict list takes the focus and its keys.
        page.focus("#filter-verdict")
        page.keyboard.press("Home")
        assert page.locator("#filter-verdict").input_value() == ""
        assert page.locator("article.failure").first.is_visible()
        assert not page.locator("#failures .filtered-out").is_visible()
    finally:
        page.context.close()


def test_reads_fully_with_scripts_off(browser: Any, page_file: Path) -> None:
    page, problems = open_page(browser, page_file, scripts=False)
    try:
        assert problems == []
        assert not page.locator("#filters").is_visible()
        for selector in ("#runs tr.norun", "article.failure", "#unchecked tr.unchecked",
                         "details.passes", "#timeline tr.runs", "article.audit"):
            assert page.locator(selector).first.is_visible(), selector
        hidden = page.locator("[data-repo]:not(:visible), [data-verdicts]:not(:visible)")
        # Only the folded rows (inside closed <details>) are out of sight.
        assert all(h.evaluate("el => !!el.closest('details:not([open])')") for h in hidden.all())
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_layout_holds(browser: Any, page_file: Path, tmp_path: Path, width: int) -> None:
    page, _ = open_page(browser, page_file, width=width)
    try:
        facts = page.evaluate(LAYOUT)
        assert facts["boxes"] > 200  # the measure saw the page
        assert facts["wide"] == [], facts["wide"][:10]
        assert facts["scroll"] <= facts["vw"]
        assert facts["overlaps"] == [], facts["overlaps"][:10]
        shot = tmp_path / f"review-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    finally:
        page.context.close()
