"""Shared test setup: a git identity, and the project's own `just` and `backlog` first on PATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
_TOOL_DIRS = [ROOT / ".venv" / "bin", ROOT / ".npm-prefix" / "node_modules" / ".bin"]
os.environ["PATH"] = os.pathsep.join(
    [str(d) for d in _TOOL_DIRS if d.is_dir()] + [os.environ.get("PATH", "")])


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # Commits in tests must work on a machine with no global git configuration.
    for var, value in {
        "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    }.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("LOOP_JOBS_CONFIG", raising=False)
    monkeypatch.delenv("LOOP_PI_RUN_DIR", raising=False)
