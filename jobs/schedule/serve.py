"""`loop-verify serve`: the daily verification run in-process by APScheduler 3.11.

Why it is built the way it is (each point is a trap APScheduler 3.x sets for a daily job):

* The job store is persistent (SQLite in `state_dir`), so the next run time survives a restart and a
  run missed while the process was down is still known at start-up.
* The scheduler starts *paused*; the job is looked up by its fixed id and only added when missing.
  Re-adding it with `replace_existing=True` would recompute the next run time from "now" and
  silently forget the missed run. A changed schedule or zone is applied with the same care: a run
  that is already overdue keeps its time, so it still runs.
* `misfire_grace_time` is 12 hours (APScheduler's default of one second drops any run that starts
  late), `coalesce` turns several missed days into one run, `max_instances=1` forbids overlap. A
  run more than 12 hours late is skipped by APScheduler; we log it as `scheduler.missed`.
* APScheduler's loop processes due jobs once more after `shutdown()`, even when the scheduler was
  paused, which submits an overdue run to a dead executor and moves its time to tomorrow. The
  subclass below refuses to process jobs once stopped, so stopping never consumes a run.
* Its loop waits on a monotonic clock that does not advance while the machine sleeps; the main
  thread nudges it once a minute so a run due during sleep starts soon after wake.
* Job stores must never be shared between schedulers, so one `serve` per state directory holds an
  exclusive lock for its whole life.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import sqlalchemy as sa
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.triggers.base import BaseTrigger

from jobs.config.load import Config, load_config
from jobs.core.errors import EXIT_UNCHECKED, LoopError
from jobs.core.fs import LockBusy, exclusive_lock
from jobs.core.logs import get_logger
from jobs.schedule.daily import due_run
from jobs.schedule.jobstore import (
    JOB_ID,
    MISFIRE_GRACE_SECONDS,
    DailyScheduler,
    JobFunc,
    build_scheduler,
    daily_trigger,
    ensure_job,
    iso_utc,
    scheduler_db_path,
)

SERVE_LOCK = "serve.lock"
# How often the main thread wakes the scheduler loop so time lost in sleep is noticed.
WAKE_INTERVAL = 60.0
POLL_INTERVAL = 0.5  # how soon the main loop notices a stop

EXIT_SERVE_BUSY = EXIT_UNCHECKED

# Set when `serve` stops (SIGTERM/SIGINT/SIGHUP): the verification run sees it, stops its recipe
# (the whole process tree), records the attempt as interrupted and edits no task.
STOP = threading.Event()

_log = get_logger("loop-jobs.scheduler")


class ServeBusy(LoopError):
    """Another `loop-verify serve` holds this state directory."""


def run_daily_verification(config_path: str | None = None) -> int:
    """The scheduled job: reload the configuration and run every due verification once.

    Stored in the job store by reference, so it must stay a module-level function with picklable
    arguments. The configuration is read afresh each morning so edits apply without a restart.
    """
    try:
        config = load_config(config_path)
    except LoopError as exc:
        _log.error("scheduler.run_error", error=exc.message, config=config_path)
        return exc.exit_code
    from jobs.verify.run import run_once

    _log.info("scheduler.run_started", config=config_path)
    try:
        summary = run_once(config, stop=STOP, printer=lambda line, _passed: print(line, flush=True),
                           trigger="serve")
    except LoopError as exc:
        _log.error("scheduler.run_error", error=exc.message, config=config_path)
        return exc.exit_code
    exit_code: int = summary.exit_code
    return exit_code


def _on_event(trigger: BaseTrigger) -> Callable[[JobExecutionEvent], None]:
    # Runs in the executor thread, possibly while shutdown() holds the job store lock: compute the
    # next run time from the trigger instead of asking the scheduler.
    def listener(event: JobExecutionEvent) -> None:
        if event.job_id != JOB_ID:
            return
        now = datetime.now(UTC)
        scheduled = event.scheduled_run_time
        if event.code == EVENT_JOB_MISSED:
            _log.warning("scheduler.missed", job_id=JOB_ID, scheduled_run_time=iso_utc(scheduled),
                         late_by_seconds=round((now - scheduled).total_seconds(), 1),
                         misfire_grace_seconds=MISFIRE_GRACE_SECONDS)
        elif event.code == EVENT_JOB_ERROR:
            _log.error("scheduler.run_failed", job_id=JOB_ID, scheduled_run_time=iso_utc(scheduled),
                       error=repr(event.exception))
        else:
            _log.info("scheduler.run_finished", job_id=JOB_ID,
                      scheduled_run_time=iso_utc(scheduled), exit_code=event.retval)
        if not STOP.is_set():
            _log.info("scheduler.next_run", job_id=JOB_ID,
                      next_run_time=iso_utc(trigger.get_next_fire_time(None, now)))

    return listener


@contextmanager
def serve_lock(state_dir: Path) -> Iterator[None]:
    """One scheduler per job store: a second `serve` on the same state directory is refused."""
    path = state_dir / SERVE_LOCK
    try:
        with exclusive_lock(path):
            yield
    except LockBusy:
        holder = ""
        try:
            pid = path.read_text(encoding="utf-8").strip()
            holder = f" (pid {pid})" if pid else ""
        except OSError:
            pass
        raise ServeBusy(f"another `loop-verify serve` is already running for {state_dir}{holder};"
                        " stop it first", EXIT_SERVE_BUSY) from None


def serve(config: Config, *, job: JobFunc = run_daily_verification,
          trigger: BaseTrigger | None = None, stop: threading.Event = STOP,
          install_signal_handlers: bool = True,
          on_ready: Callable[[datetime | None], None] | None = None) -> int:
    """Run the daily job until SIGTERM/SIGINT/SIGHUP (or until `stop` is set); return the exit code.

    `job` and `trigger` are injectable so tests can drive the scheduler with a job that records its
    calls and a trigger a few seconds ahead; the command line always uses the defaults.
    """
    trigger = trigger or daily_trigger(config)
    config_path = str(config.source.resolve()) if config.source is not None else None
    held = ExitStack()
    with _state_dir_errors(config.state_dir):
        held.enter_context(serve_lock(config.state_dir))
    with held:
        stop.clear()
        STOP.clear()
        signals = _SignalPipe() if install_signal_handlers else None
        try:
            return _serve_locked(config, trigger, job, {"config_path": config_path}, stop,
                                 on_ready, signals)
        finally:
            if signals is not None:
                signals.close()


@contextmanager
def _state_dir_errors(state_dir: Path) -> Iterator[None]:
    """A state directory or job store that cannot be opened stops `serve` with one line (exit 3,
    as an unwritable state_dir does for `run`), not a traceback."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(state_dir) else ""
        raise LoopError(f"cannot use the state directory {state_dir}: {exc.strerror or exc}{where}",
                        EXIT_UNCHECKED) from None
    except sa.exc.SQLAlchemyError as exc:
        reason = getattr(exc, "orig", None) or exc
        raise LoopError(f"cannot open the scheduler's job store {scheduler_db_path(state_dir)}: "
                        f"{reason} (move the file aside to start afresh)",
                        EXIT_UNCHECKED) from None


