"""The SQLite ledger syncs only what crash recovery needs (issue 13 item 3): counted with strace
on a real `loop-verify run`, not assumed from the pragmas."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import system
from verify_helpers import ROOT, make_verify_repo

STRACE = shutil.which("strace")


def test_one_ledger_fsync_per_task_plus_the_closing_checkpoint(tmp_path: Path) -> None:
    if STRACE is None:
        system.missing("strace", system.install_command("strace"))
    tasks = 6
    repo = make_verify_repo(tmp_path)
    for n in range(1, tasks + 1):
        repo.add_task(n, labels=("verify:2026-11-30",))
    repo.commit_all("tasks due on the 30th")
    # A first run creates the ledger (schema, WAL switch): not what is measured.
    assert repo.run("run", "--today", "2026-11-29").returncode == 0
    trace = tmp_path / "trace"
    assert STRACE is not None
    proc = subprocess.run(
        [STRACE, "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(trace),
         sys.executable, "-m", "jobs.main", "run", "--today", "2026-11-30",
         "--config", str(repo.config_path)],
        cwd=repo.root, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    if not trace.exists() or "Operation not permitted" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("pass ") == tasks
    synced = re.findall(r"<([^>]*ledger\.db[^>]*)>", trace.read_text())
    # One per task (its pending edit, synchronous=FULL), and three when the
    # last connection checkpoints (the WAL before and after, the database once); the rollback
    # journal is never used. (Before WAL: about eight per task.)
    assert len(synced) <= tasks + 3, synced
    assert not [p for p in synced if p.endswith("-journal")], synced
