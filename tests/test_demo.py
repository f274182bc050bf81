"""`make demo` is half of the README's quick start: it must pass from start to end, on this
code, and change nothing outside its scratch folder (no ledger under ~/.local/state)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT


@pytest.mark.slow
def test_the_demo_runs_to_its_end_and_writes_nothing_outside_its_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "demo-run"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "LOOP_JOBS_", "LOOP_PI_"))}
    # git reads the identity the demo sets in its environment; HOME is empty so that anything
    # written there (a default ledger, a state folder) shows.
    env.update(HOME=str(home), LOOP_JOBS_DEMO_DIR=str(scratch), NO_COLOR="1")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "── done" in done.stdout
    assert "TAMPERED" not in done.stdout
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert (scratch / "review.html").is_file()
