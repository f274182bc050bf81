"""A real ledger from real runs, for the review tests: loop-verify on real repositories with the
real `just` (pass, fail, timeout, drift, error, a fail whose commit a hook refused, a refused task,
a dirty tree, a held lock, a run stopped by SIGTERM), a second clone of one repository run as
another machine, and a real loop-pi-audit closeout that finds an unlogged push.

What real runs cannot make without waiting days is written the way a run writes it: the earlier
mornings' runs (`save_run`, every day but one) and attempts (`Ledger.save`), so one task is
still failing since two mornings ago and another failed, passed, and fails anew today."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_helpers import commit, make_repo_with_remote
from inprocess import FORCE_SUBPROCESS, loop_pi_audit, loop_verify
from project import ROOT
from verify_helpers import (
    JUSTFILE,
    TASK,
    VerifyRepo,
    git,
    kill_marked,
    make_verify_repo,
    start_verify,
    wait_for,
)

from jobs.core.fs import exclusive_dir_lock
from jobs.core.host import default_machine
from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run
from jobs.ledger.store import Ledger

HOSTILE_TITLE = '<script>alert("title")</script> disk check'
HOSTILE_OUTPUT = "<script>alert('output')</script>"
CHARTER = "# Charter: app loop1\n\nauthority: release-please acme/app\n"

REVIEW_JUSTFILE = JUSTFILE + f"""
verify-hostile:
    echo "{HOSTILE_OUTPUT}"
    echo disk usage 97% over 90%
    exit 3

verify-wait:
    touch "$WAIT_MARKER"
    sleep 30
