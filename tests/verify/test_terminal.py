"""What a person sees: the live elapsed-time line on a terminal, and `doctor`'s checks."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from verify_helpers import ROOT, make_verify_repo


def test_live_elapsed_line_on_a_terminal(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile="verify-wait:\n    sleep 2.5\n")
    repo.add_task(1, notes="verify-cmd: just verify-wait")
    repo.commit_all("task")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs.main", "run", "--config", str(repo.config_path),
         "--today", "2026-11-30"],
        cwd=repo.root, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out, _ = proc.communicate(timeout=30)
    os.close(leader)
    assert proc.returncode == 0
    text = seen.decode(errors="replace")
    # The live line names the repository, the task and its limit.
    assert "running app TASK-1 just verify-wait (limit 10s)  1s" in text, text
    assert "running app TASK-1 just verify-wait (limit 10s)  2s" in text, text
    # The result line goes to stdout, which is not a terminal here: no control codes in it.
    assert out.decode().startswith("pass     app TASK-1  just verify-wait")
    assert out.decode().splitlines()[-1].startswith("1 passed in ")
    assert "\r" not in out.decode()


def test_no_live_line_without_a_terminal(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.commit_all("task")
    proc = repo.run("run", "--today", "2026-11-30")
    assert proc.returncode == 0 and "running" not in proc.stderr and proc.stderr == ""


def test_doctor_reports_what_to_fix(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_RUNTIME_DIR": str(tmp_path / "runtime")}
    ok = repo.run("doctor", env=env)
    assert "ok   just:" in ok.stdout and "ok   git:" in ok.stdout
    assert f"ok   repo {repo.root}: clean on main, backlog found" in ok.stdout
    # Nothing schedules the job yet: doctor says so and how to fix it.
    assert ok.returncode == 1 and "loop-verify install" in ok.stdout

    (repo.root / "stray.txt").write_text("x")
    dirty = repo.run("doctor", env=env)
    assert dirty.returncode == 1
    assert f"FAIL repo {repo.root}: 1 uncommitted change(s)" in dirty.stdout
    assert "fix: commit or stash them" in dirty.stdout

    bad = tmp_path / "bad.yaml"
    bad.write_text("timeout: never\n")
    broken = repo.run("doctor", "--config", str(bad), env=env)
    assert broken.returncode == 2 and "timeout" in broken.stderr