def _start_paused(config: Config, trigger: BaseTrigger, job: JobFunc,
                  kwargs: dict[str, Any], now: datetime) -> tuple[DailyScheduler, datetime | None]:
    """The scheduler started paused with its job in place; on a store that cannot be opened it
    is left stopped and the error is raised."""
    scheduler = build_scheduler(config)
    scheduler.add_listener(_on_event(trigger),
                           EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)
    try:
        scheduler.start(paused=True)
    except BaseException:
        # start() fails before the scheduler counts as running; close what it opened.
        for executor in scheduler._executors.values():
            executor.shutdown(wait=False)
        for store in scheduler._jobstores.values():
            store.shutdown()
        raise
    try:
        return scheduler, ensure_job(scheduler, trigger, job, kwargs,
                                     state_dir=config.state_dir, now=now)
    except BaseException:
        scheduler.shutdown(wait=False)
        raise


def _serve_locked(config: Config, trigger: BaseTrigger, job: JobFunc, kwargs: dict[str, Any],
                  stop: threading.Event,
                  on_ready: Callable[[datetime | None], None] | None,
                  signals: _SignalPipe | None = None) -> int:
    now = datetime.now(UTC)
    with _state_dir_errors(config.state_dir):
        scheduler, next_run = _start_paused(config, trigger, job, kwargs, now)
    try:
        _log.info("scheduler.started", job_id=JOB_ID, schedule=config.schedule_text,
                  timezone=str(trigger.timezone), state_dir=str(config.state_dir))
        due = due_run(next_run, trigger, now)
        if due is not None:
            late = (now - due).total_seconds()
            _log.info("scheduler.catch_up", job_id=JOB_ID, scheduled_run_time=iso_utc(due),
                      first_missed_run_time=iso_utc(next_run), late_by_seconds=round(late, 1),
                      will_run=late <= MISFIRE_GRACE_SECONDS)
        _log.info("scheduler.next_run", job_id=JOB_ID, next_run_time=iso_utc(next_run))
        print(f"loop-verify serve: daily at {config.schedule_text} ({trigger.timezone}); "
              f"next run {iso_utc(next_run)}", flush=True)
        if on_ready is not None:
            on_ready(next_run)
        if not stop.is_set():
            scheduler.resume()
        next_wake = time.monotonic() + WAKE_INTERVAL
        while not stop.is_set():
            if signals is not None:
                if signals.wait(POLL_INTERVAL):
                    stop.set()  # here in the loop, never inside a signal handler
                    break
            else:
                stop.wait(POLL_INTERVAL)
            if time.monotonic() >= next_wake:
                scheduler.wakeup()
                next_wake = time.monotonic() + WAKE_INTERVAL
        _log.info("scheduler.stopping", job_id=JOB_ID)
        STOP.set()  # the running verification, if any, stops its recipe and returns
    finally:
        # Waits for a running verification, which has seen `stop` and is winding down.
        scheduler.shutdown(wait=True)
    _log.info("scheduler.stopped", job_id=JOB_ID)
    print("loop-verify serve: stopped", flush=True)
    return 0


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _SignalPipe:
    """SIGTERM, SIGINT and SIGHUP reach the main loop as bytes on a pipe (`signal.set_wakeup_fd`).

    The Python-level handler does nothing: a handler that set a `threading.Event` could run while
    the interrupted main thread held that very Event's lock (inside `Event.wait`) and deadlock the
    daemon on its way out.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        for fd in (self.read_fd, self.write_fd):
            os.set_blocking(fd, False)
        self.previous_fd = signal.set_wakeup_fd(self.write_fd)
        # SIGHUP too (the terminal closed): left to its default it would kill only this process,
        # and the recipe, in its own session, would outlive it. One the caller ignores (`nohup`)
        # stays ignored.
        self.previous: dict[int, Any] = {
            signum: signal.signal(signum, _ignore_here) for signum in STOP_SIGNALS
            if signal.getsignal(signum) is not signal.SIG_IGN}

    def wait(self, timeout: float) -> bool:
        """Whether a stop signal arrived within `timeout` seconds."""
        ready, _, _ = select.select([self.read_fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.read_fd, 64)
        except BlockingIOError:
            return False
        names = [signal.Signals(b).name for b in data if b in self.previous]
        if names:
            print(f"loop-verify serve: {names[0]}, stopping", file=sys.stderr, flush=True)
        return bool(names)

    def close(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self.previous_fd)
        os.close(self.read_fd)
        os.close(self.write_fd)


def _ignore_here(signum: int, frame: FrameType | None) -> None:
    """The signal is handled by the main loop through the wakeup pipe."""

