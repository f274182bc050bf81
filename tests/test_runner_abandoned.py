"""A loop-verify killed with SIGKILL cannot sweep its recipe; the next run kills what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_helpers import JUST, marker, processes_with, recipe, write_justfile

from jobs.runner import sweep_abandoned

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

OWNER = """
import sys
from pathlib import Path
from jobs.runner import run_recipe
root = Path(sys.argv[1])
run_recipe(root, root / "justfile", "verify-hang", timeout=300, kill_grace=1,
           output_path=root / "out.log", just=sys.argv[2])
"""


def wait_for(predicate, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_recipes_of_a_killed_run_are_swept_by_the_next(tmp_path: Path) -> None:
    tag = marker()
    write_justfile(tmp_path, recipe("verify-hang", f"setsid sleep {tag} &", f"sleep {tag}"))
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path), JUST],
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    try:
        # The recipe's shell, its sleep, and a `setsid` sleep that left the group.
        assert wait_for(lambda: len(processes_with(tag)) == 3), processes_with(tag)
        time.sleep(0.2)
        running = processes_with(tag)
        # A live owner's recipe is not abandoned: nothing may be touched.
        assert sweep_abandoned() == 0
        assert processes_with(tag) == running
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert processes_with(tag) == running  # nobody cleaned up after the killed owner
        assert sweep_abandoned() >= len(running)
        assert wait_for(lambda: not processes_with(tag)), processes_with(tag)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for pid in processes_with(tag):
            os.kill(pid, signal.SIGKILL)
