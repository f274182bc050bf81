"""No credential reaches the evidence: a token in a remote's URL is in no snapshot, report or log,
and listing a remote outside the clone keeps its credential header and nothing else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from audit_helpers import (
    ZERO,
    commit,
    env_with,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
)
from pytest_httpserver import HTTPServer

from audit.model import PUSH_LOGGED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


SECRET = "ghs_s3cr3tT0KEN"


def test_tokens_in_remote_urls_never_reach_snapshots_reports_or_logs(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    url = f"https://x-access-token:{SECRET}@git.example.invalid/o/n.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    run_dir = tmp_path / "run"
    env = env_with(GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig-global"), GIT_CONFIG_NOSYSTEM="1")
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir), env=env).returncode == 0
    commit(clone, "src/x.py", "x\n", "x")
    git(clone, "push", "-q", "origin", "main")  # unlogged
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")
    # Logged by URL, token and all, as a pre-push hook sees a `git push <url>`.
    assert run_cli("record-push", "--repo", str(clone), "--remote", url, "--ref",
                   "refs/heads/side", "--old", ZERO, "--new", rev(clone, "HEAD"),
                   "--run-dir", str(run_dir), env=env).returncode == 0
    done = run_cli("closeout", "--run-dir", str(run_dir), env=env)
    assert done.returncode == 1
    assert SECRET not in done.stdout + done.stderr
    for path in run_dir.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    snap = json.loads((run_dir / "audit-before.json").read_text())
    assert snap["repos"][str(clone.resolve())]["remotes"]["origin"]["url"] == \
        "https://***@git.example.invalid/o/n.git"
    report = json.loads(subprocess.run(
        ["cat", str(run_dir / "audit-report.json")], capture_output=True, text=True,
        check=True).stdout)
    got = {(f["ref"], f["verdict"]) for f in report["findings"]}
    # The push logged by URL (with its token) covers the remote named by the same URL.
    assert ("refs/heads/side", PUSH_LOGGED) in got


def test_listing_outside_the_clone_keeps_its_credential_header_and_nothing_else(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    """A CI checkout keeps its token in `http.<url>.extraHeader`: ls-remote outside the clone
    still sends that Authorization header, and no other header the run could add."""
    from audit.evidence.snapshot import take_snapshot

    clone, _bare = make_repo_with_remote(tmp_path)
    url = httpserver.url_for("/o/n.git")
    git(clone, "remote", "set-url", "origin", url)
    base = httpserver.url_for("/")
    git(clone, "config", f"http.{base}.extraHeader", "AUTHORIZATION: basic c2VjcmV0")
    git(clone, "config", "--add", f"http.{base}.extraHeader", "X-Evil: 1")
    httpserver.expect_request("/o/n.git/info/refs").respond_with_data("nope", status=404)
    remote = take_snapshot([clone], charter_sha256=None)["repos"][str(clone.resolve())][
        "remotes"]["origin"]
    assert remote["available"] is False
    request = httpserver.log[0][0]
    assert request.headers.get("Authorization") == "basic c2VjcmV0"
    assert "X-Evil" not in request.headers
    assert "c2VjcmV0" not in json.dumps(remote)
