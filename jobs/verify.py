"""One verification run over every configured repository: the side effects around the rules.

Per repository: read the backlog (pure Python, no process), and only when something is due or an
edit is pending take the repository's lock, recover a pending edit a crash left behind, check the
work tree, then for each due task check the recipe, run it, look for drift, write the verdict into
the task and commit exactly that file.
"""

from __future__ import annotations

import glob
import hashlib
import os
import threading
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from jobs import backlog, eligibility, git, runner, verdicts
from jobs.config import Config, RepoConfig
from jobs.errors import EXIT_FAILED, EXIT_OK, EXIT_UNCHECKED
from jobs.fsutil import LockBusy, atomic_write, exclusive_lock
from jobs.ledger import Attempt, Ledger
from jobs.logs import get_logger
from jobs.output import format_line, repo_name, repo_names, shown

log = get_logger("loop-verify")

FAILING = {"fail", "timeout", "drift"}
UNCHECKED = {"skipped", "locked", "error", "interrupted"}
LOCK_NAME = "loop-verify.lock"

Printer = Callable[[str], None]
Ticker = Callable[[str, float], None]


@dataclass
class RunSummary:
    run_id: str
    today: date
    dry_run: bool
    results: list[Attempt] = field(default_factory=list)
    # How each repository is named in output: two may share a folder name.
    repo_names: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        verdicts_seen = {r.verdict for r in self.results}
        if verdicts_seen & FAILING:
            return EXIT_FAILED
        # A verdict whose commit was refused never reached the task: that too is unchecked.
        if verdicts_seen & UNCHECKED or any(r.edit_state == "restored" for r in self.results):
            return EXIT_UNCHECKED
        return EXIT_OK


def today_in(config: Config) -> date:
    return eligibility.today_in(config.timezone)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except FileNotFoundError:
        return None


def run_once(config: Config, *, today: date | None = None, stop: threading.Event | None = None,
             printer: Printer | None = None, ticker: Ticker | None = None,
             dry_run: bool = False, just: str = "just") -> RunSummary:
    """Verify every due task of every configured repository once."""
    summary = RunSummary(new_run_id(), today or today_in(config), dry_run,
                         repo_names=repo_names(str(r.path) for r in config.repos))
    ledger = None if dry_run else Ledger(config.ledger)
    if not dry_run:
        swept = runner.sweep_abandoned()
        if swept:
            log.warning("run.swept_abandoned", run_id=summary.run_id, processes=swept,
                        reason="left running by a loop-verify that was killed")
    try:
        for repo in config.repos:
            if stop is not None and stop.is_set():
                break
            worker = _RepoRun(config, repo, summary, ledger, stop, printer, ticker, just)
            try:
                worker.run()
            except (OSError, git.GitError) as exc:
                # One repository the filesystem or git cannot serve must not stop the others.
                worker.finish(worker.attempt("skipped", reason=f"cannot work on it: {exc}"))
    finally:
        if ledger is not None:
            ledger.close()
    log.info("run.finished", run_id=summary.run_id, exit_code=summary.exit_code,
             results=len(summary.results), dry_run=dry_run)
    return summary


