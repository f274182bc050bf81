"""Regression checks from a review of loop-pi-audit against SPEC Part 2, run as a user would:
real clones, real bare remotes, real pushes, the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_helpers import commit, git, isolate_git, make_repo_with_remote, run_cli


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Review")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "review@example.com")


def test_summary_says_findings_even_for_one(tmp_path: Path) -> None:
    """SPEC: the summary line is `audit: N findings, K failing`, whatever N is."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")  # one unlogged ref: one finding
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"
    again = run_cli("report", "--run-dir", str(run_dir))
    assert again.returncode == 1
    assert again.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"


def test_a_logged_push_to_a_remote_no_snapshot_holds_is_unverified(tmp_path: Path) -> None:
    """`git push <url>` to a repository that is no configured remote: the hook logs it, yet no
    snapshot looked there. The audit cannot say "no remote changes" and pass."""
    clone, _ = make_repo_with_remote(tmp_path)
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other))
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/secret.py", "x\n", "sent elsewhere")
    git(clone, "push", "-q", str(other), "main")
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["verdict"] == "could_not_check"
    [finding] = data["findings"]
    assert (finding["kind"], finding["remote"], finding["verdict"]) == (
        "remote-unaudited", str(other), "UNVERIFIED")
