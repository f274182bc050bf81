"""GitHub waits are bounded (issue 11 item 4): one snapshot's GitHub calls share a capped time, a
rate limit is never waited out, a trickling server is cut off, a miss is "unavailable", and
$GITHUB_API_URL serves only remotes on its own host. Against pytest-httpserver, with a 2 s cap."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from audit_helpers import env_with, gh_release, git, isolate_git, make_repo_with_remote, run_cli
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from audit.evidence.github import api_base_for, github_cap
from audit.evidence.rundir import BEFORE
from audit.evidence.snapshot import take_snapshot
from audit.main import main as audit_main
from jobs.core.urls import DEFAULT_API_URL

PREFIX = "/api/v3"
OWNER_NAME = "octo/widgets"
CAP = 2.0
# Generous: what is asserted is "bounded by the cap" (against an hour's Retry-After or a server
# that never stops), not "fast on this machine"; the snapshot's own git work and imports count
# too, and a loaded CI machine may take seconds for them.
SLACK = 30.0


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setenv("LOOP_PI_GITHUB_TIMEOUT", str(CAP))
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                "all_proxy", "LOOP_PI_AUDIT_LOG"):
        monkeypatch.delenv(var, raising=False)


def enterprise_clone(tmp_path: Path, httpserver: HTTPServer,
                     monkeypatch: pytest.MonkeyPatch) -> Path:
    """origin on the test server's host (a GitHub Enterprise host), fetched from a bare repo."""
    clone, bare = make_repo_with_remote(tmp_path)
    url = f"https://localhost:{httpserver.port}/{OWNER_NAME}.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    monkeypatch.setenv("GITHUB_API_URL", httpserver.url_for(PREFIX).rstrip("/"))
    return clone


def settle(httpserver: HTTPServer, requests: int) -> None:
    """Wait until the server has logged `requests` answers: a request the audit abandoned at the
    cap finishes later, and must not land in the next test's log."""
    deadline = time.monotonic() + 30
    while len(httpserver.log) < requests and time.monotonic() < deadline:
        time.sleep(0.05)


