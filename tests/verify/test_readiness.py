"""A repository that cannot take a verdict commit is skipped before any recipe runs, and `doctor`
says why: here, a git that cannot name the committer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

from jobs.main import main as verify_main

TODAY = ("--today", "2026-11-30")


def test_a_repository_where_git_cannot_name_the_committer_is_skipped_before_any_recipe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A scheduled job often has no global git config and no GIT_* identity. Every recipe due
    # there ran, and then every verdict's commit failed ("Author identity unknown"): an hour of
    # recipes for verdicts that could not land, again each morning for the newly due ones.
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.git("config", "user.useConfigOnly", "true")  # no guess from the host name either
    home = tmp_path / "empty-home"
    home.mkdir()
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "EMAIL", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    for args in (("--dry-run",), ()):
        done = repo.run("run", *TODAY, *args)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "skipped  app: cannot take a commit: git cannot name the committer: fatal: " \
            "no email was given" in done.stdout, done.stdout
    assert not list(repo.state_dir.glob("runs/*/*.log")), "a recipe ran"
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""

    repo.git("config", "user.name", "Owner")
    repo.git("config", "user.email", "owner@example.invalid")
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"


def test_doctor_says_when_git_cannot_name_the_committer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    assert verify_main(["doctor", "--config", str(repo.config_path)]) in (0, 1)
    assert f"ok   repo {repo.root}:" in capsys.readouterr().out
    home = tmp_path / "home"
    home.mkdir()
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{who}_NAME")
        monkeypatch.delenv(f"GIT_{who}_EMAIL")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("EMAIL", raising=False)
    # Some hosts still have a full name and a resolvable domain: git then needs nothing else.
    probe = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=repo.root,
                           capture_output=True, check=False)
    if probe.returncode == 0:
        pytest.skip("git can guess an identity on this host")
    assert verify_main(["doctor", "--config", str(repo.config_path)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL repo {repo.root}: git cannot name the committer" in out


@pytest.mark.parametrize("operation", ["cherry-pick", "revert"])
def test_a_multi_commit_cherry_pick_or_revert_stopped_midway_skips_the_repository(
        tmp_path: Path, operation: str) -> None:
    # A range of commits stopped on a conflict; the owner resolved and committed it but never
    # ran `--continue`. CHERRY_PICK_HEAD (or REVERT_HEAD) is gone, yet git still holds the rest
    # of the sequence and `git status` says the operation is in progress: a verdict commit
    # there would land in the middle of it.
    repo = make_verify_repo(tmp_path, tasks=[1])
    readme = repo.root / "README.md"
    base = repo.head()
    for i in range(2):
        readme.write_text(f"side {i}\n")
        repo.git("commit", "-qam", f"side {i}")
    side = repo.head()
    if operation == "cherry-pick":
        repo.git("reset", "-q", "--hard", base)
        readme.write_text("main's own change\n")
        repo.git("commit", "-qam", "main's own change")
        args = ("cherry-pick", f"{base}..{side}")
    else:
        readme.write_text("a later change\n")
        repo.git("commit", "-qam", "a later change")
        args = ("revert", "--no-edit", "HEAD~1", "HEAD~2")
    repo.git(*args, check=False)  # stops on the conflict
    readme.write_text("resolved\n")
    repo.git("add", "README.md")
    repo.git("-c", "core.editor=true", "commit", "-q", "--no-edit")
    gdir = repo.root / ".git"
    assert (gdir / "sequencer").is_dir()
    assert not (gdir / "CHERRY_PICK_HEAD").exists() and not (gdir / "REVERT_HEAD").exists()
    assert "currently" in repo.git("status") or "in progress" in repo.git("status")
    head = repo.head()

    done = repo.run("run", *TODAY)

    assert done.returncode == 3, done.stdout + done.stderr
    assert f"a {operation} is in progress" in done.stdout, done.stdout
    assert repo.head() == head and repo.status() == ""
    assert not list(repo.state_dir.glob("runs/*/*.log")), "a recipe ran"
