"""The pure rules around verdict commits on plain data: readiness, drift, kept verdicts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from jobs.git.facts import CommitFacts, WorkTreeState
from jobs.ledger.model import Attempt
from jobs.verify.rules import drift, readiness, recovery

CLEAN = WorkTreeState("main", ())


def test_a_repository_that_can_take_a_commit_is_ready() -> None:
    assert readiness.not_ready(None, CLEAN, "main") is None
    assert readiness.cannot_commit(CommitFacts()) is None
    assert readiness.commit_fix(CommitFacts(), Path("/r")) is None


def test_each_obstacle_to_a_commit_is_named_with_its_fix() -> None:
    lock = CommitFacts(locks=(Path("/r/.git/index.lock"),))
    assert "/r/.git/index.lock exists" in str(readiness.cannot_commit(lock))
    assert "remove /r/.git/index.lock" in str(readiness.commit_fix(lock, Path("/r")))
    sign = CommitFacts(signing=True, signing_error="git commit-tree failed (128): gpg failed")
    assert "commit.gpgsign is set but signing fails: git commit-tree" in str(
        readiness.cannot_commit(sign))
    assert "commit.gpgsign false" in str(readiness.commit_fix(sign, Path("/r")))
    ignored = CommitFacts(ignored=(("backlog/tasks/a.md", ".gitignore:2:backlog/"),))
    assert readiness.cannot_commit(ignored) == (
        "cannot take a commit: backlog/ is ignored by git (.gitignore:2:backlog/ ignores "
        "backlog/tasks/a.md)")
    assert "in .gitignore" in str(readiness.commit_fix(ignored, Path("/r")))


def test_a_task_in_completed_may_commit_its_move_target_too() -> None:
    assert readiness.verdict_paths([(Path("backlog/completed/t.md"), "completed"),
                                    (Path("backlog/tasks/u.md"), "tasks")]) == [
        "backlog/completed/t.md", "backlog/tasks/t.md", "backlog/tasks/u.md"]


def test_what_a_commit_and_the_tree_after_it_may_hold() -> None:
    ours = ["backlog/completed/t.md", "backlog/tasks/t.md"]
    assert drift.extra_paths(list(reversed(ours)), ours) == []
    assert drift.extra_paths([*ours, "VERSION"], ours) == ["VERSION"]
    assert drift.hook_changes(CLEAN, "main") is None
    assert drift.hook_changes(WorkTreeState("main", ("a", "b")), "main") == (
        "a commit hook changed the work tree: a, b")
    assert drift.hook_changes(WorkTreeState("other", ()), "main") == (
        "a commit hook left branch 'other' checked out, not 'main'")
    assert drift.hook_changes(WorkTreeState(None, ("a",)), "main") == (
        "a commit hook changed the work tree: a; "
        "a commit hook left detached HEAD checked out, not 'main'")


def test_drift_names_every_way_a_recipe_moved_the_checkout() -> None:
    assert drift.drift_reason(CLEAN, "main", "a" * 40, "a" * 40) is None
    assert drift.drift_reason(WorkTreeState(None, ()), "main", "a" * 40, None) == (
        "the recipe left detached HEAD checked out, not 'main'")
    moved = drift.drift_reason(WorkTreeState("main", ("x",)), "main", "a" * 40, "b" * 40)
    assert moved == ("the recipe changed the work tree: x; "
                     "the recipe moved 'main' from aaaaaaaaaa to bbbbbbbbbb")


def kept_row(paths: list[str]) -> Attempt:
    return Attempt(run_id="r", started_at=datetime(2026, 11, 30, tzinfo=UTC), repo="/r",
                   verdict="pass", edit_state="restored", before_sha256="b" * 64,
                   after_sha256="a" * 64, edit_paths=paths)


def test_a_kept_verdict_is_committed_only_onto_the_bytes_it_came_from() -> None:
    row = kept_row(["backlog/tasks/t.md"])
    assert recovery.decide_kept(row, "b" * 64, False, True).action is recovery.Action.COMMIT
    changed = recovery.decide_kept(row, "c" * 64, False, True)
    assert changed.action is recovery.Action.ABANDON and "changed" in str(changed.reason)
    gone = recovery.decide_kept(row, "b" * 64, False, False)
    assert gone.action is recovery.Action.ABANDON and "gone" in str(gone.reason)
    moving = kept_row(["backlog/completed/t.md", "backlog/tasks/t.md"])
    taken = recovery.decide_kept(moving, "b" * 64, True, True)
    assert taken.action is recovery.Action.ABANDON and "backlog/tasks/t.md" in str(taken.reason)


def test_a_pending_edit_is_committed_only_on_the_configured_branch() -> None:
    row = kept_row(["backlog/tasks/t.md"])
    row.edit_state, row.task_id = "pending", "TASK-1"
    ours = ("backlog/tasks/t.md",)
    assert recovery.decide(row, "a" * 64, ours).action is recovery.Action.COMMIT
    elsewhere = readiness.wrong_checkout(None, "feature", "main")
    assert elsewhere == "on branch 'feature', not 'main'"
    waits = recovery.decide(row, "a" * 64, ours, wrong_checkout=elsewhere)
    assert waits.action is recovery.Action.SKIP_REPO
    assert waits.reason == ("the pending edit of TASK-1 is not committed here: "
                            "on branch 'feature', not 'main'")
    assert readiness.wrong_checkout(None, None, "main") == (
        "HEAD is detached; 'main' must be checked out")
    assert readiness.wrong_checkout("a merge is in progress", "main", "main") == (
        "a merge is in progress")
    assert readiness.wrong_checkout(None, "main", "main") is None


def test_a_verdict_commit_missing_a_path_of_ours_is_named() -> None:
    ours = ["backlog/completed/t.md", "backlog/tasks/t.md"]
    assert drift.missing_paths(list(reversed(ours)), ours) == []
    assert drift.missing_paths(["backlog/tasks/t.md"], ours) == ["backlog/completed/t.md"]
    assert drift.missing_paths([], ours[1:]) == ["backlog/tasks/t.md"]