class _RepoRun:
    def __init__(self, config: Config, repo: RepoConfig, summary: RunSummary,
                 ledger: Ledger | None, stop: threading.Event | None,
                 printer: Printer | None, ticker: Ticker | None, just: str) -> None:
        self.config = config
        self.repo = repo
        self.root = repo.path
        self.summary = summary
        self.ledger = ledger
        self.stop = stop
        self.printer = printer
        self.ticker = ticker
        self.just = just
        self.recipes: frozenset[str] | None = None
        self.justfile: Path | None = None

    # -- recording -----------------------------------------------------------------------------

    def attempt(self, verdict: str, *, task: eligibility.Classified | None = None,
                reason: str | None = None, started: datetime | None = None) -> Attempt:
        now = datetime.now(UTC)
        result = Attempt(
            run_id=self.summary.run_id, started_at=started or now, ended_at=now,
            repo=str(self.root), verdict=verdict, reason=reason)
        if task is not None:
            result.task_id = task.task.id
            result.task_path = str(task.task.path.relative_to(self.root))
            result.recipe = task.recipe
            result.label_date = task.label_date.isoformat() if task.label_date else None
        return result

    def finish(self, result: Attempt, *, recorded: bool = False) -> None:
        storable(result)
        if self.ledger is not None:
            if recorded:
                self.ledger.update(result)
            else:
                self.ledger.record(result)
        self.summary.results.append(result)
        event = {"pass": "verify.passed", "fail": "verify.failed", "timeout": "verify.timeout",
                 "refused": "verify.refused", "skipped": "repo.skipped", "locked": "repo.locked",
                 "drift": "verify.drift", "error": "verify.error",
                 "interrupted": "verify.interrupted"}[result.verdict]
        if self.summary.dry_run:
            event = "dryrun." + event.split(".", 1)[1]
        level = "info" if result.verdict == "pass" else "warning"
        getattr(log, level)(event, run_id=self.summary.run_id, repo=result.repo,
                            task=result.task_id, recipe=result.recipe, reason=result.reason,
                            exit_code=result.exit_code, duration_s=result.duration,
                            output=result.output_path, commit=result.commit_sha,
                            label_date=result.label_date)
        if self.printer is not None:
            self.printer(format_line(result, dry_run=self.summary.dry_run,
                                     names=self.summary.repo_names))

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            scan = backlog.scan(self.root)
        except backlog.BacklogError as exc:
            self.finish(self.attempt("skipped", reason=str(exc)))
            return
        for err in scan.errors:
            log.warning("task.unreadable", repo=str(self.root), path=str(err.path),
                        line=err.line, reason=err.message)
        classified = [c for c in (eligibility.classify(t, scan.config, self.summary.today)
                                  for t in scan.tasks) if c is not None]
        pending = self.ledger.pending(str(self.root)) if self.ledger is not None else []
        due = [c for c in classified if c.state == eligibility.DUE]
        if not due and not pending:
            self.report_refused(classified)
            return
        if self.summary.dry_run:
            self.dry_run(classified, due)
            return
        try:
            gdir = git.git_dir(self.root)
        except (OSError, git.GitError) as exc:
            self.finish(self.attempt("skipped", reason=f"not a git work tree: {exc}"))
            return
        with ExitStack() as stack:
            try:
                stack.enter_context(exclusive_lock(gdir / LOCK_NAME))
            except LockBusy:
                self.finish(self.attempt("locked", reason="another loop-verify holds "
                                         f"{gdir / LOCK_NAME}"))
                return
            if pending:
                # Another run may have finished these while we waited for the lock: ask again.
                pending = self.ledger.pending(str(self.root)) if self.ledger is not None else []
            if pending and not self.recover(pending):
                return
            # Another run may have committed verdicts while we waited: judge the tasks afresh.
            try:
                scan = backlog.scan(self.root)
            except backlog.BacklogError as exc:
                self.finish(self.attempt("skipped", reason=str(exc)))
                return
            classified = [c for c in (eligibility.classify(t, scan.config, self.summary.today)
                                      for t in scan.tasks) if c is not None]
            self.report_refused(classified)
            due = [c for c in classified if c.state == eligibility.DUE]
            if not due:
                return
            problem = self.precondition()
            if problem is not None:
                self.finish(self.attempt("skipped", reason=problem))
                return
            ordered = sorted(due, key=lambda c: str(c.task.path))
            for i, task in enumerate(ordered):
                if self.stop is not None and self.stop.is_set():
                    return
                if not self.verify(task, scan.config):
                    if self.summary.results[-1].verdict == "drift":
                        for rest in ordered[i + 1:]:
                            self.finish(self.attempt("skipped", task=rest, reason=(
                                f"not run: {task.task.id}'s recipe left the work tree changed")))
                    return

    def report_refused(self, classified: list[eligibility.Classified]) -> None:
        for c in classified:
            if c.state == eligibility.REFUSED:
                self.finish(self.attempt("refused", task=c, reason=c.reason))

    def dry_run(self, classified: list[eligibility.Classified],
                due: list[eligibility.Classified]) -> None:
        self.report_refused(classified)
        if not due:
            return
        try:
            problem = self.precondition()
        except (OSError, git.GitError) as exc:
            problem = str(exc)
        if problem is not None:
            self.finish(self.attempt("skipped", reason=problem))
            return
        for task in due:
            # Reported, never recorded: a dry run is neither a pass nor a failure.
            self.summary.results.append(self.attempt("would-run", task=task))
            if self.printer is not None:
                name = repo_name(str(self.root), self.summary.repo_names)
                self.printer(f"would run  {name} {task.task.id}: just {task.recipe}")
            log.info("dryrun.would_run", repo=str(self.root), task=task.task.id,
                     recipe=task.recipe)

    def precondition(self) -> str | None:
        """Why the repository may not be worked on now, or None when it is ready."""
        gdir = git.git_dir(self.root)
        doing = git.operation_in_progress(gdir)
        if doing is not None:
            return doing
        state = git.work_tree_state(self.root)
        if state.branch is None:
            return f"HEAD is detached; {self.repo.branch!r} must be checked out"
        if state.branch != self.repo.branch:
            return f"on branch {state.branch!r}, not {self.repo.branch!r}"
        if not state.clean:
            shown = ", ".join(state.changes[:5]) + (" …" if len(state.changes) > 5 else "")
            return f"work tree not clean: {shown}"
        return None

    # -- crash recovery ------------------------------------------------------------------------

    def recover(self, pending: list[Attempt]) -> bool:
        """Finish or retire edits a killed run left between writing and committing.

        Returns False when the repository must be skipped.
        """
        assert self.ledger is not None
        for p in pending:
            paths = p.edit_paths
            original, target = self.root / paths[0], self.root / paths[-1]
            for stray in self.stray_temp_files(paths):
                # A crash inside the atomic write left its temporary sibling, ours by its name.
                stray.unlink(missing_ok=True)
                log.info("verify.recovered", repo=str(self.root), task=p.task_id,
                         how="removed an unfinished temporary file", path=str(stray))
            current = file_sha256(target)
            if current == p.after_sha256:
                state = git.work_tree_state(self.root)
                if not state.changes:
                    found = git.last_commit(self.root, paths[-1])
                    p.commit_sha = found[0] if found else None
                    p.edit_state = "committed"
                    log.info("verify.recovered", repo=str(self.root), task=p.task_id,
                             how="already committed", commit=p.commit_sha)
                    self.report_recovered(p)
                    continue
                if not set(state.changes) <= set(paths):
                    self.finish(self.attempt("skipped", reason=(
                        "work tree changed beyond the pending edit of "
                        f"{p.task_id}: {', '.join(state.changes[:5])}")))
                    return False
                if len(paths) > 1 and original.exists():
                    original.unlink()
                assert p.commit_message is not None
                try:
                    p.commit_sha = git.commit_paths(self.root, paths, p.commit_message,
                                                   new=paths[1:])
                except git.GitError as exc:
                    self.finish(self.attempt("skipped", reason=(
                        f"cannot commit the pending edit of {p.task_id}: {exc}")))
                    return False
                p.edit_state = "committed"
                log.info("verify.recovered", repo=str(self.root), task=p.task_id,
                         how="committed the pending edit", commit=p.commit_sha)
                self.report_recovered(p)
            else:
                # The crash came before the file was replaced: the verdict never reached the
                # task, which stays eligible and is verified again.
                if len(paths) > 1 and target.exists() and original.exists():
                    target.unlink()
                p.edit_state = "abandoned"
                self.ledger.update(p)
                log.info("verify.recovered", repo=str(self.root), task=p.task_id,
                         how="edit never written; task stays eligible")
        return True

    def stray_temp_files(self, paths: list[str]) -> list[Path]:
        """Temporary siblings `atomic_write` makes for these task files (`.<name>.*.tmp`)."""
        found: list[Path] = []
        for rel in paths:
            path = self.root / rel
            found.extend(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
        return found

    def report_recovered(self, p: Attempt) -> None:
        # The killed run never reported this verdict: this run does, so a failure still reaches
        # the exit code and the output.
        note = "verdict of an interrupted run, finished by this one"
        p.reason = f"{p.reason}; {note}" if p.reason else note
        self.finish(p, recorded=True)

    # -- one task ------------------------------------------------------------------------------

    def output_path(self, task: eligibility.Classified) -> Path:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in task.task.id)
        folder = self.config.state_dir / "runs" / self.summary.run_id
        stem = f"{self.root.name}-{safe}"
        path, n = folder / f"{stem}.log", 2
        # Two configured repositories may share a folder name (~/a/app, ~/b/app) and a task id:
        # each verdict must keep pointing at its own output.
        while os.path.exists(path):  # never raises: an unwritable state_dir is the runner's error
            path, n = folder / f"{stem}-{n}.log", n + 1
        return path

    def verify(self, task: eligibility.Classified, config: backlog.BacklogConfig) -> bool:
        """Verify one due task; False when the rest of the repository must be skipped."""
        assert task.recipe is not None and task.label is not None
        started = datetime.now(UTC)
        timeout = self.config.timeout_for(self.repo)
        unsafe = self.unsafe_to_edit(task, config, timeout)
        if unsafe is not None:
            # A verdict that could not be written is not worth running the recipe for.
            self.finish(self.attempt("error", task=task, started=started, reason=unsafe))
            return True
        outcome = self.check_recipe(task, timeout)
        if isinstance(outcome, Attempt):
            # `just` cannot run here: this task is tried again next time; so are the others.
            self.finish(outcome)
            return True
        if outcome is None:
            head = git.head_sha(self.root)
            result = self.run_recipe(task, timeout)
            if isinstance(result, Attempt):
                self.finish(result)
                return result.verdict != "interrupted"
            outcome = result
            drift = git.work_tree_state(self.root)
            # A recipe that switched branches or committed leaves a clean tree, but the verdict
            # would then be committed somewhere else, or on top of the recipe's own commit.
            moved = self.moved_head(drift.branch, head)
            if not drift.clean or moved is not None:
                changed = ("the recipe changed the work tree: " + ", ".join(drift.changes)
                           if not drift.clean else None)
                att = self.attempt("drift", task=task, started=started, reason="; ".join(
                    r for r in (changed, moved) if r is not None))
                att.exit_code, att.duration = outcome.exit_code, outcome.duration
                att.output_path = outcome.output_path
                self.finish(att)
                return False
        self.write_verdict(task, config, outcome, started)
        return True

    def moved_head(self, branch: str | None, head: str) -> str | None:
        """How the recipe moved HEAD (another branch, detached, a new commit), or None."""
        if branch != self.repo.branch:
            where = "detached HEAD" if branch is None else f"branch {branch!r}"
            return f"the recipe left {where} checked out, not {self.repo.branch!r}"
        now = git.head_sha(self.root)
        if now != head:
            return f"the recipe moved {branch!r} from {head[:10]} to {now[:10]}"
        return None

    def unsafe_to_edit(self, task: eligibility.Classified, config: backlog.BacklogConfig,
                       timeout: float) -> str | None:
        """Why neither verdict could be written into this file safely, or None."""
        assert task.recipe is not None and task.label is not None
        if task.task.path.is_symlink():
            # Replacing it atomically would commit a regular file in the link's place and leave
            # the file it points to unchanged.
            return "cannot edit the task file safely: it is a symbolic link"
        now = datetime.now(UTC)
        try:
            for verdict in (verdicts.PASS, verdicts.FAIL):
                probe = verdicts.Outcome(verdict, task.recipe, exit_code=1, timeout=timeout)
                verdicts.apply(task.task.raw, probe, task.label, config.reopen_status, now)
        except backlog.TaskEditError as exc:
            return f"cannot edit the task file safely: {exc}"
        return None

    def check_recipe(self, task: eligibility.Classified,
                     timeout: float) -> verdicts.Outcome | Attempt | None:
        """A failed Outcome when the recipe cannot exist, an error Attempt, or None to run it."""
        assert task.recipe is not None
        if self.recipes is None:
            self.justfile = runner.find_justfile(self.root)
            if self.justfile is None:
                return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                        not_run="no justfile in the repository root")
            try:
                self.recipes = runner.list_recipes(self.justfile, self.root, just=self.just)
            except runner.JustfileInvalid as exc:
                return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                        not_run=f"the justfile cannot be read: {exc.message}")
            except runner.RecipeError as exc:
                return self.attempt("error", task=task, reason=str(exc))
        if task.recipe not in self.recipes:
            return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                    not_run=f"the justfile has no recipe {task.recipe}")
        return None

    def run_recipe(self, task: eligibility.Classified,
                   timeout: float) -> verdicts.Outcome | Attempt:
        assert task.recipe is not None and self.justfile is not None
        started = datetime.now(UTC)
        out = self.output_path(task)
        tick = None
        if self.ticker is not None:
            ticker, label = self.ticker, f"{task.task.id} just {task.recipe}"

            def tick(elapsed: float) -> None:
                ticker(label, elapsed)

        log.info("verify.started", run_id=self.summary.run_id, repo=str(self.root),
                 task=task.task.id, recipe=task.recipe, timeout_s=timeout)
        res = runner.run_recipe(self.root, self.justfile, task.recipe, timeout=timeout,
                                kill_grace=self.config.kill_grace, output_path=out,
                                just=self.just, on_tick=tick, stop=self.stop)
        if res.outcome in ("error", "interrupted"):
            att = self.attempt(res.outcome, task=task, started=started,
                               reason=res.error or "stopped while the recipe ran")
            att.exit_code, att.duration, att.output_path = (res.exit_code, res.duration,
                                                            str(res.output_path))
            return att
        verdict = (verdicts.TIMEOUT if res.outcome == "timed_out"
                   else verdicts.PASS if res.exit_code == 0 else verdicts.FAIL)
        return verdicts.Outcome(verdict, task.recipe, exit_code=res.exit_code,
                                duration=res.duration, timeout=timeout, tail=res.tail,
                                output_path=str(res.output_path))

    def write_verdict(self, task: eligibility.Classified, config: backlog.BacklogConfig,
                      outcome: verdicts.Outcome, started: datetime) -> None:
        assert self.ledger is not None and task.label is not None
        path = task.task.path
        result = self.attempt(outcome.verdict, task=task, started=started)
        result.exit_code, result.duration = outcome.exit_code, outcome.duration
        result.output_path = outcome.output_path
        result.reason = outcome.not_run
        try:
            before = path.read_bytes()
        except OSError as exc:
            result.verdict, result.reason = "error", f"cannot read the task file again: {exc}"
            self.finish(result)
            return
        if before != task.task.raw:
            result.verdict, result.reason = "error", "the task file changed during the run"
            self.finish(result)
            return
        now = datetime.now(UTC)
        try:
            after = verdicts.apply(before, outcome, task.label, config.reopen_status, now)
        except backlog.TaskEditError as exc:
            result.verdict = "error"
            result.reason = f"cannot edit the task file safely: {exc}"
            self.finish(result)
            return
        target = path
        if outcome.verdict != verdicts.PASS and task.task.folder == "completed":
            # The Backlog CLI and board ignore completed/: a reopened task must be seen again.
            target = self.root / "backlog" / "tasks" / path.name
            if target.exists():
                result.verdict, result.reason = "error", (
                    f"cannot reopen {task.task.id}: {target.relative_to(self.root)} exists")
                self.finish(result)
                return
        rel = [str(path.relative_to(self.root))]
        if target != path:
            rel.append(str(target.relative_to(self.root)))
        result.edit_state = "pending"
        result.before_sha256, result.after_sha256 = sha256(before), sha256(after)
        result.edit_paths = rel
        result.commit_message = verdicts.commit_message(task.task.id, outcome)
        self.ledger.record(storable(result))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            backlog.write_task(target, after)
            if target != path:
                path.unlink()
        except OSError as exc:
            if target != path:
                target.unlink(missing_ok=True)
            result.verdict, result.edit_state = "error", "abandoned"
            result.reason = f"cannot write the task file: {exc}"
            self.finish(result, recorded=True)
            return
        try:
            result.commit_sha = git.commit_paths(self.root, rel, result.commit_message,
                                                 new=rel[1:])
            result.edit_state = "committed"
        except git.GitError as exc:
            if target != path:
                target.unlink()
            atomic_write(path, before)
            result.edit_state = "restored"
            result.reason = f"commit failed, task file restored: {exc}"
            log.error("verify.commit_failed", repo=str(self.root), task=task.task.id,
                      reason=str(exc))
        result.ended_at = datetime.now(UTC)
        self.finish(result, recorded=True)


def storable(result: Attempt) -> Attempt:
    """The attempt with its free-text fields fit for the ledger, the terminal and the log.

    A recipe may leave a file whose name is not UTF-8; its path in a reason would otherwise make
    the ledger write (and every later run's `skipped` record) fail.
    """
    for name in ("reason", "task_path", "output_path"):
        value = getattr(result, name)
        if value is not None:
            setattr(result, name, shown(value))
    return result
