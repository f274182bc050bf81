"""Shared helpers for the Backlog.md tests: CLI-shaped task text and small repositories on disk."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

CONFIG_YML = """project_name: "X"
default_status: "To Do"
statuses: ["To Do", "In Progress", "Done"]
labels: []
date_format: yyyy-mm-dd
max_column_width: 20
auto_open_browser: true
default_port: 6420
remote_operations: true
auto_commit: false
filesystem_only: false
bypass_git_hooks: false
check_active_branches: true
active_branch_days: 30
task_prefix: "task"
"""

# Exactly what `backlog task create` + `task edit -s Done --add-label ... --notes ...` writes.
CLI_TASK = """---
id: TASK-1
title: Rotate disk alerts
status: Done
assignee: []
created_date: '2026-11-30 01:01'
updated_date: '2026-11-30 01:01'
labels:
  - 'verify:2026-11-01'
  - infra
dependencies: []
ordinal: 1000
---

## Description

<!-- SECTION:DESCRIPTION:BEGIN -->
Tune the disk alert thresholds.
<!-- SECTION:DESCRIPTION:END -->

## Acceptance Criteria
<!-- AC:BEGIN -->
- [ ] #1 Alert fires at 90%
<!-- AC:END -->

## Implementation Notes

<!-- SECTION:NOTES:BEGIN -->
verify-cmd: just verify-disk
<!-- SECTION:NOTES:END -->
"""


def make_backlog(root: Path, tasks: dict[str, str | bytes], config: str = CONFIG_YML) -> Path:
    """A backlog/ folder under `root` with the given files (paths relative to backlog/)."""
    backlog = root / "backlog"
    (backlog / "tasks").mkdir(parents=True, exist_ok=True)
    (backlog / "config.yml").write_text(config)
    for rel, content in tasks.items():
        path = backlog / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def backlog_cli() -> str | None:
    """Path of the `backlog` CLI; a test that needs it fails (not skips) when it is missing,
    unless LOOP_JOBS_NO_BACKLOG_CLI=1 says this machine has none on purpose."""
    found = shutil.which("backlog")
    if found:
        return found
    if os.environ.get("LOOP_JOBS_NO_BACKLOG_CLI") == "1":
        pytest.skip("backlog CLI not installed and LOOP_JOBS_NO_BACKLOG_CLI=1")
    pytest.fail("the backlog CLI is not on PATH (run through `make test`, or set "
                "LOOP_JOBS_NO_BACKLOG_CLI=1 to skip the interop tests)")


def run_cli(cwd: Path, args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    cli = backlog_cli()
    assert cli is not None
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("BACKLOG_CWD", None)
    proc = subprocess.run(
        [cli, *args], cwd=cwd, capture_output=True, text=True, env=env,
        stdin=subprocess.DEVNULL, timeout=120, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"backlog {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout
