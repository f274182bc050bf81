"""`loop-verify serve` end to end: a real verification at its scheduled time, a second daemon
refused, and SIGTERM in the middle of a recipe."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.triggers.cron import CronTrigger
from project import ROOT
from scheduler_helpers import InProcessServe, config_file, log_events, seed_store, wait_for
from verify_helpers import VerifyRepo, make_verify_repo

from jobs.config.load import load_config
from jobs.core.logs import configure_logging
from jobs.schedule.jobstore import stored_next_run
from jobs.schedule.serve import run_daily_verification


@pytest.fixture
def reset_logging() -> Iterator[None]:
    yield
    logging.getLogger().handlers.clear()


def test_daemon_runs_a_real_verification_at_its_scheduled_time(
        tmp_path: Path, reset_logging: None) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    task = next((repo.root / "backlog" / "tasks").glob("task-1 *.md"))
    config = load_config(repo.config_path)
    configure_logging(config.log_file, console=False)
    fire_at = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0) \
        + timedelta(seconds=1)
    trigger = CronTrigger(hour=fire_at.hour, minute=fire_at.minute, second=fire_at.second,
                          timezone=UTC)
    with InProcessServe(config, trigger=trigger):
        assert "verify:2026-11-01" in task.read_text()
        assert wait_for(lambda: bool(log_events(config.log_file, "scheduler.run_finished")),
                        timeout=20)
    [finished] = log_events(config.log_file, "scheduler.run_finished")
    assert finished["exit_code"] == 0
    [started] = log_events(config.log_file, "scheduler.run_started")
    assert datetime.fromisoformat(started["timestamp"]) >= fire_at
    assert "verify:2026-11-01" not in task.read_text()
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert [a["verdict"] for a in repo.history()] == ["pass"]


# A background sleep and the recipe's own shell (which then sleeps): a tree of two processes.
SLEEPY = """verify-sleepy:
    sleep 300 & echo $! >> '{pids}'; echo $$ >> '{pids}'; sleep 300
"""


def _serve(repo: VerifyRepo) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.main", "serve", "--config", str(repo.config_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=repo.root)


def _cleanup(daemon: subprocess.Popen[str], pids_file: Path | None = None) -> None:
    """After a failed assertion: stop the daemon and anything its recipe left, never orphans."""
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    if pids_file is not None and pids_file.exists():
        for pid in (int(p) for p in pids_file.read_text().split()):
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_during_a_recipe_stops_its_tree_and_records_interrupted(
        tmp_path: Path, signum: signal.Signals) -> None:
    # SIGHUP is the terminal `serve` was started from being closed.
    pids_file = tmp_path / "pids"
    repo = make_verify_repo(tmp_path, justfile=SLEEPY.format(pids=pids_file),
                            timeout="5m", extra_config={"kill_grace": "2s"})
    task = repo.add_task(1, notes="verify-cmd: just verify-sleepy")
    repo.commit_all("task 1")
    task_bytes, head = task.read_bytes(), repo.head()
    config = load_config(repo.config_path)
    # The machine was off at 07:30 an hour ago: the daemon catches the run up at start-up.
    seed_store(config, datetime.now(UTC) - timedelta(hours=1), job=run_daily_verification)

    daemon = _serve(repo)
    try:
        assert wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2,
                        timeout=20), daemon.stderr.read() if daemon.poll() is not None else ""
        pids = [int(p) for p in pids_file.read_text().split()]
        assert not any(_gone(p) for p in pids)

        if signum == signal.SIGTERM:
            second = _serve(repo)
            out, err = second.communicate(timeout=20)
            assert second.returncode == 3, err
            assert "already running" in err and str(config.state_dir) in err
            assert f"pid {daemon.pid}" in err

        daemon.send_signal(signum)
        out, err = daemon.communicate(timeout=20)
        # Before the clean-up below, which would kill what the daemon left behind.
        outlived = [p for p in pids if not _gone(p)]
    finally:
        _cleanup(daemon, pids_file)
    assert outlived == []
    assert daemon.returncode == 0, err
    assert "stopped" in out
    # No task edited half-way, nothing committed, and the attempt is on record as interrupted.
    assert task.read_bytes() == task_bytes
    assert repo.head() == head
    assert repo.status() == ""
    [attempt] = repo.history()
    assert attempt["verdict"] == "interrupted" and attempt["task_id"] == "TASK-1"
    events = [e["event"] for e in repo.log_events()]
    assert "verify.interrupted" in events
    assert events.index("scheduler.stopping") < events.index("scheduler.stopped")
    # The interrupted run was the caught-up one; tomorrow's stays scheduled.
    next_run = stored_next_run(config.state_dir)
    assert next_run is not None and next_run > datetime.now(UTC)


def _stop(daemon: subprocess.Popen[str]) -> str:
    daemon.send_signal(signal.SIGTERM)
    try:
        out, err = daemon.communicate(timeout=20)
    finally:
        _cleanup(daemon)
    assert daemon.returncode == 0, err
    return out


def test_real_serve_catches_up_a_missed_run_exactly_once(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = load_config(repo.config_path)
    seed_store(config, datetime.now(UTC) - timedelta(hours=5), job=run_daily_verification)

    def events(name: str) -> list[dict[str, object]]:
        return [e for e in repo.log_events() if e["event"] == name]

    daemon = _serve(repo)
    try:
        assert wait_for(lambda: bool(events("scheduler.run_finished")), timeout=20)
    finally:
        out = _stop(daemon)
    assert "next run" in out
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"

    # Started again the same day: the missed run is not run a second time.
    daemon = _serve(repo)
    try:
        assert wait_for(lambda: len(events("scheduler.next_run")) >= 3, timeout=20)
        time.sleep(1.0)  # time for a wrongly due run to be submitted
    finally:
        _stop(daemon)
    assert len(events("scheduler.run_started")) == 1
    assert [a["verdict"] for a in repo.history()] == ["pass"]
    assert len([s for s in repo.subjects() if s.startswith("loop-verify:")]) == 1


REPO_ROOT = ROOT


def serve_once(config: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`loop-verify serve` as a real process; on a state it cannot use it must stop at once."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "jobs.main", "serve", "--config", str(config)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30,
                          check=False)


@pytest.mark.parametrize("damage", ["garbage job store", "job store is a folder",
                                    "state_dir is a file", "lock is a folder"])
def test_serve_on_an_unusable_state_dir_is_one_line_exit_3(tmp_path: Path, damage: str) -> None:
    state = tmp_path / "state dir"
    if damage == "state_dir is a file":
        state.write_text("not a folder\n")
    else:
        state.mkdir()
    if damage == "garbage job store":
        (state / "scheduler.db").write_text("garbage, not SQLite\n")
    elif damage == "job store is a folder":
        (state / "scheduler.db").mkdir()
    elif damage == "lock is a folder":
        (state / "serve.lock").mkdir()
    done = serve_once(config_file(tmp_path, state), tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loop-verify: ")
    assert str(state) in lines[0]
    if damage == "garbage job store":
        assert (state / "scheduler.db").read_text() == "garbage, not SQLite\n"  # left for the user


@pytest.mark.parametrize("tz", ["UTC0", ":/etc/localtime", "No/Such_Zone"])
def test_serve_without_timezone_starts_under_any_tz_variable(tmp_path: Path, tz: str) -> None:
    # A POSIX $TZ or an unknown name made tzlocal raise; `:/etc/localtime` gave a zone the job
    # store could not pickle. Either way `serve` died with a traceback before scheduling anything.
    config = config_file(tmp_path, tmp_path / "state")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "TZ": tz}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "jobs.main", "serve", "--config", str(config)], cwd=REPO_ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        first = daemon.stdout.readline()
        daemon.send_signal(signal.SIGTERM)
        out, err = daemon.communicate(timeout=30)
        assert first.startswith("loop-verify serve: daily at 07:30"), (first, out, err)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0, err
    assert "Traceback" not in err
    assert "stopped" in out
