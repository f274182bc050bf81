"""A stop signal at any point of `run` (SPEC: exit codes of `run`; "interrupted ... at any
point"): also while the program is still starting, before `run` has set its own handlers, and
after they are gone, while the process winds down. A real process, which signals itself at
exactly that point: no timing, no wall clock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from verify_helpers import make_verify_repo

# The console script's `entry()`, with `jobs.commands.run.main` wrapped so that the process
# signals itself just before `run` starts (`before`) or just after it returned (`after`).
SCRIPT = """
import os, signal, sys, time
from jobs import main as program
from jobs.commands import run

when, signum = sys.argv[1], int(sys.argv[2])
inner = run.main

def wrapped(**options):
    if when == "before":
        os.kill(os.getpid(), signum)
    code = inner(**options)
    if when == "after":
        os.kill(os.getpid(), signum)
        time.sleep(0.2)  # the signal arrives while the process winds down
    return code

run.main = wrapped
sys.argv = ["loop-verify", *sys.argv[3:]]
program.entry()
"""

STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _run(tmp_path: Path, when: str, signum: int) -> subprocess.CompletedProcess[str]:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, when, str(int(signum)), "run", "--config",
         str(repo.config_path), "--today", "2026-11-30"],
        cwd=repo.root, capture_output=True, text=True, timeout=120, env=env, check=False,
        # Ctrl-C's SIGINT as a terminal's foreground job gets it, not ignored as in `cmd &`.
        restore_signals=True)


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_a_stop_before_run_set_its_handlers_is_an_interrupted_run(tmp_path: Path,
                                                                  signum: int) -> None:
    done = _run(tmp_path, "before", signum)
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:3] for line in lines[:2]] == [["interrupted", "app", "TASK-1"],
                                                        ["interrupted", "app", "TASK-2"]]


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_a_stop_after_the_run_keeps_its_exit_code(tmp_path: Path, signum: int) -> None:
    done = _run(tmp_path, "after", signum)
    # Both tasks passed and were committed: the run's own exit code, not death by the signal.
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1].startswith("2 passed in ")
