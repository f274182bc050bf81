"""A real ledger from real runs, for the review tests: loop-verify on real repositories with the
real `just` (pass, fail, timeout, drift, error, a fail whose commit a hook refused) and a real
loop-pi-audit closeout that finds an unlogged push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_helpers import commit, make_repo_with_remote
from inprocess import FORCE_SUBPROCESS, loop_pi_audit, loop_verify
from project import ROOT
from verify_helpers import JUSTFILE, TASK, VerifyRepo, git, make_verify_repo

HOSTILE_TITLE = '<script>alert("title")</script> disk check'
HOSTILE_OUTPUT = "<script>alert('output')</script>"
CHARTER = "# Charter: app loop1\n\nauthority: release-please acme/app\n"

REVIEW_JUSTFILE = JUSTFILE + f"""
verify-hostile:
    echo "{HOSTILE_OUTPUT}"
    echo disk usage 97% over 90%
    exit 3
"""


@dataclass
class ReviewWorld:
    base: Path
    config: Path
    ledger: Path
    app: VerifyRepo
    lib: VerifyRepo
    audit_repo: Path
    run_dir: Path
    attempts: list[dict[str, Any]]
    audit_exit: int
    audit_stdout: str

    def review(self, *args: str, env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
        full = dict(os.environ)
        full.update(env or {})
        if not FORCE_SUBPROCESS:
            return loop_verify(["review", "--config", str(self.config), *args], env=full)
        full["PYTHONPATH"] = str(ROOT)
        return subprocess.run([sys.executable, "-m", "jobs.main", "review", "--config",
                               str(self.config), *args], capture_output=True, text=True,
                              env=full, check=False, timeout=120)


def write_task(repo: VerifyRepo, n: int, title: str, recipe: str) -> None:
    path = repo.root / "backlog" / "tasks" / f"task-{n} - check-{n}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    quoted = json.dumps(title) if any(c in title for c in ":<>\"'#") else title
    path.write_text(TASK.format(n=n, title=quoted, status="Done",
                                labels="\n  - 'verify:2026-11-01'",
                                notes=f"verify-cmd: just {recipe}"))


def audit_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if not FORCE_SUBPROCESS:
        return loop_pi_audit(args, env=env)
    return subprocess.run([sys.executable, "-m", "audit.main", *args], capture_output=True,
                          text=True, env=env, check=False, timeout=120)


def build_world(base: Path) -> ReviewWorld:
    """Everything through real processes; the ledger is shared through one config's `ledger:`."""
    ledger = base / "ledger.db"
    extra = {"ledger": f"sqlite:///{ledger}"}
    app = make_verify_repo(base / "one", justfile=REVIEW_JUSTFILE, extra_config=extra)
    write_task(app, 1, "Passing check", "verify-ok")
    write_task(app, 2, HOSTILE_TITLE, "verify-hostile")
    write_task(app, 3, "Slow check", "verify-slow")
    write_task(app, 4, "Drifting check", "verify-drift")
    app.commit_all()
    lib = make_verify_repo(base / "two", justfile=REVIEW_JUSTFILE, extra_config=extra)
    # Its own name, so that `--repo lib` and `--repo app` tell them apart.
    lib.root.rename(lib.root.with_name("lib"))
    lib = replace(lib, root=lib.root.with_name("lib"))
    write_task(lib, 1, "Library check", "verify-bad")
    lib.commit_all()
    # One config naming both repositories and the shared ledger: the one the review reads.
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [{"path": str(app.root)}, {"path": str(lib.root)}], "timeout": "1s",
        "kill_grace": "1s", "timezone": "UTC", "state_dir": str(base / "state"),
        "ledger": f"sqlite:///{ledger}"}))

    ran = app.run("run", "--today", "2026-11-30", "--config", str(config), "--repo",
                  str(app.root))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    # `just` not on PATH: an error, the task left alone.
    no_just = lib.run("run", "--today", "2026-11-30", "--config", str(config), "--repo",
                      str(lib.root), env={"PATH": "/usr/bin:/bin"})
    assert no_just.returncode == 3, no_just.stdout + no_just.stderr
    # A hook refuses the verdict commit: a failure the ledger holds without a commit.
    hook = lib.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'commits are frozen' >&2\nexit 1\n")
    hook.chmod(0o755)
    refused = lib.run("run", "--today", "2026-11-30", "--config", str(config), "--repo",
                      str(lib.root))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    hook.unlink()

    audit_repo, _bare = make_repo_with_remote(base, "audited")
    run_dir = base / "audit-run"
    charter = base / "charter.md"
    charter.write_text(CHARTER)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    begun = audit_cli("begin", str(audit_repo), "--charter", str(charter), "--run-dir",
                      str(run_dir), env=env)
    assert begun.returncode == 0, begun.stderr
    commit(audit_repo, "src/app.py", "print('unlogged')\n", "feat: a push nobody logged")
    git(audit_repo, "push", "-q", "origin", "HEAD:main")
    closed = audit_cli("closeout", "--charter", str(charter), "--run-dir", str(run_dir),
                       "--config", str(config), env=env)
    assert closed.returncode == 1, closed.stdout + closed.stderr

    hist = app.run("history", "--config", str(config), "--json")
    attempts = json.loads(hist.stdout)["attempts"]
    return ReviewWorld(base, config, ledger, app, lib, audit_repo, run_dir, attempts,
                       closed.returncode, closed.stdout)


def world_fixture(tmp_path_factory: pytest.TempPathFactory) -> ReviewWorld:
    with pytest.MonkeyPatch.context() as mp:
        for var, value in {
            "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
            "GIT_COMMITTER_NAME": "Test Committer",
            "GIT_COMMITTER_EMAIL": "committer@example.invalid",
            "GIT_CONFIG_NOSYSTEM": "1",
        }.items():
            mp.setenv(var, value)
        base = tmp_path_factory.mktemp("review")
        gitconfig = base / "gitconfig"
        gitconfig.write_text("")
        mp.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
        for var in ("LOOP_JOBS_CONFIG", "LOOP_PI_RUN_DIR", "GITHUB_TOKEN", "GH_TOKEN",
                    "GITHUB_API_URL"):
            mp.delenv(var, raising=False)
        return build_world(base)
