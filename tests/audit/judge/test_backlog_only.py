"""BACKLOG_ONLY is for commits that change files under backlog/ and nothing else: never a gitlink
or a symbolic link there (each leads outside it), never a merge that drops code against one of
its parents."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import Run, commit, commit_verdicts, git, isolate_git, rev

from audit.model import BACKLOG_ONLY, UNGRANTED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_a_merge_is_judged_against_every_parent(tmp_path: Path) -> None:
    run = Run(tmp_path)
    old = rev(run.clone, "HEAD")
    commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "checkout", "-q", "-b", "side", old)
    side = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    # A merge that keeps only the old side: auth.py silently leaves main.
    git(run.clone, "merge", "-q", "-s", "ours", "--no-commit", "main")
    (run.clone / "backlog" / "tasks" / "task-2.md").write_text("y\n")
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "merge")
    merge = rev(run.clone, "HEAD")
    run.push("side", logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {side: BACKLOG_ONLY, merge: UNGRANTED}
    assert "src/auth.py" in next(f for f in findings if f.commit == merge).reason


def test_a_gitlink_under_backlog_is_not_backlog_only(tmp_path: Path) -> None:
    """SPEC: "a moved submodule gitlink is a change outside it [backlog/]". A gitlink added
    or moved at `backlog/tools` (another repository's code, pinned) passed as BACKLOG_ONLY."""
    run = Run(tmp_path)
    (run.clone / ".gitmodules").write_text(
        '[submodule "tools"]\n\tpath = backlog/tools\n\turl = ../tools.git\n')
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},backlog/tools")
    git(run.clone, "add", ".gitmodules")
    git(run.clone, "commit", "-q", "-m", "tools")
    run.push()
    run.before = run.snapshot()
    task = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    git(run.clone, "update-index", "--cacheinfo", f"160000,{'2' * 40},backlog/tools")
    git(run.clone, "commit", "-q", "-m", "move the pinned tools")
    moved = git(run.clone, "rev-parse", "HEAD").strip()
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{'3' * 40},backlog/new")
    git(run.clone, "commit", "-q", "-m", "pin another repository, no .gitmodules")
    added = git(run.clone, "rev-parse", "HEAD").strip()
    run.push(logged=False)
    verdicts = commit_verdicts(run.judge())
    assert verdicts == {task: "BACKLOG_ONLY", moved: UNGRANTED, added: UNGRANTED}


def test_a_symbolic_link_under_backlog_is_no_task_edit(tmp_path: Path) -> None:
    """An unlogged commit adding `backlog/tasks/task-9 - x.md` as a symbolic link to
    ~/.ssh/authorized_keys passed as BACKLOG_ONLY: only its path was looked at. Whatever reads
    tasks would read (and write back) the file it leads to. Like a gitlink, a symbolic link
    leads outside backlog/."""
    run = Run(tmp_path)
    tasks = run.clone / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    plain = commit(run.clone, "backlog/tasks/task-8 - y.md", "---\nid: task-8\n---\n", "task 8")
    (tasks / "task-9 - x.md").symlink_to("../../../../.ssh/authorized_keys")
    git(run.clone, "add", "backlog")
    git(run.clone, "commit", "-q", "-m", "task 9")
    link = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "HEAD:main")
    findings = run.judge()
    by_commit = {f.commit: f for f in findings if f.commit}
    assert by_commit[plain].verdict == BACKLOG_ONLY
    assert by_commit[link].verdict == UNGRANTED
    assert "symbolic link backlog/tasks/task-9 - x.md is no backlog change" in \
        by_commit[link].reason
