"""What a verdict writes (SPEC Part 1, "Verdicts and what they write") as plain data: a task
file's bytes and a recipe's outcome in, the task file's new bytes, its exit summary and the
commit message out. tests/verify/test_run.py keeps the wiring: a real recipe's output reaches
the task file it reopens, and a pass's edit is committed alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobs.verify.rules.transition import (
    FAIL,
    PASS,
    TIMEOUT,
    Outcome,
    apply,
    commit_message,
    failure_summary,
    tail_lines,
)

AT = datetime(2026, 11, 30, 7, 30, 12, tzinfo=UTC)
TASK = b"""---
id: TASK-1
title: One
status: Done
assignee: []
created_date: '2026-11-01 08:00'
updated_date: '2026-11-01 08:00'
labels:
  - 'verify:2026-11-01'
  - infra
dependencies: []
---

## Implementation Notes

<!-- SECTION:NOTES:BEGIN -->
verify-cmd: just verify-disk
<!-- SECTION:NOTES:END -->
"""


def failed(**kw: object) -> Outcome:
    fields: dict[str, object] = {"verdict": FAIL, "recipe": "verify-disk", "exit_code": 1,
                                 "duration": 12.44, "timeout": 1800.0,
                                 "tail": "disk usage 97% > 90%\n",
                                 "output_path": "/state/runs/2026-11-30/TASK-1.log"}
    fields.update(kw)
    return Outcome(**fields)  # type: ignore[arg-type]


def test_a_pass_removes_its_label_and_an_earlier_failure_and_nothing_else() -> None:
    before = TASK.replace(b"  - infra\n", b"  - infra\n  - verify-failed\n")
    after = apply(before, Outcome(PASS, "verify-disk", exit_code=0), "verify:2026-11-01",
                  "To Do", AT)
    assert after == TASK.replace(b"  - 'verify:2026-11-01'\n", b"").replace(
        b"updated_date: '2026-11-01 08:00'", b"updated_date: '2026-11-30 07:30'")


def test_a_failure_reopens_keeps_the_label_adds_verify_failed_once_and_the_summary() -> None:
    after = apply(TASK, failed(), "verify:2026-11-01", "To Do", AT).decode()
    assert "status: To Do\n" in after and "updated_date: '2026-11-30 07:30'" in after
    assert "  - 'verify:2026-11-01'\n  - infra\n  - verify-failed\n" in after
    assert after.endswith(
        "verify-cmd: just verify-disk\n\n"
        "verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1 after 12.4s "
        "(timeout 30m)\nlast lines of output:\n    disk usage 97% > 90%\n"
        "full output: /state/runs/2026-11-30/TASK-1.log\n<!-- SECTION:NOTES:END -->\n")
    again = apply(after.encode(), failed(), "verify:2026-11-01", "To Do", AT).decode()
    assert again.count("  - verify-failed\n") == 1


def test_a_timeout_says_so_instead_of_an_exit_code() -> None:
    summary = failure_summary(failed(verdict=TIMEOUT, exit_code=None, duration=1800.2), AT)
    assert summary.splitlines()[0] == (
        "verify-failed 2026-11-30T07:30:12Z: `just verify-disk` timed out after 30m")


def test_a_recipe_never_started_says_why_with_justs_own_lines_indented() -> None:
    # `just`'s diagnostic spans lines: its first line on the summary's first, the rest indented
    # as the output tail is, and no output section (there was none).
    why = ("the justfile cannot be read: error: Recipe `verify-ok` first defined on line 1 "
           "is redefined on line 4\n ——▶ justfile:4:1\n  │\n4 │ verify-ok:\n  │ ^^^^^^^^^")
    summary = failure_summary(failed(not_run=why, tail=""), AT)
    lines = summary.splitlines()
    assert lines[0] == ("verify-failed 2026-11-30T07:30:12Z: `just verify-disk` not run: the "
                        "justfile cannot be read: error: Recipe `verify-ok` first defined on "
                        "line 1 is redefined on line 4")
    assert lines[1:-1] == ["     ——▶ justfile:4:1", "      │", "    4 │ verify-ok:",
                           "      │ ^^^^^^^^^"]
    assert lines[-1] == "full output: /state/runs/2026-11-30/TASK-1.log"


def test_output_lines_beyond_20_or_2_kib_are_left_out_keeping_the_last() -> None:
    many = "".join(f"line {n}\n" for n in range(100))
    assert tail_lines(many) == [f"line {n}" for n in range(80, 100)]
    wide = "".join(f"{n:03d}" + "x" * 297 + "\n" for n in range(10))
    kept = tail_lines(wide)
    assert kept == wide.splitlines()[-len(kept):] and len("\n".join(kept).encode()) <= 2048
    one_long_line = "y" * 5000
    assert tail_lines(one_long_line) == ["y" * 2048]
    assert failure_summary(failed(tail=""), AT).splitlines()[2] == "    (none)"


@pytest.mark.parametrize("control", ["\x1b", "\x07", "\x00", "\x7f", "\x9b", "\u202e", "\u2066",
                                     "\u200f", "\u061c"])
def test_a_control_or_bidi_character_of_the_output_is_written_as_a_replacement(
        control: str) -> None:
    # A terminal's escape (C0, C1: U+009B is CSI) or a bidirectional override acts when the task
    # file is shown with `cat` or `backlog task view`; a tab and the text around it stay.
    summary = failure_summary(failed(tail=f"a{control}2J\tb\r\n"), AT)
    assert "    a\ufffd2J\tb\n" in summary
    assert control not in summary


def test_the_commit_message_names_the_task_the_verdict_and_the_recipe() -> None:
    assert commit_message("TASK-7", Outcome(PASS, "verify-disk")) == \
        "loop-verify: TASK-7 passed (just verify-disk)"
    for verdict in (FAIL, TIMEOUT):
        assert commit_message("TASK-7", Outcome(verdict, "verify-disk")) == \
            "loop-verify: TASK-7 failed (just verify-disk)"
