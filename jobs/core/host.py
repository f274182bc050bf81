"""Facts about this machine and its user: the host name, the platform, and where state lives."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def default_machine() -> str:
    """The host name, without the `.local` macOS adds on a network without DNS names.

    `os.uname().nodename` is what `socket.gethostname()` returns on Linux and macOS (both read
    the kernel's host name), without importing socket into every command."""
    name = os.uname().nodename.strip().removesuffix(".local")
    return name or "localhost"


def is_macos() -> bool:
    return sys.platform == "darwin"


def home_dir(env: Mapping[str, str]) -> Path:
    """$HOME as `env` has it (a scheduled job's environment may differ from this process's)."""
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def default_state_dir(env: Mapping[str, str]) -> Path:
    if is_macos():
        return home_dir(env) / "Library" / "Application Support" / "loop-jobs"
    base = env.get("XDG_STATE_HOME") or str(home_dir(env) / ".local" / "state")
    return Path(base) / "loop-jobs"


def default_log_file(env: Mapping[str, str], state_dir: Path) -> Path:
    if is_macos():
        return home_dir(env) / "Library" / "Logs" / "loop-jobs" / "loop-jobs.jsonl"
    return state_dir / "loop-jobs.jsonl"
