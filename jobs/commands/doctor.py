"""`loop-verify doctor`: check git, just, the configuration, each repository and the scheduler."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from jobs import backlog, git, runner
from jobs.commands.common import no_repos_hint, setup
from jobs.config import Config, find_config_path
from jobs.errors import EXIT_FAILED, EXIT_OK
from jobs.ledger import Ledger, LedgerError
from jobs.schedule_install import Check
from jobs.schedule_status import scheduler_checks
from jobs.spool import SPOOL_DIR, Spool


def tool_checks() -> list[Check]:
    checks = []
    git_path = shutil.which("git")
    if git_path is None:
        checks.append(Check("git", False, "not found on PATH", "install git"))
    else:
        checks.append(Check("git", True, f"{git.version()} at {git_path}", None))
    just_path = shutil.which("just")
    checks.append(Check("just", just_path is not None, just_path or "not found on PATH",
                        None if just_path else "install just (e.g. `pipx install rust-just`) "
                        "and make sure the scheduler's PATH finds it"))
    return checks


def config_checks(config: Config) -> list[Check]:
    looked, _ = find_config_path(None, os.environ)
    source = config.source or looked
    where = str(config.source) if config.source else f"no file at {looked}; built-in defaults"
    checks = [Check("configuration", True, where, None)]
    if not config.repos:
        checks.append(Check("repositories", False, f"none configured in {source}",
                            no_repos_hint(config)))
    try:
        ledger = Ledger(config.ledger, machine=config.machine)
        ledger.close()
        checks.append(Check("ledger", True, f"{ledger.shown_url} (machine {config.machine})",
                            None))
    except LedgerError as exc:
        checks.append(Check("ledger", False, str(exc), "fix `ledger:` or `state_dir:`"))
    spool = Spool(config.state_dir / SPOOL_DIR)
    if spool.count():
        checks.append(Check("ledger spool", False,
                            f"{spool.count()} ledger write(s) waiting in {spool.directory}",
                            "the next `loop-verify run` that reaches the ledger writes them"))
    return checks


def identity_check(root: Path) -> Check | None:
    """A failing Check when git cannot name the committer here: every verdict's commit would fail.

    Scheduled runs often have neither a global git config nor GIT_* variables; then each verdict
    is restored after its refused commit, every morning, and only the log says why.
    """
    for var in ("GIT_COMMITTER_IDENT", "GIT_AUTHOR_IDENT"):
        proc = subprocess.run(["git", "var", var], cwd=root, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            said = [line for line in proc.stderr.splitlines() if line.startswith("fatal:")]
            return Check(f"repo {root}", False,
                         f"git cannot name the committer: {said[-1] if said else var}",
                         f"git -C {root} config user.name …; git -C {root} config user.email …"
                         " (or set them globally for the account the scheduler runs as)")
    return None


def repo_checks(config: Config) -> list[Check]:
    checks = []
    for repo in config.repos:
        name = f"repo {repo.path}"
        try:
            backlog.read_config(repo.path)
        except backlog.BacklogError as exc:
            checks.append(Check(name, False, f"backlog not readable: {exc}",
                                "run `backlog init` there or fix backlog/config.yml"))
            continue
        try:
            doing = git.operation_in_progress(git.git_dir(repo.path))
            state = git.work_tree_state(repo.path)
        except (OSError, git.GitError) as exc:
            checks.append(Check(name, False, str(exc), "check the repository"))
            continue
        if doing:
            checks.append(Check(name, False, doing, "finish or abort it"))
        elif state.branch != repo.branch:
            checks.append(Check(name, False,
                                f"on {state.branch or 'a detached HEAD'}, not {repo.branch}",
                                f"git -C {repo.path} switch {repo.branch}"))
        elif not state.clean:
            checks.append(Check(name, False, f"{len(state.changes)} uncommitted change(s)",
                                "commit or stash them; loop-verify skips a dirty work tree"))
        elif runner.find_justfile(repo.path) is None:
            checks.append(Check(name, False, "no justfile in the repository root",
                                "every due task there will fail with `no justfile`"))
        elif (unknown := identity_check(repo.path)) is not None:
            checks.append(unknown)
        else:
            checks.append(Check(name, True, f"clean on {repo.branch}, backlog found", None))
    return checks


def main(args: argparse.Namespace) -> int:
    config = setup(args, repos=False)
    checks = tool_checks() + config_checks(config) + repo_checks(config) + scheduler_checks(config)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"     fix: {check.fix}")
    return EXIT_OK if all(c.ok for c in checks) else EXIT_FAILED
