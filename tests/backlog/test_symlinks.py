"""Symbolic links in a repository's backlog: a config.yml that links out of the repository is not
read, and a task file that is a link is an error, never replaced by a file of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


@pytest.mark.parametrize("target", ["/dev/zero", "../../outside.yml"])
def test_a_backlog_config_that_links_out_of_the_repository_is_not_read(
        tmp_path: Path, target: str) -> None:
    # Git keeps symbolic links: a repository whose backlog/config.yml links to /dev/zero made
    # `list` and `run` read it until memory ran out (task files were already refused so).
    repo = make_verify_repo(tmp_path, tasks=[1])
    (tmp_path / "outside.yml").write_text("statuses: [A, Done]\n")
    config = repo.root / "backlog" / "config.yml"
    config.unlink()
    config.symlink_to(target)
    repo.commit_all()
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()
    reason = f"{config}: symbolic link to outside the repository"

    done = subprocess.run(["sh", "-c", 'ulimit -v 1000000; exec "$@"', "sh", sys.executable,
                           "-m", "jobs.main", "list", "--config", str(repo.config_path), *TODAY],
                          capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert f"unreadable {reason}" in done.stdout, done.stdout + done.stderr
    done = repo.run("run", *TODAY)
    assert done.returncode == 3 and f"skipped  app: {reason}" in done.stdout, done.stdout
    assert task.read_bytes() == before and repo.head() == head


def test_a_symlinked_task_file_is_an_error_not_replaced(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    real = repo.add_task(1, folder="docs")
    link = repo.root / "backlog" / "tasks" / real.name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path("..") / "docs" / real.name)
    repo.commit_all()
    before, head = real.read_bytes(), repo.head()
    proc = repo.run("run", "--today", "2026-11-30")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("error    app TASK-1")
    assert "symbolic link" in proc.stdout
    assert link.is_symlink() and real.read_bytes() == before
    assert repo.head() == head and repo.status() == ""
