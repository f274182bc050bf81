"""One verification run over every configured repository: the driver around the repositories.

The run records itself in the ledger's `runs` table when it starts and when it ends (spooled
when the ledger cannot be reached), logs `run.started` and `run.finished`, pings the heartbeat
and tells the owner (jobs/verify/tell.py). Each repository is `RepoRun`'s (jobs/verify/repo_run.py).
A dry run is no run: no row, no ping, no message.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, date, datetime

from jobs.config.load import Config
from jobs.core import statedir as retention
from jobs.core.errors import EXIT_UNCHECKED, LoopError
from jobs.core.logs import bound, get_logger, new_run_id
from jobs.git.run import GitError
from jobs.ledger.model import Run, Verdict
from jobs.ledger.replay import flush_spool
from jobs.ledger.runs import save_run
from jobs.ledger.spool import SPOOL_DIR
from jobs.ledger.store import Ledger
from jobs.process import recipe as runner
from jobs.verify import tell
from jobs.verify.context import Ticker
from jobs.verify.repo_run import RepoRun
from jobs.verify.rules import eligibility
from jobs.verify.summary import Printer, RunSummary, closing_line, unexpected
from jobs.verify.terminal import repo_names

log = get_logger("loop-verify")

__all__ = ["RunSummary", "run_once", "today_in"]


def today_in(config: Config) -> date:
    return eligibility.today_in(config.timezone)


def run_once(config: Config, *, today: date | None = None, stop: threading.Event | None = None,
             printer: Printer | None = None, ticker: Ticker | None = None,
             dry_run: bool = False, just: str = "just", trigger: str = "manual") -> RunSummary:
    """Verify every due task of every configured repository once."""
    summary = RunSummary(new_run_id(), today or today_in(config), dry_run,
                         repo_names=repo_names(str(r.path) for r in config.repos))
    with bound(run_id=summary.run_id):
        began = time.monotonic()
        log.info("run.started", trigger=trigger, config=str(config.source or ""),
                 dry_run=dry_run, repos=len(config.repos), today=summary.today.isoformat())
        if dry_run:
            _run_all(config, summary, None, stop, printer, ticker, just)
            _finished(summary, time.monotonic() - began)
            return summary
        _recorded_run(config, summary, stop, printer, ticker, just, trigger, began)
    return summary


def _recorded_run(config: Config, summary: RunSummary, stop: threading.Event | None,
                  printer: Printer | None, ticker: Ticker | None, just: str, trigger: str,
                  began: float) -> None:
    """The run between its heartbeat pings, recorded at its start and end."""
    tell.ping(config, "start")
    run = Run(run_id=summary.run_id, machine=config.machine, trigger=trigger,
              started_at=datetime.now(UTC),
              config=str(config.source) if config.source is not None else None)
    ledger: Ledger | None = None
    cut_short = EXIT_UNCHECKED  # the exit code of a fault that ends the run early
    completed = False
    try:
        ledger = Ledger(config.ledger, machine=config.machine,
                        spool_dir=config.state_dir / SPOOL_DIR, give_up=True)
        if ledger.unreachable:
            summary.ledger_lost = ledger.open_error
        save_run(ledger, run)
        if not ledger.unreachable:
            # Verdicts an earlier run could not write are written before anything new happens.
            flush_spool(ledger)
        retention.prune_outputs(config.state_dir, config.output_retention, datetime.now(UTC))
        _run_all(config, summary, ledger, stop, printer, ticker, just)
        completed = True
    except LoopError as exc:
        cut_short = exc.exit_code
        raise
    finally:
        _ended(config, summary, run, ledger, began, None if completed else cut_short)


def _ended(config: Config, summary: RunSummary, run: Run, ledger: Ledger | None, began: float,
           cut_short: int | None) -> None:
    """Record, log, ping and tell how the run ended, whether it completed or was cut short by a
    fault that `cli_entry` reports (with that fault's exit code: 2 for a ledger driver that is
    not installed, else 3)."""
    if ledger is not None:
        summary.spooled = ledger.spooled
    exit_code = summary.exit_code if cut_short is None else cut_short
    run.ended_at, run.exit_code, run.counts = datetime.now(UTC), exit_code, summary.counts()
    try:
        if ledger is not None:
            save_run(ledger, run)
    except LoopError as exc:
        log.error("run.not_recorded", reason=exc.message)
    finally:
        if ledger is not None:
            ledger.close()
    seconds = time.monotonic() - began
    _finished(summary, seconds, exit_code)
    tell.ping(config, str(exit_code), body_text=closing_line(summary.counts(), seconds))
    subject = tell.title(config.machine, summary.results, interrupted=summary.interrupted,
                         ledger_lost=summary.ledger_lost is not None)
    tell.tell(config, exit_code, subject, tell.body(
        summary.results, summary.repo_names,
        tell.review_command(config, summary.today.isoformat())))


def _finished(summary: RunSummary, seconds: float, exit_code: int | None = None) -> None:
    summary.seconds = seconds
    code = summary.exit_code if exit_code is None else exit_code
    if summary.interrupted:
        log.warning("run.interrupted", exit_code=code,
                    interrupted=sum(r.verdict == Verdict.INTERRUPTED for r in summary.results))
    log.info("run.finished", exit_code=code, results=len(summary.results),
             dry_run=summary.dry_run, spooled=summary.spooled, counts=summary.counts(),
             duration_s=round(seconds, 3), ledger_lost=summary.ledger_lost)


def _run_all(config: Config, summary: RunSummary, ledger: Ledger | None,
             stop: threading.Event | None, printer: Printer | None, ticker: Ticker | None,
             just: str) -> None:
    dry_run = summary.dry_run
    # The run's claim on the recipes it starts: a later run may sweep them only if this one dies.
    scope = runner.Scope(None if dry_run else config.state_dir, run_id=summary.run_id)
    with scope:
        for repo in config.repos:
            # After a stop every repository is still read, so that each of its due tasks is
            # recorded `interrupted` rather than silently left out.
            worker = RepoRun(config, repo, summary, ledger, stop, printer, ticker, just, scope)
            try:
                worker.run()
            except (OSError, GitError) as exc:
                # One repository the filesystem or git cannot serve must not stop the others.
                worker.finish(worker.attempt(Verdict.SKIPPED, reason=f"cannot work on it: {exc}"))
            except LoopError:
                raise  # neither the ledger nor its spool can be written: nothing can be recorded
            except Exception as exc:
                # Nor may one repository that trips on something unexpected.
                log.error("repo.unexpected_error", repo=str(repo.path),
                          exc_type=type(exc).__name__, exc_info=exc)
                worker.finish(worker.attempt(Verdict.ERROR, reason=unexpected(exc)))
    if stop is not None and stop.is_set():
        summary.interrupted = True
