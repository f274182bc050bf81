"""The SPEC's eligibility rules (Part 1, "What a task is") as plain data: a task file's text and
a date in, its state (due, waiting, refused, not done, or no verify task at all) and the reason
out. The end-to-end tests (tests/verify/test_run.py, test_hostile_repositories.py) keep the
wiring: a refused, waiting or not-done task runs nothing and keeps its bytes."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from jobs.backlog.task import BacklogConfig, parse_task
from jobs.verify.rules.eligibility import (
    DUE,
    NOT_DONE,
    REFUSED,
    WAITING,
    classify,
    label_date,
    recipe_of,
)

TODAY = date(2026, 11, 30)
CONFIG = BacklogConfig()


def task_text(labels: str = "\n  - 'verify:2026-11-01'", status: str = "Done",
              notes: str = "verify-cmd: just verify-ok", task_id: str = "TASK-1") -> bytes:
    """A task file as the Backlog.md CLI writes it."""
    return (f"---\nid: {task_id}\ntitle: One\nstatus: {status}\nassignee: []\n"
            f"created_date: '2026-11-01 08:00'\nlabels:{labels}\ndependencies: []\n---\n\n"
            "## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
            f"{notes}\n<!-- SECTION:NOTES:END -->\n").encode()


def judged(data: bytes, today: date = TODAY, config: BacklogConfig = CONFIG) -> tuple[
        str | None, str | None, str | None]:
    found = classify(parse_task(Path("backlog/tasks/task-1 - One.md"), data, "tasks"), config,
                     today)
    return (None, None, None) if found is None else (found.state, found.reason, found.recipe)


def test_a_done_task_whose_date_has_come_is_due_with_its_recipe() -> None:
    assert judged(task_text()) == (DUE, None, "verify-ok")
    # Rule 3: today counts, and so does any earlier day.
    label = "\n  - 'verify:2026-11-30'"
    assert judged(task_text(labels=label)) == (DUE, None, "verify-ok")
    # A list marker and leading spaces are allowed before the command.
    assert judged(task_text(notes="  - verify-cmd: just verify-Disk_2"))[::2] == (
        DUE, "verify-Disk_2")


def test_a_future_date_is_waiting_until_that_day() -> None:
    text = task_text(labels="\n  - 'verify:2026-12-01'")
    assert judged(text) == (WAITING, "due 2026-12-01", "verify-ok")
    assert judged(text, today=date(2026, 12, 1)) == (DUE, None, "verify-ok")


@pytest.mark.parametrize("status", ["To Do", "In Progress", "Blocked"])
def test_a_task_not_done_is_not_done_whatever_its_label(status: str) -> None:
    state, reason, _ = judged(task_text(status=status))
    assert state == NOT_DONE and f"status is {status!r}, not 'Done'" == reason


def test_done_is_read_as_the_cli_matches_it_whatever_its_case() -> None:
    assert judged(task_text(status="done"))[0] == DUE
    assert judged(task_text(status="'DONE'"))[0] == DUE


def test_done_is_the_last_status_of_the_backlogs_own_list() -> None:
    config = BacklogConfig(statuses=("Open", "Shipped", "Verified"))
    assert judged(task_text(status="Verified"), config=config)[0] == DUE
    assert judged(task_text(status="Done"), config=config)[0] == NOT_DONE


@pytest.mark.parametrize(("labels", "reason"), [
    ("\n  - 'verify:2026-02-30'", "bad verify label 'verify:2026-02-30'"),
    ("\n  - 'verify:2026-1-5'", "bad verify label 'verify:2026-1-5'"),
    ("\n  - 'verify:2026-11-01'\n  - 'verify:2026-11-02'", "2 verify labels"),
    ("\n  - 'VERIFY:2026-11-01'", "must be written in lower case"),
])
def test_a_bad_or_second_verify_label_is_refused(labels: str, reason: str) -> None:
    state, said, recipe = judged(task_text(labels=labels))
    assert (state, recipe) == (REFUSED, None)
    assert said is not None and reason in said, said


@pytest.mark.parametrize(("notes", "reason"), [
    ("no command at all", "no `verify-cmd: just verify-<name>` line"),
    ("verify-cmd: just verify-ok\nverify-cmd: just verify-ok", "2 verify-cmd lines"),
    ("verify-cmd: just verify-ok --yes", "malformed verify-cmd"),
    ("verify-cmd: just verify-ok && rm -rf /", "malformed verify-cmd"),
    ("verify-cmd: make verify-ok", "malformed verify-cmd"),
    ("verify-cmd: just deploy", "malformed verify-cmd"),
    ("verify-cmd: just verify-", "malformed verify-cmd"),
    ("<!--\nverify-cmd: just verify-ok\n-->", "no `verify-cmd"),
])
def test_a_missing_second_or_malformed_command_is_refused(notes: str, reason: str) -> None:
    state, said, recipe = judged(task_text(notes=notes))
    assert (state, recipe) == (REFUSED, None)
    assert said is not None and reason in said, said


@pytest.mark.parametrize("notes", [
    "<!--\nverify-cmd: just verify-bad\n-->\nverify-cmd: just verify-ok",
    "verify-cmd: just verify-ok\n<!-- unterminated\nverify-cmd: just verify-bad",
    "<!-- one line --> kept\nverify-cmd: just verify-ok",
])
def test_a_command_commented_out_does_not_count_but_the_live_one_does(notes: str) -> None:
    # Rule 4: a line inside an HTML comment is commented out, an unterminated comment to the
    # end of the file; a comment closed on its own line hides nothing after it.
    assert judged(task_text(notes=notes)) == (DUE, None, "verify-ok")


def test_a_command_in_a_commented_out_list_is_no_command() -> None:
    state, said, _ = judged(task_text(notes="<!-- old:\n  - verify-cmd: just verify-ok\n-->"))
    assert state == REFUSED and said is not None and "no `verify-cmd" in said


def test_an_id_that_could_carry_a_second_line_is_refused() -> None:
    state, said, _ = judged(task_text(task_id="'TASK-1 x'"))
    assert state == REFUSED and said is not None and "is not a plain id" in said


def test_a_task_without_a_verify_label_is_no_verify_task() -> None:
    assert judged(task_text(labels=" []")) == (None, None, None)
    assert judged(task_text(labels="\n  - infra\n  - verify-failed")) == (None, None, None)


def test_label_dates_and_recipes_are_read_exactly() -> None:
    assert label_date("verify:2026-11-01") == date(2026, 11, 1)
    assert label_date("verify:2024-02-29") == date(2024, 2, 29)
    for bad in ("verify:2025-02-29", "verify:2026-13-01", "verify: 2026-11-01",
                "verify:2026-11-01x", "verify:26-11-01"):
        assert label_date(bad) is None, bad
    assert recipe_of("verify-cmd: just verify-a_b-1\r") == "verify-a_b-1"
    for bad in ("verify-cmd: just verify-a;b", "verify-cmd: just  verify-a",
                "verify-cmd: just verify-a ", "verify-cmd: just verify-_a"):
        assert recipe_of(bad) is None, bad