def releases_of(snap: dict, clone: Path) -> dict:  # type: ignore[type-arg]
    return snap["repos"][str(clone.resolve())]["releases"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("status", [429, 403])
def test_retry_after_an_hour_is_never_waited(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        status: int) -> None:
    clone = enterprise_clone(tmp_path, httpserver, monkeypatch)
    httpserver.expect_request(f"{PREFIX}/repos/{OWNER_NAME}/releases").respond_with_json(
        {"message": "You have exceeded a secondary rate limit."}, status=status,
        headers={"Retry-After": "3600"})
    started = time.monotonic()
    releases = releases_of(take_snapshot([clone], charter_sha256=None), clone)
    assert time.monotonic() - started < CAP + SLACK
    assert releases["available"] is False
    assert "rate limit" in releases["reason"] and "Retry-After 3600, not waited" in \
        releases["reason"]
    assert len(httpserver.log) == 1  # asked once, not retried


def test_a_trickling_server_is_cut_off_at_the_cap_and_begin_refuses(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone = enterprise_clone(tmp_path, httpserver, monkeypatch)
    stop = threading.Event()

    def trickle(request: Request) -> Response:
        def body() -> Iterator[bytes]:
            yield b"["
            # A byte at a time, each well within any per-read timeout, until the test ends.
            while not stop.wait(0.2):
                yield b" "
        return Response(body(), content_type="application/json", direct_passthrough=True)

    httpserver.expect_request(f"{PREFIX}/repos/{OWNER_NAME}/releases").respond_with_handler(
        trickle)
    try:
        started = time.monotonic()
        code = audit_main(["begin", str(clone), "--run-dir", str(tmp_path / "run")])
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        settle(httpserver, 1)
    assert code == 1
    err = capsys.readouterr().err
    assert f"GitHub did not answer within {CAP:g}s" in err
    assert not (tmp_path / "run" / BEFORE).exists()
    assert elapsed < CAP + SLACK


def test_the_cap_is_shared_by_every_call_of_one_snapshot(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = enterprise_clone(tmp_path, httpserver, monkeypatch)
    git(clone, "remote", "add", "fork", f"https://localhost:{httpserver.port}/octo/fork.git")
    git(clone, "config", f"url.{tmp_path / 'work-remote.git'}.insteadOf",
        f"https://localhost:{httpserver.port}/octo/fork.git")
    stop = threading.Event()

    def slow(request: Request) -> Response:
        stop.wait(CAP * 0.7)  # each answer alone is within the cap; both together are not
        return Response("[]", content_type="application/json")

    for name in (OWNER_NAME, "octo/fork"):
        httpserver.expect_request(f"{PREFIX}/repos/{name}/releases").respond_with_handler(slow)
    try:
        started = time.monotonic()
        releases = releases_of(take_snapshot([clone], charter_sha256=None), clone)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        settle(httpserver, 1)
    assert releases["available"] is False and "did not answer" in releases["reason"]
    assert elapsed < CAP + SLACK


def test_github_api_url_serves_only_remotes_on_its_own_host(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"GITHUB_API_URL": "https://ghe.example.com/api/v3"}
    assert api_base_for("github.com", env) == DEFAULT_API_URL
    assert api_base_for("ghe.example.com", env) == "https://ghe.example.com/api/v3"
    # A github.com remote with $GITHUB_API_URL pointing at the test server: the test server is
    # never asked. (github.com's API is made unreachable through a dead proxy: no network.)
    clone, bare = make_repo_with_remote(tmp_path)
    url = "https://github.com/octo/widgets.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    monkeypatch.setenv("GITHUB_API_URL", httpserver.url_for(PREFIX).rstrip("/"))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    httpserver.expect_request(f"{PREFIX}/repos/{OWNER_NAME}/releases").respond_with_json([])
    started = time.monotonic()
    releases = releases_of(take_snapshot([clone], charter_sha256=None), clone)
    assert time.monotonic() - started < CAP + SLACK
    assert releases["available"] is False and DEFAULT_API_URL in releases["reason"]
    assert httpserver.log == []


def test_an_enterprise_remote_reads_github_api_url(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = enterprise_clone(tmp_path, httpserver, monkeypatch)
    base = httpserver.url_for(PREFIX).rstrip("/")
    httpserver.expect_request(f"{PREFIX}/repos/{OWNER_NAME}/releases").respond_with_json(
        [gh_release(base, OWNER_NAME, 1, "v1.0.0")])
    releases = releases_of(take_snapshot([clone], charter_sha256=None), clone)
    assert releases["available"] is True and len(httpserver.log) == 1


def test_the_cap_is_configurable() -> None:
    assert github_cap({}) == 60
    assert github_cap({"LOOP_PI_GITHUB_TIMEOUT": "5"}) == 5
    assert github_cap({"LOOP_PI_GITHUB_TIMEOUT": "nonsense"}) == 60


def test_library_log_lines_go_to_the_structured_log_not_stderr(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    # An Enterprise API nobody listens on: urllib3 warns as it retries the connection.
    url = "https://127.0.0.1/octo/widgets.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(clone), "--run-dir", str(run_dir), env=env_with(
        GITHUB_API_URL="http://127.0.0.1:9/api/v3", GITHUB_TOKEN="t",
        LOOP_PI_GITHUB_TIMEOUT="30", GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig-global"),
        GIT_CONFIG_NOSYSTEM="1"))
    assert done.returncode == 1
    assert "Retrying" not in done.stderr and "urllib3" not in done.stderr
    assert "cannot reach GitHub" in done.stderr
    lines = [json.loads(line) for line in (run_dir / "audit-log.jsonl").read_text().splitlines()]
    retried = [line for line in lines if line["event"] == "library.urllib3"]
    assert retried and "Retrying" in retried[0]["message"]
    assert all({"run_id", "machine", "timestamp", "level"} <= set(line) for line in lines)
