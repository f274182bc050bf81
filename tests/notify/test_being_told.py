"""Being told without a terminal: the heartbeat's pings in Healthchecks' protocol and the notify:
message through Apprise, against real HTTP servers on loopback (one that answers in the shape
of the service, one that errors, one that never answers)."""

from __future__ import annotations

import base64
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from pytest_httpserver import HTTPServer
from verify_helpers import VerifyRepo, make_verify_repo
from werkzeug import Request, Response

from jobs.notify import bounded, deliveries, heartbeat

TODAY = ("--today", "2026-11-30")
CHECK = "/ping/0f3c6a1e-5b7d-4a39-9c11-2f6f0d7e8a90"


class Recorder:
    """What a server was sent: (method, path, body), in order."""

    def __init__(self, server: HTTPServer, *, status: int = 200,
                 failing: tuple[str, ...] = ()) -> None:
        self.seen: list[tuple[str, str, bytes]] = []
        self.status, self.failing = status, failing
        server.expect_request(re.compile(".*")).respond_with_handler(self.handle)

    def handle(self, request: Request) -> Response:
        self.seen.append((request.method, request.path, request.get_data()))
        if self.status != 200 or any(request.path.endswith(f) for f in self.failing):
            return Response("nope", status=500)
        return Response("OK", status=200)

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.seen]


@pytest.fixture
def silent() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def told_repo(tmp_path: Path, *, notify: list[str] | None = None,
              heartbeat_url: str | None = None, recipe: str = "verify-bad") -> VerifyRepo:
    extra: dict[str, Any] = {"machine": "studio"}
    if notify:
        extra["notify"] = notify
    if heartbeat_url:
        extra["heartbeat"] = heartbeat_url
    repo = make_verify_repo(tmp_path, extra_config=extra)
    repo.add_task(1, notes=f"verify-cmd: just {recipe}")
    repo.add_task(2, notes="verify-cmd: just verify-ok")
    repo.commit_all("tasks")
    return repo


def events(repo: VerifyRepo, name: str) -> list[dict[str, Any]]:
    return [e for e in repo.log_events() if e.get("event") == name]


