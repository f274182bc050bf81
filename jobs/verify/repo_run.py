"""One repository in one run: read its backlog, take its lock, recover what a killed run left,
check it is ready, then verify each due task in turn (`verify_task`), each claimed in the ledger
first. Once the ledger is given up on, every remaining due task is only reported `skipped`
("the ledger is unreachable"): nothing waits for the ledger again, nothing runs unclaimed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from functools import partial

from jobs.backlog import scan as backlog
from jobs.config.load import Config, RepoConfig
from jobs.core.errors import LoopError
from jobs.core.fs import LockBusy, exclusive_dir_lock
from jobs.core.logs import get_logger
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger import claims
from jobs.ledger.model import FAILING, Attempt, Verdict
from jobs.ledger.store import Ledger, LedgerError
from jobs.process import recipe as runner
from jobs.verify import claims as clone_claims
from jobs.verify.context import RepoContext, Ticker
from jobs.verify.recipes import recipe_problems
from jobs.verify.recover import commit_kept, recover_pending
from jobs.verify.rules import edit_plan, eligibility, readiness
from jobs.verify.summary import EVENTS, Printer, RunSummary, passed_for_good, unexpected
from jobs.verify.task import storable, verify_task
from jobs.verify.terminal import format_line, natural_key, one_line, repo_name

log = get_logger("loop-verify")

LEDGER_GONE = clone_claims.LEDGER_GONE


def in_natural_order(tasks: list[eligibility.Classified]) -> list[eligibility.Classified]:
    """TASK-5 before TASK-10; the path breaks ties (two files may claim one id)."""
    return sorted(tasks, key=lambda c: (natural_key(c.task.id), str(c.task.path)))


class RepoRun:
    def __init__(self, config: Config, repo: RepoConfig, summary: RunSummary,
                 ledger: Ledger | None, stop: threading.Event | None,
                 printer: Printer | None, ticker: Ticker | None, just: str,
                 scope: runner.Scope | None = None) -> None:
        self.ctx = RepoContext(config, repo, summary.run_id, ledger, stop, ticker, just,
                               scope=scope, name=repo_name(str(repo.path), summary.repo_names))
        self.repo = repo
        self.root = repo.path
        self.summary = summary
        self.ledger = ledger
        self.stop = stop
        self.printer = printer
        ttl = config.timeout_for(repo) + config.kill_grace + clone_claims.CLAIM_MARGIN
        self.claims = (clone_claims.RepoClaims(ledger, repo.path, repo.branch, ttl, is_dead=(
            scope.run_is_dead if scope else None)) if ledger is not None else None)
        # Refused tasks, each reported when the tasks before it in natural order have been.
        self.refused: list[eligibility.Classified] = []

    # -- recording -----------------------------------------------------------------------------

    def attempt(self, verdict: str, *, task: eligibility.Classified | None = None,
                reason: str | None = None, started: datetime | None = None) -> Attempt:
        return self.ctx.attempt(verdict, task=task, reason=reason, started=started)

    def finish(self, result: Attempt, claim: claims.Claim | None = None) -> None:
        """Record (or, when already in the ledger, update), log and print one attempt; with the
        attempt's `claim`, settle that in the same ledger transaction."""
        if result.task_id is not None:
            self.report_refused_before(result.task_id)
        storable(result)
        if self.claims is not None and result.repo_identity is None:
            result.repo_identity = self.claims.repo_identity()
        if self.ledger is not None:
            claims.save_settled(self.ledger, result, claim)
        self.summary.results.append(result)
        event = EVENTS[Verdict(result.verdict)]
        if self.summary.dry_run:
            event = "dryrun." + event.split(".", 1)[1]
        level = ("info" if result.verdict == Verdict.PASS
                 else "error" if result.verdict in FAILING else "warning")
        getattr(log, level)(event, run_id=self.summary.run_id, repo=result.repo,
                            task=result.task_id, recipe=result.recipe, reason=result.reason,
                            exit_code=result.exit_code, duration_s=result.duration,
                            output=result.output_path, commit=result.commit_sha,
                            label_date=result.label_date)
        if self.printer is not None:
            self.printer(format_line(result, dry_run=self.summary.dry_run,
                                     names=self.summary.repo_names), passed_for_good(result))

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
        try:
            self._run()
        finally:
            self.report_refused_before(None)

    def _run(self) -> None:
        judged = self.classify()
        if judged is None:
            return
        backlog_config, classified = judged
        due = in_natural_order([c for c in classified if c.state == eligibility.DUE])
        self.summary.passed_over.extend((str(self.root), c) for c in classified
                                        if c.state not in (eligibility.DUE, eligibility.REFUSED))
        if self.stopped():
            self.report_refused(classified)
            self.interrupted(due)
            return
        if self.summary.dry_run:
            self.dry_run(backlog_config, classified, due)
            return
        if self.ledger_gone():
            self.report_refused(classified)
            self.given_up(due)
            return
        pending = self.read_ledger(lambda ledger: ledger.pending(str(self.root)))
        if pending is None:
            self.report_refused(classified)
            self.given_up(due)
            return
        if not due and not pending:
            self.report_refused(classified)
            return
        try:
            gdir = git.git_dir(self.root)
        except (OSError, GitError) as exc:
            self.finish(self.attempt(Verdict.SKIPPED, reason=f"not a git work tree: {exc}"))
            return
        with ExitStack() as stack:
            try:  # on the git folder itself, which no recipe's clean-up deletes
                stack.enter_context(exclusive_dir_lock(gdir))
            except LockBusy:
                self.finish(self.attempt(Verdict.LOCKED, reason="another loop-verify holds "
                                         f"the lock on {gdir}"))
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
            again = self.read_ledger(lambda ledger: ledger.pending(str(self.root)))
            if again is None:
                self.rejudged_given_up()
                return
            pending = again
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
        kept_rows = self.read_ledger(lambda ledger: ledger.kept(str(self.root)))
        if kept_rows is None:
            self.given_up(in_natural_order(due))
            return
        if kept_rows:
            done = commit_kept(self.ctx, kept_rows, self.finish, self.settle_recovered)
            due = [c for c in due if str(c.task.path.relative_to(self.root)) not in done.settled]
            if done.repo_error is not None:
                self.repo_error(done.repo_error, due)
                return
        ordered = in_natural_order(due)
        for i, task in enumerate(ordered):
            if self.stopped():
                self.interrupted(ordered[i:])
                return
            if self.ledger_gone():
                self.given_up(ordered[i:])
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
        got = self.claims.take(task.task.id, label_date, str(task.task.path.relative_to(self.root)),
                               self.summary.run_id)
        if isinstance(got, claims.Held):
            assert self.ledger is not None
            skipped = self.attempt(Verdict.SKIPPED, task=task,
                                   reason=got.reason_for(self.ledger.machine))
            # Checked, here or elsewhere: not "could not be checked".
            skipped.claimed_by = got.machine
            return skipped
        if isinstance(got, str):
            if got == LEDGER_GONE and self.summary.ledger_lost is None:
                self.summary.ledger_lost = LEDGER_GONE
            return self.attempt(Verdict.SKIPPED, task=task, reason=got)
        return got

    def settle(self, claim: claims.Claim | None, result: Attempt | None) -> None:
        if self.claims is not None:
            self.claims.settle(claim, result)

    def dead_runs_claim(self, p: Attempt) -> claims.Claim | None:
        """The claim of the killed run that left the pending edit `p`."""
        return self.claims.recovered(p) if self.claims else None

    def settle_recovered(self, p: Attempt) -> None:
        """Settle the claim of the run whose pending edit or kept verdict this run committed
        or dropped."""
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

    # -- the ledger given up on ----------------------------------------------------------------

    def ledger_gone(self) -> bool:
        return self.ledger is not None and self.ledger.unreachable

    def read_ledger(self, read: Callable[[Ledger], list[Attempt]]) -> list[Attempt] | None:
        """What the ledger says (nothing without one); None when it could not be read: the
        ledger is then given up on for the rest of the run."""
        if self.ledger is None:
            return []
        try:
            return read(self.ledger)
        except LedgerError as exc:
            self.ledger.unreachable = True
            self.summary.ledger_lost = self.summary.ledger_lost or str(exc)
            return None

    def rejudged_given_up(self) -> None:
        judged = self.classify()
        if judged is not None:
            self.given_up(in_natural_order([c for c in judged[1]
                                            if c.state == eligibility.DUE]))

    def given_up(self, tasks: list[eligibility.Classified]) -> None:
        """Each due task is reported, spooled and logged `skipped`: without a ledger nothing can
        be claimed, so nothing runs; each is tried again on the next run."""
        if self.ledger is not None and self.summary.ledger_lost is None:
            self.summary.ledger_lost = LEDGER_GONE
        for task in tasks:
            self.finish(self.attempt(Verdict.SKIPPED, task=task, reason=LEDGER_GONE))

    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def interrupted(self, tasks: list[eligibility.Classified]) -> None:
        """Record each due task a stop leaves unverified; each is tried again next run."""
        for task in tasks:
            self.finish(self.attempt(Verdict.INTERRUPTED, task=task,
                                     reason="not run: loop-verify was told to stop"))

    def report_refused(self, classified: list[eligibility.Classified]) -> None:
        """The refused tasks, reported in their natural place among the others (TASK-5 after
        TASK-1's verdict, before TASK-7's), the last of them when the repository is done."""
        self.refused = in_natural_order([c for c in classified
                                         if c.state == eligibility.REFUSED])

    def report_refused_before(self, task_id: str | None) -> None:
        """Report the refused tasks that come before `task_id` (all of them for None)."""
        while self.refused and (task_id is None or natural_key(self.refused[0].task.id)
                                < natural_key(task_id)):
            c = self.refused.pop(0)
            self.finish(self.attempt(Verdict.REFUSED, task=c, reason=c.reason))

    def dry_run(self, config: backlog.BacklogConfig, classified: list[eligibility.Classified],
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
        # What the run checks before each recipe, in its order: the task file it must be able to
        # edit (else `error`), then the recipe in the justfile (else `fail`).
        now, timeout = datetime.now(UTC), self.ctx.config.timeout_for(self.repo)
        unsafe = {id(t): edit_plan.unsafe_to_edit(t, config, timeout, now) for t in due}
        missing = recipe_problems(self.root, [t.recipe for t in due
                                              if t.recipe and unsafe[id(t)] is None],
                                  self.ctx.just)
        for task in in_natural_order(due):
            self.report_refused_before(task.task.id)
            # Reported, never recorded: a dry run is neither a pass nor a failure.
            problem = unsafe[id(task)] or missing.get(task.recipe or "")
            self.summary.results.append(self.attempt("would-run", task=task, reason=problem))
            if self.printer is not None:
                name = repo_name(str(self.root), self.summary.repo_names)
                line = f"would run  {name} {task.task.id}: just {task.recipe}"
                if problem:
                    would = "would error" if unsafe[id(task)] else "would fail"
                    line = f"{would} {name} {task.task.id}: just {task.recipe}: {problem}"
                self.printer(one_line(line), False)
            log.info("dryrun.would_run", repo=str(self.root), task=task.task.id,
                     recipe=task.recipe, reason=problem)

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
