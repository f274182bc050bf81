"""A state directory loop-verify cannot write to (its file system full) is the machine's fault:
the task is left as it was, never reopened."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from verify_helpers import make_verify_repo


def _mount_namespace_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


# Runs loop-verify with a small tmpfs mounted over state_dir, in a mount namespace of its own
# (so nothing is left mounted, whatever happens); FILL=1 fills it before the run.
_SMALL_STATE = """set -e
mount -t tmpfs -o size=2m tmpfs "$STATE"
if [ "$FILL" = 1 ]; then cat /dev/zero > "$STATE/fill" 2>/dev/null || true; fi
exec "$PYTHON" -m jobs.main run --config "$CONFIG" --today 2026-11-30
"""


@pytest.mark.skipif(not _mount_namespace_available(),
                    reason="needs unshare and a mount namespace of its own (tmpfs)")
@pytest.mark.parametrize("fill", [True, False])
def test_a_full_state_directory_never_reopens_a_task(tmp_path: Path, fill: bool) -> None:
    # With state_dir's file system full, `just` could not write the recipe's output (it exits
    # 101), nor could `head` in a chatty recipe on a nearly full one: each due task was
    # reopened as failed, the machine's fault written into every task.
    justfile = ("verify-ok:\n    echo all good\n\n"
                "verify-chatty:\n    head -c 4000000 /dev/zero | tr '\\0' x\n")
    state = tmp_path / "state"
    state.mkdir()
    repo = make_verify_repo(tmp_path, justfile=justfile, extra_config={
        "state_dir": str(state), "log_file": str(tmp_path / "log.jsonl"),
        "ledger": f"sqlite:///{tmp_path / 'ledger.db'}"})
    repo.add_task(1, notes="verify-cmd: just verify-ok" if fill
                  else "verify-cmd: just verify-chatty")
    repo.commit_all()
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    env = dict(os.environ, STATE=str(state), FILL="1" if fill else "0", PYTHON=sys.executable,
               CONFIG=str(repo.config_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(["unshare", "-rm", "sh", "-c", _SMALL_STATE], cwd=repo.root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("error    app TASK-1"), done.stdout
    assert ("its file system is full" in done.stdout), done.stdout
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""