"""
REFUSED_CMD = "verify-cmd: make check"
LABEL = "2026-11-01"
NO_RUN_DAYS_AGO = 3


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
    second: VerifyRepo        # a second clone of app, run as the machine SECOND
    ops: VerifyRepo           # skipped (dirty), locked, and stopped by SIGTERM
    machine: str              # the machine the first clones' runs recorded
    now: datetime             # when the world was built (the earlier mornings count back)

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


SECOND = "second-box"


def write_task(repo: VerifyRepo, n: int, title: str, recipe: str, *,
               notes: str | None = None) -> None:
    path = repo.root / "backlog" / "tasks" / f"task-{n} - check-{n}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    quoted = json.dumps(title) if any(c in title for c in ":<>\"'#") else title
    path.write_text(TASK.format(n=n, title=quoted, status="Done",
                                labels=f"\n  - 'verify:{LABEL}'",
                                notes=notes or f"verify-cmd: just {recipe}"))


def rename_remote(repo: VerifyRepo, name: str) -> VerifyRepo:
    """The bare remote named after the repository (its identity's last part is the group's
    name on the page)."""
    bare = repo.bare.with_name(f"{name}.git")
    repo.bare.rename(bare)
    git(repo.root, "remote", "set-url", "origin", str(bare))
    return replace(repo, bare=bare)


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
    write_task(app, 6, "Malformed check", "", notes=REFUSED_CMD)
    app = rename_remote(app, "app")
    app.commit_all()
    lib = make_verify_repo(base / "two", justfile=REVIEW_JUSTFILE, extra_config=extra)
    # Its own name, so that `--repo lib` and `--repo app` tell them apart.
    lib.root.rename(lib.root.with_name("lib"))
    lib = replace(lib, root=lib.root.with_name("lib"))
    lib = rename_remote(lib, "lib")
    write_task(lib, 1, "Library check", "verify-bad")
    lib.commit_all()
    ops = rename_remote(make_verify_repo(base / "three", justfile=REVIEW_JUSTFILE), "ops")
    write_task(ops, 1, "Ops check", "verify-ok")
    ops.commit_all()
    # One config naming the repositories and the shared ledger: the one the review reads.
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({
        # ops's recipe waits for the SIGTERM: a loaded machine must not time it out first.
        "repos": [{"path": str(app.root)}, {"path": str(lib.root)},
                  {"path": str(ops.root), "timeout": "120s"}],
        "timeout": "1s", "kill_grace": "1s", "timezone": "UTC", "state_dir": str(base / "state"),
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
    second = second_clone(base, app, ledger)
    not_checked(base, ops, config)
    now = datetime.now(UTC)
    machine = default_machine()
    earlier_mornings(ledger, app, machine, now)

    audit_repo, _bare = make_repo_with_remote(base, "audited")
    run_dir = base / "audit-run"
    charter = base / "charter.md"
    charter.write_text(CHARTER)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    begun = audit_cli("begin", str(audit_repo), "--charter", str(charter), "--run-dir",
                      str(run_dir), "--config", str(config), env=env)
    assert begun.returncode == 0, begun.stderr
    commit(audit_repo, "src/app.py", "print('unlogged')\n", "feat: a push nobody logged")
    git(audit_repo, "push", "-q", "origin", "HEAD:main")
    closed = audit_cli("closeout", "--charter", str(charter), "--run-dir", str(run_dir),
                       "--config", str(config), env=env)
    assert closed.returncode == 1, closed.stdout + closed.stderr

    hist = app.run("history", "--config", str(config), "--json")
    attempts = json.loads(hist.stdout)["attempts"]
    return ReviewWorld(base, config, ledger, app, lib, audit_repo, run_dir, attempts,
                       closed.returncode, closed.stdout, second, ops, machine, now)


def second_clone(base: Path, app: VerifyRepo, ledger: Path) -> VerifyRepo:
    """Another clone of app, run as another machine: what the first finished is skipped there
    (claimed), the drift is tried again, and a task of its own passes."""
    root = base / "second" / "app-clone"
    root.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(app.bare), str(root)], check=True)
    config = base / "second" / "config.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [{"path": str(root)}], "timeout": "1s", "kill_grace": "1s", "timezone": "UTC",
        "state_dir": str(base / "second" / "state"), "ledger": f"sqlite:///{ledger}",
        "machine": SECOND}))
    second = VerifyRepo(root, app.bare, base / "second" / "state", config)
    # TASK-0 comes before TASK-4 (tasks run in natural id order): it passes before the drift
    # stops the rest.
    write_task(second, 0, "Clone-only check", "verify-ok")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a task of this clone")
    done = second.run("run", "--today", "2026-11-30")
    assert done.returncode == 1, done.stdout + done.stderr  # the drift, again
    return second


def not_checked(base: Path, ops: VerifyRepo, config: Path) -> None:
    """A dirty tree (skipped), a held lock (locked), a run stopped by SIGTERM (interrupted)."""
    run = ("run", "--today", "2026-11-30", "--config", str(config), "--repo", str(ops.root))
    readme = ops.root / "README.md"
    readme.write_text("# ops, edited by hand\n")
    dirty = ops.run(*run)
    assert dirty.returncode == 3 and "skipped" in dirty.stdout, dirty.stdout + dirty.stderr
    git(ops.root, "checkout", "--", "README.md")
    with exclusive_dir_lock(Path(git(ops.root, "rev-parse", "--absolute-git-dir").strip())):
        locked = ops.run(*run)
    assert locked.returncode == 3 and "locked" in locked.stdout, locked.stdout + locked.stderr
    write_task(ops, 2, "Long check", "verify-wait")
    ops.commit_all()
    marker = base / "three" / "recipe-started"
    mark = f"review-world-{uuid.uuid4().hex}"
    proc = start_verify(ops, *run, mark=mark, out=base / "three" / "stopped",
                        env={"WAIT_MARKER": str(marker)})
    try:
        wait_for(marker, proc, timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 3
    finally:
        kill_marked(mark)


def earlier_mornings(ledger: Path, app: VerifyRepo, machine: str, now: datetime) -> None:
    """The runs of the 30 mornings before today, but for one, as `run` records them; every run
    of today as well (until `run` records itself); and the earlier attempts of two tasks:
    TASK-2 passed four mornings ago and has failed since two mornings ago, TASK-3 failed two
    mornings ago and passed yesterday (so today's timeout is new)."""
    book = Ledger(f"sqlite:///{ledger}")
    try:
        for days in range(1, 31):
            if days == NO_RUN_DAYS_AGO:
                continue
            start = now - timedelta(days=days)
            save_run(book, Run(f"earlier-{days}", machine, "launchd", start, config=None,
                               ended_at=start + timedelta(seconds=40), exit_code=0,
                               counts={"pass": 2}))
        for days, task, recipe, verdict in ((4, "TASK-2", "verify-hostile", "pass"),
                                            (2, "TASK-2", "verify-hostile", "fail"),
                                            (1, "TASK-2", "verify-hostile", "fail"),
                                            (2, "TASK-3", "verify-slow", "timeout"),
                                            (1, "TASK-3", "verify-slow", "pass")):
            start = now - timedelta(days=days)
            book.save(Attempt(f"earlier-{days}", start, str(app.root), verdict,
                              ended_at=start + timedelta(seconds=5), task_id=task,
                              task_path=f"backlog/tasks/task-{task[5:]} - check-{task[5:]}.md",
                              label_date=LABEL, recipe=recipe, duration=5.0,
                              exit_code=0 if verdict == "pass" else 3, machine=machine))
        # Today's runs, from their attempts, as `run` will record them itself.
        today: dict[tuple[str, str], list[Attempt]] = {}
        for a in book.history(since=datetime.combine(now.date(), time.min, tzinfo=UTC)):
            if not a.run_id.startswith("earlier-"):
                today.setdefault((a.run_id, a.machine or machine), []).append(a)
        for (run_id, mach), found in today.items():
            counts: dict[str, int] = {}
            for a in found:
                counts[a.verdict] = counts.get(a.verdict, 0) + 1
            failed = any(v in counts for v in ("fail", "timeout", "drift"))
            unchecked = any(v in counts for v in ("skipped", "locked", "error", "interrupted"))
            save_run(book, Run(run_id, mach, "manual", min(a.started_at for a in found),
                               ended_at=max(a.ended_at or a.started_at for a in found),
                               exit_code=1 if failed else 3 if unchecked else 0, counts=counts))
    finally:
        book.close()


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


def plain_ledger(base: Path, *, timezone: str = "UTC", machine: str = "here",
                 ) -> tuple[Path, Ledger]:
    """A config naming no repository and an empty ledger, for a review of rows written directly
    (plain data: the dates are the test's, never the wall clock's)."""
    base.mkdir(parents=True, exist_ok=True)
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [], "timezone": timezone, "state_dir": str(base / "state"),
        "ledger": f"sqlite:///{base / 'ledger.db'}", "machine": machine,
        "log_file": str(base / "log.jsonl")}))
    return config, Ledger(f"sqlite:///{base / 'ledger.db'}")


def review_text(config: Path, *args: str) -> str:
    """`loop-verify review --format markdown` of that config, which must make a report."""
    done = loop_verify(["review", "--config", str(config), "--format", "markdown", *args])
    assert done.returncode == 0, done.stderr
    return done.stdout
