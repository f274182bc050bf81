"""loop-verify against careless repositories: hooks and recipes that do what a project's own code
may do by mistake. Real repositories with bare remotes, real `just`, real hooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from verify_helpers import VerifyRepo, make_verify_repo

TODAY = ("--today", "2026-11-30")


def hook(repo: VerifyRepo, name: str, body: str) -> Path:
    path = repo.root / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


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
