"""Issue 9 item 7: rules where users expect them.

A pass after an earlier failure also removes `verify-failed`; a `verify-cmd` line inside an HTML
comment is commented out; a ledger row whose verdict commit exists in git never reads `abandoned`.
Real repositories, real `just`, `loop-verify` as a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

from verify_helpers import make_verify_repo

from jobs.ledger.store import Ledger

TODAY = ("--today", "2026-11-30")


def test_a_pass_after_a_failure_removes_verify_failed(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    path = repo.add_task(1, labels=("verify:2026-11-01", "verify-failed", "keep"))
    repo.commit_all("a task that failed before")
    proc = repo.run("run", *TODAY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = path.read_text()
    assert "verify-failed" not in text and "verify:2026-11-01" not in text
    assert "  - keep" in text


def test_a_verify_cmd_inside_an_html_comment_is_not_a_command(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1, notes="<!--\nverify-cmd: just verify-bad\n-->\nverify-cmd: just verify-ok")
    repo.add_task(2, notes="<!-- old:\n  - verify-cmd: just verify-ok\n-->")
    repo.add_task(3, notes="verify-cmd: just verify-ok\n<!-- unterminated\nverify-cmd: just "
                  "verify-bad")
    repo.add_task(4, notes="<!-- one line --> kept\nverify-cmd: just verify-ok")
    repo.commit_all("tasks with comments")
    proc = repo.run("list", *TODAY, "--json")
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t for t in json.loads(proc.stdout)["tasks"]}
    assert (tasks["TASK-1"]["state"], tasks["TASK-1"]["recipe"]) == ("due", "verify-ok")
    assert tasks["TASK-2"]["state"] == "refused"
    assert "no `verify-cmd" in tasks["TASK-2"]["reason"]
    assert (tasks["TASK-3"]["state"], tasks["TASK-3"]["recipe"]) == ("due", "verify-ok")
    assert (tasks["TASK-4"]["state"], tasks["TASK-4"]["recipe"]) == ("due", "verify-ok")


def test_a_committed_verdict_never_reads_abandoned(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    path = repo.add_task(1)
    repo.commit_all("one task")
    assert repo.run("run", *TODAY).returncode == 0
    verdict_commit = repo.head()
    # The state a kill -9 right after the verdict commit leaves: the row still pending.
    ledger = Ledger(f"sqlite:///{repo.state_dir / 'ledger.db'}")
    try:
        (row,) = ledger.history()
        assert row.edit_state == "committed" and row.commit_sha == verdict_commit
        row.edit_state, row.commit_sha = "pending", None
        ledger.update(row)
    finally:
        ledger.close()
    # Then the owner edits the task (and commits it) before the next run.
    path.write_text(path.read_text().replace("Task 1", "Task one"))
    repo.git("commit", "-qam", "owner's edit")
    proc = repo.run("run", *TODAY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = repo.history()
    assert [r["edit_state"] for r in rows] == ["committed"], rows
    assert rows[0]["commit_sha"] == verdict_commit
