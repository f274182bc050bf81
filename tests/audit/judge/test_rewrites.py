"""A rewrite of a branch is NON_FAST_FORWARD whatever the push log says, against real
repositories: a logged force push in the middle of the run, a rewrite pushed away and back, the
default branch deleted (logged), or rewritten after the run made another branch the remote's HEAD
(the default branch is the one the run found); a logged push from a tip nobody can see is
UNVERIFIED. The rules themselves on plain data: test_default_branch.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import Run, branch_verdict, commit, git, isolate_git, rev, verdicts

from audit.model import NON_FAST_FORWARD, PUSH_LOGGED, UNVERIFIED, exit_code


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_a_logged_force_push_in_the_middle_fails_even_when_the_net_is_a_fast_forward(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    commit(run.clone, "src/theirs.py", "x\n", "another session's work")
    run.push()
    git(run.clone, "checkout", "-q", "-b", "mine", base)
    commit(run.clone, "src/mine.py", "y\n", "mine")
    run.push("mine", force=True)
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_a_logged_push_whose_old_tip_is_not_in_the_clone_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    before = rev(run.clone, "HEAD")
    commit(run.clone, "src/x.py", "x\n", "x")
    new = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "main")
    run.record("refs/heads/main", before, new)
    run.record("refs/heads/main", "f" * 40, new)  # a rewrite from a tip nobody can see
    findings = run.judge()
    assert branch_verdict(findings) == UNVERIFIED


def test_a_rewrite_pushed_away_and_back_fails_though_the_branch_ends_where_it_began(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    commit(run.clone, "src/theirs.py", "x\n", "another session's work")
    run.push()
    git(run.clone, "reset", "-q", "--hard", base)
    run.push(force=True)  # logged: back to the start, the other commit gone from main
    findings = run.judge()
    assert verdicts(findings) == {("refs/heads/main", "branch-unchanged"): NON_FAST_FORWARD}
    assert exit_code(findings) == 1


def test_deleting_the_default_branch_fails_even_when_logged(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/keep")
    run.before = run.snapshot()
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/keep")
    run.push("", "refs/heads/main")
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/main")
    commit(run.clone, "src/x.py", "x\n", "again")
    run.push()
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_a_dangling_remote_head_does_not_let_the_run_choose_its_default_branch(
        tmp_path: Path) -> None:
    """The remote's HEAD named a branch that did not exist when the run started (a bare
    repository made with another default branch name), so the server advertised no HEAD and
    main was the default branch. By creating that branch the run made the after-snapshot's HEAD
    the default: main became "any other ref", and a logged force push rewriting it passed as
    PUSH_LOGGED. The default is decided by what the run found."""
    run = Run(tmp_path)
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/master")
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    run.before = run.snapshot()
    assert "HEAD" not in run.before["repos"][run.key]["remotes"]["origin"]["symrefs"]
    git(run.clone, "reset", "-q", "--hard", "HEAD~1")
    commit(run.clone, "src/b.py", "b\n", "b")
    run.push(force=True)
    run.push("HEAD", "refs/heads/master")
    found = verdicts(run.judge())
    assert found[("refs/heads/main", "branch-moved")] == NON_FAST_FORWARD
    assert found[("refs/heads/master", "branch-added")] == PUSH_LOGGED
