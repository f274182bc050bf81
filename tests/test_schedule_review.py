"""Review of the scheduling part: hostile cases found by trying `serve`, `install` and `doctor` by
hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def serve_once(config: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`loop-verify serve` as a real process; on a state it cannot use it must stop at once."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "jobs.main", "serve", "--config", str(config)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30,
                          check=False)


def write_config(base: Path, state_dir: Path) -> Path:
    path = base / "config.yaml"
    path.write_text(json.dumps({"state_dir": str(state_dir),
                                "log_file": str(base / "log" / "loop-jobs.jsonl")}))
    return path


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
    done = serve_once(write_config(tmp_path, state), tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loop-verify: ")
    assert str(state) in lines[0]
    if damage == "garbage job store":
        assert (state / "scheduler.db").read_text() == "garbage, not SQLite\n"  # left for the user