def test_the_heartbeat_is_pinged_at_start_and_with_the_exit_code(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    server = Recorder(httpserver)
    repo = told_repo(tmp_path, heartbeat_url=httpserver.url_for(CHECK))
    done = repo.run("run", *TODAY)
    assert done.returncode == 1, done.stderr
    assert server.paths() == [f"{CHECK}/start", f"{CHECK}/1"]
    # The end ping carries the closing line, shown in the check's log.
    assert server.seen[1][2].decode().startswith("1 passed, 1 failed in ")
    assert [e["ping"] for e in events(repo, "heartbeat.sent")] == ["start", "1"]
    # A passing morning pings 0; a dry run pings nothing.
    repo.git("checkout", "-q", "--", ".")
    dry = repo.run("run", *TODAY, "--dry-run")
    assert dry.returncode == 0 and len(server.seen) == 2


def test_the_end_ping_is_sent_when_the_start_ping_failed(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    server = Recorder(httpserver, failing=("/start",))
    repo = told_repo(tmp_path, heartbeat_url=httpserver.url_for(CHECK), recipe="verify-ok")
    done = repo.run("run", *TODAY)
    # The failed ping changes neither the verdicts nor the exit code.
    assert done.returncode == 0, done.stderr
    assert server.paths() == [f"{CHECK}/start", f"{CHECK}/0"]
    [failed] = events(repo, "heartbeat.failed")
    assert failed["ping"] == "start" and "HTTP 500" in failed["reason"]
    assert failed["level"] == "error"
    # The last ping went through: doctor has nothing to say about the heartbeat.
    doctor = repo.run("doctor")
    assert "heartbeat" not in doctor.stdout.replace("ok   heartbeat", "")


def test_a_failed_run_sends_one_message_through_apprise_json(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    server = Recorder(httpserver)
    target = f"json://localhost:{httpserver.port}/hook"
    repo = told_repo(tmp_path, notify=[target])
    done = repo.run("run", *TODAY)
    assert done.returncode == 1, done.stderr
    [(method, path, raw)] = server.seen
    assert (method, path) == ("POST", "/hook")
    message = json.loads(raw)
    assert message["title"] == "loop-verify on studio: 1 failed"
    assert message["type"] == "failure"
    lines = message["message"].splitlines()
    assert lines[0].startswith("fail     app TASK-1  just verify-bad") and "exited 3" in lines[0]
    assert not any(line.startswith("pass") for line in lines)
    assert lines[-1] == (f"review: loop-verify review --config {repo.config_path} "
                         "--since 2026-11-30 --machine studio")
    assert [e["title"] for e in events(repo, "notify.sent")] == [message["title"]]


def test_a_passing_run_sends_no_message_and_form_targets_work_too(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    server = Recorder(httpserver)
    repo = told_repo(tmp_path, notify=[f"form://localhost:{httpserver.port}/form"],
                     recipe="verify-ok")
    assert repo.run("run", *TODAY).returncode == 0
    assert server.seen == []
    # A run that could not check something (exit 3) is told as a warning.
    (repo.root / "dirty.txt").write_text("x")
    repo.add_task(3, labels=("verify:2026-11-02",))
    repo.git("add", "backlog")
    repo.git("commit", "-q", "-m", "task 3")
    done = repo.run("run", *TODAY)
    assert done.returncode == 3, done.stdout + done.stderr
    [(_, path, raw)] = server.seen
    form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
    assert path == "/form" and form["type"] == "warning"
    assert form["title"] == "loop-verify on studio: 1 could not be checked"
    assert "skipped  app" in form["message"]


def test_a_pass_whose_commit_was_refused_is_named_in_the_message(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    # The title counts it as not checked: the body must say which task and why.
    server = Recorder(httpserver)
    repo = told_repo(tmp_path, notify=[f"json://localhost:{httpserver.port}/hook"],
                     recipe="verify-ok")
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by policy >&2\nexit 1\n")
    hook.chmod(0o755)
    done = repo.run("run", *TODAY)
    assert done.returncode == 3, done.stdout + done.stderr
    [(_, _, raw)] = server.seen
    message = json.loads(raw)
    assert message["title"] == "loop-verify on studio: 2 could not be checked"
    lines = message["message"].splitlines()
    assert [line.split()[2] for line in lines[:-2]] == ["TASK-1", "TASK-2"], lines
    assert all("refused by policy" in line for line in lines[:-2]), lines


def test_undelivered_messages_and_pings_are_logged_bounded_and_failed_by_doctor(
        tmp_path: Path, httpserver: HTTPServer, silent: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "CALL_LIMIT", 0.5)
    httpserver.expect_request("/hook").respond_with_data("broken", status=500)
    repo = told_repo(tmp_path, heartbeat_url=f"http://127.0.0.1:{silent}{CHECK}",
                     notify=[f"json://localhost:{httpserver.port}/hook"])
    done = repo.run("run", *TODAY)
    # Both pings went to a server that never answers, each given up on at the bound.
    assert done.returncode == 1, done.stderr
    assert [e["ping"] for e in events(repo, "heartbeat.failed")] == ["start", "1"]
    [failed] = events(repo, "notify.failed")
    assert failed["level"] == "error" and failed["target"] == "notify[1] json://…"
    doctor = repo.run("doctor")
    assert doctor.returncode == 1
    assert "FAIL heartbeat: the last ping (1) to http://127.0.0.1/… could not be delivered" \
        in doctor.stdout, doctor.stdout
    assert "FAIL notify: the last message to notify[1] json://… could not be delivered" \
        in doctor.stdout, doctor.stdout

    # A later delivery that succeeds clears the failure.
    httpserver.clear()
    Recorder(httpserver)
    fixed = repo.config_path.read_text().replace(f"http://127.0.0.1:{silent}",
                                                 f"http://127.0.0.1:{httpserver.port}")
    repo.config_path.write_text(fixed)
    repo.git("checkout", "-q", "--", ".")
    repo.add_task(4, notes="verify-cmd: just verify-bad", labels=("verify:2026-11-03",))
    repo.commit_all("task 4")
    assert repo.run("run", *TODAY).returncode == 1
    doctor = repo.run("doctor")
    assert "FAIL heartbeat" not in doctor.stdout and "FAIL notify" not in doctor.stdout


def test_what_apprise_logs_while_delivering_carries_the_runs_own_run_id(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    """SPEC: `run_id` on every line. Apprise logs from the delivery thread (its "Notifying 1
    service(s)." and why the message was not taken): those lines must name the run that sent
    it, so a shipper's `run_id` query finds them beside the run's own `notify.failed`."""
    httpserver.expect_request("/hook").respond_with_data("broken", status=500)
    repo = told_repo(tmp_path, notify=[f"json://localhost:{httpserver.port}/hook"])
    assert repo.run("run", *TODAY).returncode == 1
    [finished] = events(repo, "run.finished")
    library = [e for e in repo.log_events() if e.get("event") == "library.apprise"]
    assert library, repo.log_events()
    assert {e["run_id"] for e in library} == {finished["run_id"]}


def test_doctor_fails_on_a_notify_url_apprise_does_not_understand(tmp_path: Path) -> None:
    # Messages go out only after a failing morning: a URL no message can ever reach is said
    # before then, not found out when the first failure goes untold.
    repo = told_repo(tmp_path, notify=["ntfy://ntfy.sh/my-loops", "nosuchservice://host/x"])
    doctor = repo.run("doctor")
    assert doctor.returncode == 1
    assert "FAIL notify: notify[2] nosuchservice://…: Apprise does not understand this URL" \
        in doctor.stdout, doctor.stdout
    assert "notify[1]" not in doctor.stdout, doctor.stdout


def test_the_review_command_in_a_message_can_be_pasted_into_a_shell(tmp_path: Path) -> None:
    import shlex

    from jobs.config.load import load_config
    from jobs.verify import tell

    folder = tmp_path / "My Config"
    folder.mkdir()
    cfg = folder / "config.yaml"
    cfg.write_text("machine: Studio Mac\n")
    command = tell.review_command(load_config(cfg, env={}), "2026-11-30")
    assert shlex.split(command) == ["loop-verify", "review", "--config", str(cfg),
                                    "--since", "2026-11-30", "--machine", "Studio Mac"]


def test_each_call_is_bounded(silent: int) -> None:
    begun = time.monotonic()
    problem = heartbeat.ping(f"http://127.0.0.1:{silent}/x", "start", limit=0.3)
    # Far below what an unbounded wait would take (the server never answers at all).
    assert time.monotonic() - begun < 5
    assert problem is not None
    assert bounded.CALL_LIMIT == 10.0
    assert bounded.within(0.2, lambda: time.sleep(5) or None) == "no answer within 0.2s"


def test_ping_urls_follow_the_healthchecks_protocol() -> None:
    assert heartbeat.ping_url("https://hc-ping.com/abc", "start") == "https://hc-ping.com/abc/start"
    assert heartbeat.ping_url("https://hc.example/ping/k/slug/", "3") == \
        "https://hc.example/ping/k/slug/3"
    assert heartbeat.ping_url("https://hc-ping.com/abc?create=1", "0") == \
        "https://hc-ping.com/abc/0?create=1"


def test_a_heartbeat_url_with_credentials_pings_with_basic_auth(httpserver: HTTPServer) -> None:
    # A self-hosted ping endpoint behind a password: urllib takes `user:pw@` as part of the host
    # name, so every ping failed ("Name or service not known") and the owner was never warned.
    seen: list[tuple[str, str | None, str]] = []

    def handle(request: Request) -> Response:
        seen.append((request.path, request.headers.get("Authorization"), request.host))
        return Response("OK", status=200)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handle)
    url = httpserver.url_for(CHECK).replace("http://", "http://ops:p%40ss%3Aword@")
    assert heartbeat.ping(url, "start") is None
    [(path, auth, host)] = seen
    assert path == f"{CHECK}/start" and "@" not in host
    assert auth == "Basic " + base64.b64encode(b"ops:p@ss:word").decode()


def test_shown_targets_keep_no_secret() -> None:
    assert deliveries.shown_target("tgram://123456:SECRET/789", "notify") == "tgram://…"
    assert deliveries.shown_target("https://hc-ping.com/uuid", "heartbeat") == \
        "https://hc-ping.com/…"


def test_a_run_cut_short_by_a_fault_still_pings_its_end(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    server = Recorder(httpserver)
    repo = told_repo(tmp_path, heartbeat_url=httpserver.url_for(CHECK))
    # A ledger whose driver is not installed: the run stops with exit 2 before any task.
    data = repo.config_path.read_text() + "ledger: postgresql+nosuchdriver://u@h/db\n"
    repo.config_path.write_text(data)
    done = repo.run("run", *TODAY)
    assert done.returncode == 2, done.stderr
    assert "database driver is not installed" in done.stderr
    assert server.paths() == [f"{CHECK}/start", f"{CHECK}/2"]
