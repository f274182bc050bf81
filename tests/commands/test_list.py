"""`loop-verify list`: what it shows of a task, its exit status when a backlog cannot be read or
no repository is configured, and a file name that is not UTF-8 shown escaped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from verify_helpers import VerifyRepo, make_verify_repo

from jobs.main import main as verify_main

TODAY = ("--today", "2026-11-30")


def test_list_json_shows_the_label_of_a_task_not_done(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1, status="In Progress", labels=("verify:2026-11-01",))
    repo.commit_all("task")
    code, data = repo.run_json("list", *TODAY)
    assert code == 0
    [row] = data["tasks"]
    assert row["state"] == "not done"
    assert row["label"] == "verify:2026-11-01" and row["label_date"] == "2026-11-01"


def test_list_with_no_repositories_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    config = yaml.safe_load(repo.config_path.read_text())
    config["repos"] = []
    repo.config_path.write_text(yaml.safe_dump(config))
    proc = repo.run("list")
    assert proc.returncode == 2 and "no repositories" in proc.stderr


def test_list_exits_3_when_a_repository_backlog_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = str(repo.config_path)
    assert verify_main(["list", "--config", config, "--today", "2026-11-30"]) == 0
    capsys.readouterr()
    # A broken config.yml (the error has a line) and a repository with no backlog/ at all.
    with (repo.root / "backlog" / "config.yml").open("a") as fh:
        fh.write("statuses: [\n")
    assert verify_main(["list", "--config", config]) == 3
    assert "config.yml:" in capsys.readouterr().out
    plain = tmp_path / "plain"
    subprocess.run(["git", "init", "-q", "-b", "main", str(plain)], check=True)
    assert verify_main(["list", "--config", config, "--repo", str(plain), "--json"]) == 3
    assert "no backlog/ folder" in capsys.readouterr().out


def test_list_prints_a_non_utf8_file_name_escaped(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    odd = repo.root / "backlog" / "tasks" / os.fsdecode(b"task-2 - \xff.md")
    odd.write_bytes(b"")
    # A strict UTF-8 stdout, as on a machine with a real UTF-8 locale.
    proc = repo.run("list", "--today", "2026-11-30", env={"PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0, proc.stderr
    assert "task-2 - \\xff.md: empty file" in proc.stdout


def test_a_refused_task_names_its_file(tmp_path: Path) -> None:
    """A new user's slips (no verify-cmd line, a date that does not exist) are found by file:
    the id in the frontmatter need not resemble the file's name."""
    repo = make_verify_repo(tmp_path)
    repo.add_task(1, title="Disk alert", notes="Run just verify-disk to check.")
    repo.add_task(2, title="Backup", labels=("verify:2026-11-31",))
    repo.commit_all("tasks")
    proc = repo.run("list", *TODAY)
    assert proc.returncode == 0, proc.stderr
    one, two = proc.stdout.splitlines()
    assert one.startswith("refused   app TASK-1 ") and "no `verify-cmd" in one, one
    assert one.endswith(" [backlog/tasks/task-1 - Disk-alert.md]"), one
    assert two.startswith("refused   app TASK-2:") and "2026-11-31" in two, two
    assert two.endswith(" [backlog/tasks/task-2 - Backup.md]"), two


# Task files `run` reads but will not edit: it records `error` for them every morning without
# running the recipe, so `--dry-run` must not say it would run them. (A scalar `labels:` is no
# such case: `list` and `run` alike report the file unreadable.)
UNEDITABLE = {
    2: ("labels:\n  - 'verify:2026-11-01'", "labels: [infra,\n  'verify:2026-11-01']"),
    3: ("labels:\n  - 'verify:2026-11-01'", "labels: &l ['verify:2026-11-01']\nalso: *l"),
}


def _uneditable_repo(tmp_path: Path) -> tuple[VerifyRepo, dict[str, bytes]]:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    for n, (old, new) in UNEDITABLE.items():
        task = repo.add_task(n)
        task.write_text(task.read_text().replace(old, new))
    real = repo.add_task(4, folder="kept")
    (repo.root / "backlog" / "tasks" / real.name).symlink_to(real)
    repo.commit_all("odd tasks")
    return repo, {str(p): p.read_bytes() for p in (repo.root / "backlog").rglob("*.md")}


def test_dry_run_says_what_run_records_for_a_file_it_cannot_edit(tmp_path: Path) -> None:
    repo, before = _uneditable_repo(tmp_path)
    dry = repo.run("run", *TODAY, "--dry-run")
    lines = dry.stdout.splitlines()
    assert lines[0] == "would run  app TASK-1: just verify-ok", dry.stdout
    for n in (*UNEDITABLE, 4):
        assert lines[n - 1].startswith(f"would error app TASK-{n}: just verify-ok: cannot edit "
                                       "the task file safely: "), dry.stdout
    _, data = repo.run_json("run", *TODAY, "--dry-run")
    reasons = {r["task_id"]: r["reason"] for r in data["results"]}
    assert repo.status() == "" and not repo.state_dir.joinpath("runs").exists()
    # What the real run then records, word for word.
    _, ran = repo.run_json("run", *TODAY)
    for r in ran["results"]:
        if r["task_id"] != "TASK-1":
            assert r["verdict"] == "error" and r["reason"] == reasons[r["task_id"]], r
    for path, data_before in before.items():
        assert Path(path).read_bytes() == data_before or "task-1 " in path
