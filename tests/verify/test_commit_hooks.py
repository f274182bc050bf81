"""Verdict commits under careless commit hooks: a hook that leaves a process holding git's
output, checks out another branch, stuffs or empties the commit, or gets git killed after it
moved the branch. Real repositories with bare remotes, real `just`, real hooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from verify_helpers import VerifyRepo, git_show, hook, make_verify_repo

TODAY = ("--today", "2026-11-30")


def other_branch(repo: VerifyRepo) -> tuple[str, str]:
    """A branch `other` one commit of its own ahead, main checked out again: (other, main)."""
    repo.git("branch", "other")
    repo.git("checkout", "-q", "other")
    (repo.root / "OTHER.txt").write_text("other\n")
    repo.git("add", "OTHER.txt")
    repo.git("commit", "-q", "-m", "other's own commit")
    other = repo.head()
    repo.git("checkout", "-q", "main")
    return other, repo.head()


def kill_pid_in(path: Path) -> None:
    """SIGKILL the one process this test's hook started and wrote the pid of."""
    if path.exists():
        try:
            os.kill(int(path.read_text().strip()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def test_a_hook_leaving_a_background_process_on_gits_output_does_not_hang_the_run(
        tmp_path: Path) -> None:
    # A careless post-commit hook starts something in the background that keeps git's stdout and
    # stderr open (`notify &`). git has finished; the run must not wait for that process.
    repo = make_verify_repo(tmp_path, tasks=[1])
    pid_file = tmp_path / "background.pid"
    hook(repo, "post-commit", f"sleep 600 &\necho $! > {pid_file}\n")
    try:
        proc = repo.run("run", *TODAY, "--json", process=True, timeout=30)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("loop-verify waited for a hook's background process") from exc
    finally:
        kill_pid_in(pid_file)
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(proc.stdout)["results"]
    assert result["verdict"] == "pass" and result["edit_state"] == "committed"
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"


def test_a_hook_that_checks_out_another_branch_is_the_repositorys_error(
        tmp_path: Path) -> None:
    # A careless post-commit hook leaves another branch checked out (`git checkout other` to
    # publish something, never switching back). The verdict commit was made on main and holds
    # only the task file: it stands, and its SHA is main's. The hook's branch is never reset,
    # and the next task's recipe is neither run on that branch nor blamed for it as drift.
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    other, main_before = other_branch(repo)
    hook(repo, "post-commit", "git checkout -q other\n")
    second = repo.root / "backlog" / "tasks" / "task-2 - Task-2.md"
    untouched = second.read_bytes()

    proc = repo.run("run", *TODAY, "--json")

    results = json.loads(proc.stdout)["results"]
    verdicts = [(r["verdict"], r["task_id"]) for r in results]
    assert verdicts == [("pass", "TASK-1"), ("error", None), ("skipped", "TASK-2")], results
    assert "other" in results[1]["reason"] and "commit hook" in results[1]["reason"], results
    assert proc.returncode == 3
    assert repo.git("rev-parse", "other").strip() == other
    main_now = repo.git("rev-parse", "main").strip()
    assert repo.git("rev-parse", "main~1").strip() == main_before
    assert results[0]["commit_sha"] == main_now and results[0]["edit_state"] == "committed"
    assert repo.git("show", "--name-only", "--format=", "main").split() == [
        "backlog/tasks/task-1", "-", "Task-1.md"]
    assert git_show(repo, "main", second) == untouched


def test_a_verdict_commit_with_extra_paths_is_undone_on_its_branch_when_a_hook_switched_away(
        tmp_path: Path) -> None:
    # The commit a pre-commit hook stuffed is undone on main, where it was made; the branch the
    # post-commit hook checked out is not reset to main's old tip.
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.git("branch", "other")
    other = repo.head()
    main_before = other
    hook(repo, "pre-commit", "echo 2 > VERSION\ngit add VERSION\n")
    hook(repo, "post-commit", "git checkout -q -f other\n")

    proc = repo.run("run", *TODAY, "--json")

    results = json.loads(proc.stdout)["results"]
    assert [(r["verdict"], r["task_id"]) for r in results] == [
        ("error", "TASK-1"), ("error", None)], results
    assert "VERSION" in results[0]["reason"] and "undone" in results[0]["reason"], results
    assert results[0]["commit_sha"] is None
    assert "branch 'other'" in results[1]["reason"], results
    assert proc.returncode == 3
    assert repo.git("rev-parse", "main").strip() == main_before
    assert repo.git("rev-parse", "other").strip() == other


def test_a_commit_git_made_before_it_failed_is_kept_not_rolled_back(tmp_path: Path) -> None:
    # git can fail after it moved the branch ("repository has been updated, but unable to write
    # new index file" on a full disk; killed by a signal while its post-commit hook runs). The
    # verdict is then in the branch: writing the old bytes back over it would leave the task
    # file reverted in the tree, and a ledger row saying the commit failed.
    repo = make_verify_repo(tmp_path, tasks=[1])
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before = repo.head()
    hook(repo, "post-commit", "kill -INT $PPID\n")

    proc = repo.run("run", *TODAY, "--json")

    [result] = json.loads(proc.stdout)["results"]
    assert repo.git("rev-parse", "HEAD~1").strip() == before
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert result["verdict"] == "pass" and result["edit_state"] == "committed", result
    assert result["commit_sha"] == repo.head()
    assert repo.status() == ""
    assert task.read_bytes() == git_show(repo, "HEAD", task)
    assert proc.returncode == 0, proc.stdout
    # Nothing kept for a later run to commit a second time.
    assert not list(repo.state_dir.glob("kept/*.md"))


def test_a_verdict_commit_a_hook_emptied_is_undone_not_recorded_committed(
        tmp_path: Path) -> None:
    # A careless pre-commit hook stashes everything to "test what is committed" and pops it
    # back: the staged task file goes with the stash, and git records an empty commit. The
    # verdict is not in it: the row must not say committed (that would also finish the claim,
    # so no machine would verify the task again). The commit is undone, as one holding other
    # paths is, and the task is verified again next run.
    repo = make_verify_repo(tmp_path, tasks=[1])
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()
    hook(repo, "pre-commit", "git stash -q && git stash pop -q\n")

    proc = repo.run("run", *TODAY, "--json")

    [result] = json.loads(proc.stdout)["results"]
    assert result["verdict"] == "error" and result["edit_state"] == "restored", result
    assert result["commit_sha"] is None
    assert "did not hold backlog/tasks/task-1 - Task-1.md" in result["reason"], result
    assert "undone" in result["reason"]
    assert proc.returncode == 3
    assert repo.head() == head and task.read_bytes() == before
    assert repo.status() == ""


def test_a_refusing_hook_that_checked_out_another_branch_leaves_the_verdict_kept(
        tmp_path: Path) -> None:
    # A pre-commit hook checks out another branch and refuses: HEAD moved, main did not. The
    # commit was not made (kept for a later run, the task file restored), never taken for made.
    repo = make_verify_repo(tmp_path, tasks=[1])
    other, main_before = other_branch(repo)
    hook(repo, "pre-commit", "git checkout -q other\nexit 1\n")

    proc = repo.run("run", *TODAY, "--json")

    results = json.loads(proc.stdout)["results"]
    assert [(r["verdict"], r["task_id"], r["edit_state"]) for r in results] == [
        ("pass", "TASK-1", "restored"), ("error", None, "none")], results
    assert "commit failed" in results[0]["reason"], results
    assert "branch 'other'" in results[1]["reason"], results
    assert proc.returncode == 3
    assert repo.git("rev-parse", "main").strip() == main_before
    assert repo.git("rev-parse", "other").strip() == other
    assert len(list(repo.state_dir.glob("kept/*.md"))) == 1
