"""The summary a failure writes into its task, end to end: the same shape when `just` itself
refuses the justfile, and the recipe's full output named by an absolute path (a file of its own
per repository). The summary's rules on plain data (its shape, its limits, no character a
terminal would act on): tests/verify/rules/test_transition.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import inprocess
import yaml
from inprocess import FORCE_SUBPROCESS
from project import ROOT
from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


def loop_verify(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`loop-verify ARGS` started from `cwd` (in this process unless LOOP_JOBS_TEST_SUBPROCESS)."""
    if not FORCE_SUBPROCESS:
        return inprocess.loop_verify(args, cwd=cwd, env=dict(os.environ))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "jobs.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_justfile_error_keeps_the_summary_shape(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile="verify-ok:\n  echo ok\n\tbroken(((\n")
    repo.add_task(1)
    repo.commit_all()
    proc = repo.run("run", "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 failed (just verify-ok)"
    text = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
    notes = text.split("<!-- SECTION:NOTES:BEGIN -->")[1].split("<!-- SECTION:NOTES:END -->")[0]
    lines = notes.strip("\n").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("verify-failed "))
    assert "`just verify-ok` not run: the justfile cannot be read: error:" in lines[start]
    # Everything after the first line of the summary is indented, as the output tail is.
    assert len(lines) > start + 1
    assert all(ln.startswith("    ") for ln in lines[start + 1:])


def test_two_repositories_with_one_folder_name_keep_their_own_output(tmp_path: Path) -> None:
    first = make_verify_repo(tmp_path / "a", justfile="verify-bad:\n    echo from-a\n    exit 1\n")
    second = make_verify_repo(tmp_path / "b", justfile="verify-bad:\n    echo from-b\n    exit 1\n")
    for repo in (first, second):
        repo.add_task(1, notes="verify-cmd: just verify-bad")
        repo.commit_all()
    config = tmp_path / "both.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [{"path": str(first.root)}, {"path": str(second.root)}],
        "timezone": "UTC", "state_dir": str(tmp_path / "state")}))
    proc = first.run("run", "--config", str(config), "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    shown = []
    for repo, said in ((first, "from-a"), (second, "from-b")):
        text = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
        line = next(ln for ln in text.splitlines() if ln.startswith("full output: "))
        out = Path(line.removeprefix("full output: "))
        assert said in out.read_text()
        shown.append(out)
    assert shown[0] != shown[1]


def test_failure_summary_names_an_absolute_output_path_with_a_relative_config(
        tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, extra_config={"state_dir": "state", "repos": [
        {"path": "app"}]})
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all()
    proc = loop_verify(tmp_path, "run", "--config", "config.yaml", "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    task = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
    line = next(ln for ln in task.splitlines() if ln.startswith("full output: "))
    shown = Path(line.removeprefix("full output: "))
    assert shown.is_absolute() and shown.is_file()
    assert shown.is_relative_to(tmp_path / "state")
    # Another cwd reads the same ledger through the same relative configuration file.
    other = loop_verify(repo.root, "history", "--config", "../config.yaml")
    assert other.returncode == 0 and "fail" in other.stdout
