"""`loop-verify doctor`: check git, just, the configuration, each repository and the scheduler."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from jobs.backlog import scan as backlog
from jobs.commands.common import no_repos_hint, setup
from jobs.config.load import Config, find_config_path
from jobs.core.errors import EXIT_FAILED, EXIT_OK
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger.spool import SPOOL_DIR, Spool
from jobs.ledger.store import Ledger, LedgerError
from jobs.notify import deliveries, messages
from jobs.process import recipe as runner
from jobs.schedule.install import Check
from jobs.schedule.liveness import firing_checks
from jobs.schedule.status import scheduler_checks
from jobs.verify.rules import readiness


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
                            no_repos_hint(config, repo_option=False)))
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
    problem = git.committer_problem(root)
    if problem is None:
        return None
    return Check(f"repo {root}", False, f"git cannot name the committer: {problem}",
                 f"git -C {root} config user.name …; git -C {root} config user.email …"
                 " (or set them globally for the account the scheduler runs as)")


# Where verdicts are committed: an ignore rule matching either makes their commits fail.
PROBE_PATHS = ("backlog/tasks/loop-verify-probe.md", "backlog/completed/loop-verify-probe.md")


def commit_check(root: Path, branch: str) -> Check | None:
    """A failing Check when no verdict could be committed here (`run` skips the repository)."""
    facts = git.commit_facts(root, branch, PROBE_PATHS)
    problem = readiness.cannot_commit(facts)
    if problem is None:
        return None
    return Check(f"repo {root}", False, problem, readiness.commit_fix(facts, root))


def kept_check(root: Path, ledger: Ledger | None) -> Check | None:
    """A failing Check when verdicts wait in the ledger because their commit was refused."""
    if ledger is None:
        return None
    try:
        rows = ledger.kept(str(root))
    except LedgerError:
        return None   # the ledger check says what is wrong with it
    if not rows:
        return None
    first = rows[0]
    shown = f"{first.task_id} ({first.verdict}): {first.reason}"
    more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
    return Check(f"repo {root}", False,
                 f"{len(rows)} verdict(s) waiting to be committed: {shown}{more}",
                 "let the commit hooks accept a commit of only a task file (message "
                 "`loop-verify: …`); the next run commits them without running the recipes again")


def repo_checks(config: Config) -> list[Check]:
    checks = []
    try:
        ledger: Ledger | None = Ledger(config.ledger, machine=config.machine)
    except LedgerError:
        ledger = None
    try:
        for repo in config.repos:
            checks.append(repo_check(repo.path, repo.branch, ledger))
    finally:
        if ledger is not None:
            ledger.close()
    return checks


def repo_check(root: Path, branch: str, ledger: Ledger | None) -> Check:
    name = f"repo {root}"
    try:
        backlog.read_config(root)
    except backlog.BacklogError as exc:
        return Check(name, False, f"backlog not readable: {exc}",
                     "run `backlog init` there or fix backlog/config.yml")
    try:
        doing = readiness.operation_in_progress(git.git_dir(root))
        state = git.work_tree_state(root)
        if doing:
            return Check(name, False, doing, "finish or abort it")
        if state.branch != branch:
            return Check(name, False, f"on {state.branch or 'a detached HEAD'}, not {branch}",
                         f"git -C {root} switch {branch}")
        if not state.clean:
            return Check(name, False, f"{len(state.changes)} uncommitted change(s)",
                         "commit or stash them; loop-verify skips a dirty work tree")
        hidden = git.hidden_from_status(root)
        if hidden:
            return Check(name, False, readiness.not_ready(None, state, branch, hidden) or "",
                         "clear the flag (and commit or undo the change); loop-verify skips "
                         "a work tree git status cannot vouch for")
        try:
            justfile = runner.find_justfile(root)
        except runner.JustfileInvalid as exc:
            return Check(name, False, exc.message, "keep one justfile in the repository root")
        if justfile is None:
            return Check(name, False, "no justfile in the repository root",
                         "every due task there will fail with `no justfile`")
        problem = (identity_check(root) or commit_check(root, branch)
                   or kept_check(root, ledger))
    except (OSError, GitError) as exc:
        return Check(name, False, str(exc), "check the repository")
    return problem or Check(name, True, f"clean on {branch}, backlog found, "
                            "can take a commit", None)


def delivery_checks(config: Config) -> list[Check]:
    """The heartbeat and each notify: URL: a failing Check while the last delivery there could
    not be made (until a later one succeeds)."""
    checks = []
    if config.heartbeat is not None:
        last = deliveries.last(config.state_dir, deliveries.HEARTBEAT, config.heartbeat)
        shown = deliveries.shown_target(config.heartbeat, deliveries.HEARTBEAT)
        if last is not None and not last.ok:
            checks.append(Check("heartbeat", False, f"the last ping ({last.what}) to {shown} "
                                f"could not be delivered at {last.at}: {last.error}",
                                "check the URL and that this machine reaches it; the next "
                                "run's pings clear this"))
        else:
            when = f"last ping ({last.what}) at {last.at}" if last else "no ping sent yet"
            checks.append(Check("heartbeat", True, f"{shown}: {when}"))
    missing = bool(config.notify) and messages.apprise_missing()
    if missing:
        checks.append(Check("notify", False, messages.NOT_INSTALLED,
                            "install it where loop-verify runs"))
    for i, url in enumerate(config.notify, start=1):
        if not missing and not messages.understood(url):
            shown = f"notify[{i}] {deliveries.shown_target(url, deliveries.NOTIFY)}"
            checks.append(Check("notify", False, f"{shown}: {messages.NOT_UNDERSTOOD}",
                                "fix the URL (see Apprise's list of services; "
                                "`apprise -vv -b test URL` tries it)"))
            continue
        last = deliveries.last(config.state_dir, deliveries.NOTIFY, url)
        if last is not None and not last.ok:
            checks.append(Check("notify", False, f"the last message to {last.shown} could "
                                f"not be delivered at {last.at}: {last.error}",
                                "check the Apprise URL (`apprise -vv -b test URL`); the next "
                                "message clears this"))
    return checks


def main(*, config_path: str | None, now: datetime | None = None) -> int:
    config = setup(config_path)
    checks = (tool_checks() + config_checks(config) + repo_checks(config)
              + scheduler_checks(config, now=now) + firing_checks(config, now=now)
              + delivery_checks(config))
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"     fix: {check.fix}")
    return EXIT_OK if all(c.ok for c in checks) else EXIT_FAILED
