"""Edges found in review: a `just` that rejects our arguments, relative ledger paths, listing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml
from verify_helpers import make_verify_repo

from jobs.config.load import load_config, with_repos
from jobs.core.errors import ConfigError

TODAY = ("--today", "2026-11-30")


def test_a_just_that_rejects_our_arguments_is_an_error_not_a_failure(tmp_path: Path) -> None:
    # An old `just`, or another program named just: the infrastructure, never the task's fault.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "just").write_text("#!/bin/sh\necho \"error: unexpected argument '--dump-format' "
                               "found\" >&2\nexit 2\n")
    (fake / "just").chmod(0o755)
    repo = make_verify_repo(tmp_path / "r")
    tasks = [repo.add_task(n) for n in (1, 2)]
    repo.commit_all("tasks")
    before = [t.read_bytes() for t in tasks]
    git_dir = os.path.dirname(shutil.which("git") or "/usr/bin/git")

    code, data = repo.run_json("run", *TODAY, env={"PATH": f"{fake}:{git_dir}"})

    assert code == 3
    assert [r["verdict"] for r in data["results"]] == ["error", "error"]
    assert "rejected `--dump --dump-format json`" in data["results"][0]["reason"]
    assert [t.read_bytes() for t in tasks] == before
    assert repo.subjects() == ["tasks", "setup"]


def test_a_relative_sqlite_ledger_is_relative_to_the_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "conf" / "c.yaml"
    cfg.parent.mkdir()
    cfg.write_text("ledger: sqlite:///db/ledger.db\n")
    assert load_config(cfg, env={}).ledger == f"sqlite:///{tmp_path / 'conf' / 'db' / 'ledger.db'}"
    cfg.write_text("ledger: sqlite:////abs/ledger.db\n")
    assert load_config(cfg, env={}).ledger == "sqlite:////abs/ledger.db"


def test_command_line_errors_name_the_option_once(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("timeout: 5m\n")
    try:
        with_repos(load_config(cfg, env={}), [str(tmp_path / "nope")])
    except ConfigError as exc:
        assert str(exc).startswith("command line: --repo: not a git work tree")
    else:
        raise AssertionError("a missing --repo must be refused")


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
