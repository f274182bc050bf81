"""One verification run over every configured repository: the driver around the rules.

Per repository: read the backlog (pure Python, no process), and only when something is due or an
edit is pending take the repository's lock, recover a pending edit a crash left behind
(`recovery`), check the repository is ready (`readiness`), then verify each due task in turn
(`verify_task`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import partial

import structlog

from jobs.backlog import scan as backlog
from jobs.config.load import Config, RepoConfig
from jobs.core import statedir as retention
from jobs.core.errors import EXIT_FAILED, EXIT_OK, EXIT_UNCHECKED, LoopError
from jobs.core.fs import LockBusy, exclusive_lock
from jobs.core.logs import get_logger, new_run_id
from jobs.core.text import first_line
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger import claims
from jobs.ledger.model import FAILING, UNCHECKED, Attempt, EditState, Verdict
from jobs.ledger.replay import flush_spool
from jobs.ledger.spool import SPOOL_DIR
from jobs.ledger.store import Ledger
from jobs.process import recipe as runner
from jobs.verify import claims as clone_claims
from jobs.verify.recover import commit_kept, recover_pending
from jobs.verify.rules import eligibility, readiness
from jobs.verify.task import RepoContext, Ticker, storable, verify_task
from jobs.verify.terminal import format_line, repo_name, repo_names

log = get_logger("loop-verify")

LOCK_NAME = "loop-verify.lock"
# The log event of each verdict.
EVENTS = {Verdict.PASS: "verify.passed", Verdict.FAIL: "verify.failed",
          Verdict.TIMEOUT: "verify.timeout", Verdict.REFUSED: "verify.refused",
          Verdict.SKIPPED: "repo.skipped", Verdict.LOCKED: "repo.locked",
          Verdict.DRIFT: "verify.drift", Verdict.ERROR: "verify.error",
          Verdict.INTERRUPTED: "verify.interrupted"}

Printer = Callable[[str], None]


@dataclass
class RunSummary:
    run_id: str
    today: date
    dry_run: bool
    results: list[Attempt] = field(default_factory=list)
    interrupted: bool = False  # told to stop (SIGINT, SIGTERM, SIGHUP) at any point
    # How each repository is named in output: two may share a folder name.
    repo_names: dict[str, str] = field(default_factory=dict)
    # Ledger writes kept in the local spool: recorded on a later run, so this one exits 3.
    spooled: int = 0

    @property
    def exit_code(self) -> int:
        verdicts_seen = {r.verdict for r in self.results}
        if verdicts_seen & FAILING:
            return EXIT_FAILED
        # A task another machine claimed is checked there: not unchecked here (docs/ledger.md).
        unchecked = {r.verdict for r in self.results if r.claimed_by is None} & UNCHECKED
        # A verdict whose commit was refused never reached the task: that too is unchecked.
        if (unchecked or self.interrupted or self.spooled
                or any(r.edit_state == EditState.RESTORED for r in self.results)):
            return EXIT_UNCHECKED
        return EXIT_OK


def today_in(config: Config) -> date:
    return eligibility.today_in(config.timezone)


def unexpected(exc: BaseException) -> str:
    """The reason recorded for an unexpected fault: its type and first line."""
    said = first_line(exc) if str(exc).strip() else ""
    return f"unexpected {type(exc).__name__}" + (f": {said}" if said else "")


def run_once(config: Config, *, today: date | None = None, stop: threading.Event | None = None,
             printer: Printer | None = None, ticker: Ticker | None = None,
             dry_run: bool = False, just: str = "just") -> RunSummary:
    """Verify every due task of every configured repository once."""
    summary = RunSummary(new_run_id(), today or today_in(config), dry_run,
                         repo_names=repo_names(str(r.path) for r in config.repos))
    with structlog.contextvars.bound_contextvars(run_id=summary.run_id):
        _run_all(config, summary, stop, printer, ticker, just)
    return summary


def _run_all(config: Config, summary: RunSummary, stop: threading.Event | None,
             printer: Printer | None, ticker: Ticker | None, just: str) -> None:
    dry_run = summary.dry_run
    ledger = None
    if not dry_run:
        ledger = Ledger(config.ledger, machine=config.machine,
                        spool_dir=config.state_dir / SPOOL_DIR)
        # Verdicts an earlier run could not write are written before anything new happens.
        flush_spool(ledger)
        retention.prune_outputs(config.state_dir, config.output_retention, datetime.now(UTC))
    # The run's claim on the recipes it starts: a later run may sweep them only if this one dies.
    scope = runner.Scope(None if dry_run else config.state_dir)
    try:
        with scope:
            for repo in config.repos:
                # After a stop every repository is still read, so that each of its due tasks is
                # recorded `interrupted` rather than silently left out.
                worker = _RepoRun(config, repo, summary, ledger, stop, printer, ticker, just, scope)
                try:
                    worker.run()
                except (OSError, GitError) as exc:
                    # One repository the filesystem or git cannot serve must not stop the others.
                    worker.finish(worker.attempt(Verdict.SKIPPED,
                                                 reason=f"cannot work on it: {exc}"))
                except LoopError:
                    raise  # the ledger cannot be written: nothing more can be recorded
                except Exception as exc:
                    # Nor may one repository that trips on something unexpected.
                    log.error("repo.unexpected_error", run_id=summary.run_id, repo=str(repo.path),
                              exc_type=type(exc).__name__, exc_info=exc)
                    worker.finish(worker.attempt(Verdict.ERROR, reason=unexpected(exc)))
    finally:
        if ledger is not None:
            summary.spooled = ledger.spooled
            ledger.close()
    if stop is not None and stop.is_set():
        summary.interrupted = True
        log.warning("run.interrupted", run_id=summary.run_id, exit_code=summary.exit_code,
                    interrupted=sum(r.verdict == Verdict.INTERRUPTED for r in summary.results))
    log.info("run.finished", run_id=summary.run_id, exit_code=summary.exit_code,
             results=len(summary.results), dry_run=dry_run, spooled=summary.spooled)


class _RepoRun:
    def __init__(self, config: Config, repo: RepoConfig, summary: RunSummary,
                 ledger: Ledger | None, stop: threading.Event | None,
                 printer: Printer | None, ticker: Ticker | None, just: str,
                 scope: runner.Scope | None = None) -> None:
        self.ctx = RepoContext(config, repo, summary.run_id, ledger, stop, ticker, just,
                               scope=scope)
        self.repo = repo
        self.root = repo.path
        self.summary = summary
        self.ledger = ledger
        self.stop = stop
        self.printer = printer
        ttl = config.timeout_for(repo) + config.kill_grace + clone_claims.CLAIM_MARGIN
        self.claims = (clone_claims.RepoClaims(ledger, repo.path, repo.branch, ttl)
                       if ledger is not None else None)

    # -- recording -----------------------------------------------------------------------------

    def attempt(self, verdict: str, *, task: eligibility.Classified | None = None,
                reason: str | None = None, started: datetime | None = None) -> Attempt:
        return self.ctx.attempt(verdict, task=task, reason=reason, started=started)

    def finish(self, result: Attempt, claim: claims.Claim | None = None) -> None:
        """Record (or, when already in the ledger, update), log and print one attempt; with the
        attempt's `claim`, settle that in the same ledger transaction."""
        storable(result)
        if self.ledger is not None:
            claims.save_settled(self.ledger, result, claim)
        self.summary.results.append(result)
        event = EVENTS[Verdict(result.verdict)]
        if self.summary.dry_run:
            event = "dryrun." + event.split(".", 1)[1]
        level = "info" if result.verdict == Verdict.PASS else "warning"
        getattr(log, level)(event, run_id=self.summary.run_id, repo=result.repo,
                            task=result.task_id, recipe=result.recipe, reason=result.reason,
                            exit_code=result.exit_code, duration_s=result.duration,
                            output=result.output_path, commit=result.commit_sha,
                            label_date=result.label_date)
        if self.printer is not None:
            self.printer(format_line(result, dry_run=self.summary.dry_run,
                                     names=self.summary.repo_names))

    # -- the run -------------------------------------------------------------------------------

    def classify(self) -> tuple[backlog.BacklogConfig, list[eligibility.Classified]] | None:
        """The backlog's tasks as judged today, or None (recorded as skipped) when unreadable."""
        try:
            scan = backlog.scan(self.root)
        except backlog.BacklogError as exc:
            self.finish(self.attempt(Verdict.SKIPPED, reason=str(exc)))
            return None
        for err in scan.errors:
            log.warning("task.unreadable", repo=str(self.root), path=str(err.path),
                        line=err.line, reason=err.message)
        classified = [c for c in (eligibility.classify(t, scan.config, self.summary.today)
                                  for t in scan.tasks) if c is not None]
        return scan.config, classified

    def run(self) -> None:
        judged = self.classify()
        if judged is None:
            return
        classified = judged[1]
        pending = self.ledger.pending(str(self.root)) if self.ledger is not None else []
        due = [c for c in classified if c.state == eligibility.DUE]
        if not due and not pending:
            self.report_refused(classified)
            return
        if self.stopped():
            self.report_refused(classified)
            self.interrupted(sorted(due, key=lambda c: str(c.task.path)))
            return
        if self.summary.dry_run:
            self.dry_run(classified, due)
            return
        try:
            gdir = git.git_dir(self.root)
        except (OSError, GitError) as exc:
            self.finish(self.attempt(Verdict.SKIPPED, reason=f"not a git work tree: {exc}"))
            return
        with ExitStack() as stack:
            try:
                stack.enter_context(exclusive_lock(gdir / LOCK_NAME))
            except LockBusy:
                self.finish(self.attempt(Verdict.LOCKED, reason="another loop-verify holds "
                                         f"{gdir / LOCK_NAME}"))
                return
            self.run_locked(pending)
            if self.ctx.committed:
                self.maintain()

    def maintain(self) -> None:
        """Git's auto maintenance, once for all of this run's commits (each commit would have
        started it); its failure is git's housekeeping, not a verdict's."""
        try:
            git.auto_maintenance(self.root)
        except GitError as exc:
            log.warning("repo.maintenance_failed", run_id=self.summary.run_id,
                        repo=str(self.root), reason=str(exc))

    def run_locked(self, pending: list[Attempt]) -> None:
        """Everything done while holding the repository's lock."""
        if pending:
            # Another run may have finished these while we waited for the lock: ask again.
            pending = self.ledger.pending(str(self.root)) if self.ledger is not None else []
        if pending and not recover_pending(self.ctx, pending, self.finish, self.settle_recovered):
            return
        # Another run may have committed verdicts while we waited: judge the tasks afresh.
        judged = self.classify()
        if judged is None:
            return
        config, classified = judged
        self.report_refused(classified)
        due = [c for c in classified if c.state == eligibility.DUE]
        if not due:
            return
        problem = self.precondition(due)
        if problem is not None:
            self.finish(self.attempt(Verdict.SKIPPED, reason=problem))
            return
        kept_rows = self.ledger.kept(str(self.root)) if self.ledger is not None else []
        if kept_rows:
            done = commit_kept(self.ctx, kept_rows, self.finish)
            due = [c for c in due if str(c.task.path.relative_to(self.root)) not in done.settled]
            if done.repo_error is not None:
                self.repo_error(done.repo_error, due)
                return
        ordered = sorted(due, key=lambda c: str(c.task.path))
        for i, task in enumerate(ordered):
            if self.stopped():
                self.interrupted(ordered[i:])
                return
            claim = self.take_claim(task)
            if isinstance(claim, Attempt):
                self.finish(claim)
                continue
            if self.claims is not None:
                self.ctx.before_commit = partial(self.claims.keep, claim)
            try:
                result = verify_task(self.ctx, task, config)
            except (OSError, GitError, LoopError):
                self.settle(claim, None)
                raise
            except Exception as exc:
                self.settle(claim, None)
                if self.failed_unexpectedly(task, exc):
                    continue
                for rest in ordered[i + 1:]:
                    self.finish(self.attempt(Verdict.SKIPPED, task=rest, reason=(
                        f"not run: handling {task.task.id} failed unexpectedly and left "
                        "the work tree changed")))
                return
            self.finish(result.attempt, claim)
            if result.repo_error is not None:
                self.repo_error(result.repo_error, ordered[i + 1:])
                return
            if not result.go_on:
                # Its recipe left the work tree changed (drift, or killed from outside after
                # writing into it): no later recipe may start there.
                for rest in ordered[i + 1:]:
                    self.finish(self.attempt(Verdict.SKIPPED, task=rest, reason=(
                        f"not run: {task.task.id}'s recipe left the work tree changed")))
                return

    # -- claims across machines ---------------------------------------------------------------

    def take_claim(self, task: eligibility.Classified) -> claims.Claim | Attempt | None:
        """Our claim on the task, or the `skipped` attempt when it is not ours to run."""
        if self.claims is None:
            return None
        label_date = task.label_date.isoformat() if task.label_date else None
        got = self.claims.take(task.task.id, label_date, self.summary.run_id)
        if isinstance(got, claims.Held):
            skipped = self.attempt(Verdict.SKIPPED, task=task, reason=got.reason)
            skipped.claimed_by = got.machine
            return skipped
        if isinstance(got, str):
            return self.attempt(Verdict.SKIPPED, task=task, reason=got)
        return got

    def settle(self, claim: claims.Claim | None, result: Attempt | None) -> None:
        if self.claims is not None:
            self.claims.settle(claim, result)

    def dead_runs_claim(self, p: Attempt) -> claims.Claim | None:
        """The claim of the killed run that left the pending edit `p`."""
        return self.claims.key(p.task_id, p.label_date, p.run_id) if self.claims else None

    def settle_recovered(self, p: Attempt) -> None:
        """Settle the claim of the run whose pending edit this run recovered."""
        self.settle(self.dead_runs_claim(p), p)

    def repo_error(self, reason: str, rest: list[eligibility.Classified]) -> None:
        """The repository's own error (no recipe is to blame); its remaining tasks wait."""
        self.finish(self.attempt(Verdict.ERROR, reason=reason))
        for task in rest:
            self.finish(self.attempt(Verdict.SKIPPED, task=task, reason=f"not run: {reason}"))

    def failed_unexpectedly(self, task: eligibility.Classified, exc: Exception) -> bool:
        """Record an unexpected fault while handling one task as that task's `error`; False when
        it left the work tree changed, so no later recipe of this repository may run."""
        log.error("verify.unexpected_error", run_id=self.summary.run_id, repo=str(self.root),
                  task=task.task.id, exc_type=type(exc).__name__, exc_info=exc)
        self.finish(self.attempt(Verdict.ERROR, task=task, reason=unexpected(exc)))
        return git.work_tree_state(self.root).clean

    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def interrupted(self, tasks: list[eligibility.Classified]) -> None:
        """Record each due task a stop leaves unverified; each is tried again next run."""
        for task in tasks:
            self.finish(self.attempt(Verdict.INTERRUPTED, task=task,
                                     reason="not run: loop-verify was told to stop"))

    def report_refused(self, classified: list[eligibility.Classified]) -> None:
        for c in classified:
            if c.state == eligibility.REFUSED:
                self.finish(self.attempt(Verdict.REFUSED, task=c, reason=c.reason))

    def dry_run(self, classified: list[eligibility.Classified],
                due: list[eligibility.Classified]) -> None:
        self.report_refused(classified)
        if not due:
            return
        try:
            problem = self.precondition(due)
        except (OSError, GitError) as exc:
            problem = str(exc)
        if problem is not None:
            self.finish(self.attempt(Verdict.SKIPPED, reason=problem))
            return
        for task in due:
            # Reported, never recorded: a dry run is neither a pass nor a failure.
            self.summary.results.append(self.attempt("would-run", task=task))
            if self.printer is not None:
                name = repo_name(str(self.root), self.summary.repo_names)
                self.printer(f"would run  {name} {task.task.id}: just {task.recipe}")
            log.info("dryrun.would_run", repo=str(self.root), task=task.task.id,
                     recipe=task.recipe)

    def precondition(self, due: list[eligibility.Classified]) -> str | None:
        """Why the repository may not be worked on now, or None when it is ready."""
        doing = readiness.operation_in_progress(git.git_dir(self.root))
        problem = readiness.not_ready(doing, git.work_tree_state(self.root), self.repo.branch,
                                      git.hidden_from_status(self.root))
        if problem is not None:
            return problem
        facts = git.commit_facts(self.root, self.repo.branch, readiness.verdict_paths(
            [(c.task.path.relative_to(self.root), c.task.folder) for c in due]))
        problem = readiness.cannot_commit(facts)
        if problem is None:
            # A scheduled job often has neither a global git config nor GIT_* identity: every
            # recipe would run for a verdict whose commit git then refuses.
            who = git.committer_problem(self.root)
            if who is not None:
                problem = f"cannot take a commit: git cannot name the committer: {who}"
        return problem
