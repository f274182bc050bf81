"""Crash recovery's decision (a pending edit a killed run left between writing a task file and
committing it) and the readiness of a checkout, as plain data. The kill -9 tests
(tests/verify/test_crash_recovery.py, test_signals.py) keep the wiring: a real run killed at each
step, then a real re-run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.git.facts import WorkTreeState
from jobs.ledger.model import Attempt, EditState
from jobs.verify.rules import readiness
from jobs.verify.rules.recovery import Action, decide, written

OLD, NEW, OTHER = "b" * 64, "a" * 64, "c" * 64
OURS = ("backlog/completed/t.md", "backlog/tasks/t.md")


def pending() -> Attempt:
    return Attempt(run_id="r", started_at=datetime(2026, 11, 30, tzinfo=UTC), repo="/r",
                   verdict="fail", task_id="TASK-1", edit_state=EditState.PENDING,
                   before_sha256=OLD, after_sha256=NEW, edit_paths=list(OURS))


@pytest.mark.parametrize(("current", "in_git", "action"), [
    (OLD, False, Action.ABANDON),          # killed before the file was replaced
    (None, False, Action.ABANDON),         # ... or the file is gone
    (OLD, True, Action.ALREADY_COMMITTED),  # its commit is in git: never read as abandoned
    (OTHER, True, Action.ALREADY_COMMITTED),  # though the owner has edited the task since
])
def test_an_edit_that_never_reached_the_file_is_abandoned_unless_git_has_its_commit(
        current: str | None, in_git: bool, action: Action) -> None:
    assert not written(pending(), current)
    assert decide(pending(), current, OURS, in_git=in_git).action is action


def test_a_written_edit_is_committed_only_when_the_tree_holds_nothing_else() -> None:
    assert written(pending(), NEW)
    assert decide(pending(), NEW, ()).action is Action.ALREADY_COMMITTED
    assert decide(pending(), NEW, OURS).action is Action.COMMIT
    assert decide(pending(), NEW, OURS[1:]).action is Action.COMMIT
    more = decide(pending(), NEW, (*OURS, "src/a.py", "b", "c", "d", "e"))
    assert more.action is Action.SKIP_REPO
    assert more.reason == ("work tree changed beyond the pending edit of TASK-1: "
                           "backlog/completed/t.md, backlog/tasks/t.md, src/a.py, b, c …")


def test_a_move_is_committed_only_while_its_old_file_is_gone_or_as_the_verdict_found_it() -> None:
    assert decide(pending(), NEW, OURS, source_sha256=None).action is Action.COMMIT
    assert decide(pending(), NEW, OURS, source_sha256=OLD).action is Action.COMMIT
    edited = decide(pending(), NEW, OURS, source_sha256=OTHER)
    assert edited.action is Action.SKIP_REPO
    assert edited.reason == ("the pending edit of TASK-1 is not committed: "
                             "backlog/completed/t.md changed since it was written")


def test_a_checkout_is_ready_only_on_its_branch_clean_and_whole() -> None:
    clean = WorkTreeState("main", ())
    assert readiness.not_ready(None, clean, "main") is None
    assert readiness.not_ready("a rebase is in progress", clean, "main") == \
        "a rebase is in progress"
    assert readiness.not_ready(None, WorkTreeState("dev", ()), "main") == \
        "on branch 'dev', not 'main'"
    assert readiness.not_ready(None, WorkTreeState("main", ("x.txt", "y")), "main") == \
        "work tree not clean: x.txt, y"
    hidden = (("README.md", "assume-unchanged"), ("conf.yml", "skip-worktree"))
    assert readiness.not_ready(None, clean, "main", hidden) == (
        "work tree not clean: README.md is marked assume-unchanged (and 1 more), so git status "
        "cannot tell whether it changed (git update-index --no-assume-unchanged README.md)")


def test_each_operation_git_leaves_unfinished_is_named(tmp_path: Path) -> None:
    assert readiness.operation_in_progress(tmp_path) is None
    for name, said in (("MERGE_HEAD", "a merge is in progress"),
                       ("rebase-merge", "a rebase is in progress"),
                       ("BISECT_LOG", "a bisect is in progress")):
        (tmp_path / name).touch()
        assert readiness.operation_in_progress(tmp_path) == said
        (tmp_path / name).unlink()
