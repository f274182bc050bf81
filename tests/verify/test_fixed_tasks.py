"""The fail → fix → verify loop on one clone: a task that failed, was fixed and set Done again is
new work (its file is new), while the very same verification is never run twice."""

from __future__ import annotations

import re
from pathlib import Path

from verify_helpers import VerifyRepo, make_verify_repo

TODAY = ("--today", "2026-11-30")


def set_done_again(repo: VerifyRepo, task: Path, recipe: str) -> None:
    """What an owner does after a failure: fix the cause, set the task Done again."""
    text = task.read_text()
    text = text.replace("status: To Do", "status: Done")
    text = re.sub(r"verify-cmd: just verify-\w+", f"verify-cmd: just {recipe}", text, count=1)
    task.write_text(text)
    repo.commit_all("fixed; done again")


def test_a_task_fixed_and_set_done_again_is_verified_again(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all("task 1")
    assert repo.run("run", *TODAY).returncode == 1
    assert "status: To Do" in task.read_text()

    set_done_again(repo, task, "verify-ok")
    again = repo.run("run", *TODAY)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("pass "), again.stdout
    assert "claimed by" not in again.stdout
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert "verify:2026-11-01" not in task.read_text()


def test_a_verdict_reset_away_is_reported_verified_already(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all("task 1")
    assert repo.run("run", *TODAY).returncode == 1
    verdict = repo.head()
    # The owner drops the verdict commit: the same file is due again, and was verified already.
    repo.git("reset", "-q", "--hard", "HEAD~1")
    again = repo.run("run", *TODAY)
    assert again.returncode == 0, again.stdout + again.stderr
    first = again.stdout.splitlines()[0]
    assert re.fullmatch(
        rf"skipped  app TASK-1  just verify-bad: verified already at "
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(fail, commit {verdict[:10]}\)", first), first
    assert "claimed by" not in again.stdout


def test_a_reverted_verdict_is_a_new_request(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all("task 1")
    assert repo.run("run", *TODAY).returncode == 1
    # Reverting restores the very same file, but the verdict is in the history: run it again.
    repo.git("revert", "--no-edit", "HEAD")
    again = repo.run("run", *TODAY)
    assert again.returncode == 1, again.stdout + again.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 failed (just verify-bad)"
