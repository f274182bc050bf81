"""`git` and `just` are started from PATH's absolute folders only: a relative entry never starts
the repository's own program."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_relative_path_entry_never_starts_the_repositorys_own_git_or_just(
        tmp_path: Path, dry_run: bool) -> None:
    # PATH=":/usr/bin..." (a stray colon: `PATH=$EXTRA:$PATH` with EXTRA empty) makes the
    # working directory the first place to look, and git and just are started in the
    # repository: its own executable `git` or `just` ran instead, even for `run --dry-run`.
    real_git, real_just = shutil.which("git"), shutil.which("just")
    assert real_git and real_just
    marker = tmp_path / "impostor-ran"
    repo = make_verify_repo(tmp_path / "base", tasks=[1])
    for name, real in (("git", real_git), ("just", real_just)):
        impostor = repo.root / name
        impostor.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexec '{real}' \"$@\"\n")
        impostor.chmod(0o755)
    repo.commit_all()

    env = {"PATH": ":" + os.environ["PATH"]}
    done = repo.run("run", *TODAY, *(("--dry-run",) if dry_run else ()), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()
    if not dry_run:
        assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
