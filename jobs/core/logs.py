"""Structured logging: JSON lines with UTC timestamps to the log file, short lines on a console.

Every line is fit for a log shipper as it is (docs/logging.md): it carries `run_id`, `machine`
and an `event` from our own vocabulary of dotted snake_case names. A library's free-text message
(APScheduler's "Running job ..." and the like) is mapped to one of our events, its text kept in
`message`; none ever becomes the `event`.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import sys
import uuid
from collections.abc import MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# structlog imports rich whenever it is installed (a development dependency brings it), for
# tracebacks on a console; our log is JSON lines in a file, and importing rich costs every process
# tens of milliseconds. So rich is imported only on a terminal: elsewhere structlog's optional
# import of it fails as if it were not installed.
if "rich" not in sys.modules and not (sys.stderr is not None and sys.stderr.isatty()):
    sys.modules["rich"] = None  # type: ignore[assignment]

import structlog

# Our event names: `area.what` in lowercase snake_case (verify.passed, ledger.spooled, ...).
EVENT_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
# Fields a log shipper may turn into labels (low cardinality, no paths, no free text).
LABEL_FIELDS = ("machine", "level", "logger")

# APScheduler 3.x's messages (by their format string) and the event each one is.
_APSCHEDULER = (
    ("Adding job tentatively", "scheduler.job_pending"),
    ("Added job", "scheduler.job_added"),
    ("Modified job", "scheduler.job_modified"),
    ("Removed job", "scheduler.job_removed"),
    ("Scheduler started", "scheduler.apscheduler_started"),
    ("Scheduler has been shut down", "scheduler.apscheduler_shutdown"),
    ("Scheduler is already shut down", "scheduler.apscheduler_shutdown"),
    ("Paused scheduler", "scheduler.paused"),
    ("Resumed scheduler", "scheduler.resumed"),
    ("Running job", "scheduler.job_running"),
    ("Job \"%s\" executed successfully", "scheduler.job_executed"),
    ("Job \"%s\" raised an exception", "scheduler.job_raised"),
    ("Run time of job", "scheduler.job_missed"),
    ("Execution of job", "scheduler.job_skipped"),
    ("Looking for jobs to run", "scheduler.wakeup"),
    ("Next wakeup is due", "scheduler.next_wakeup"),
    ("No jobs; waiting", "scheduler.idle"),
)


class _Identity:
    """What every line of this process says about where it comes from."""

    machine: str = ""
    run_id: str = ""


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def set_identity(*, machine: str | None = None, run_id: str | None = None) -> None:
    """The machine and the process-wide run id for lines not inside a run (scheduler, doctor)."""
    if machine is not None:
        _Identity.machine = machine
    if run_id is not None:
        _Identity.run_id = run_id


def _add_identity(_logger: Any, _method: str,
                  event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if not _Identity.run_id:
        _Identity.run_id = new_run_id()
    if not _Identity.machine:
        from jobs.core.host import default_machine

        _Identity.machine = default_machine()
    event_dict.setdefault("machine", _Identity.machine)
    if not event_dict.get("run_id"):
        event_dict["run_id"] = _Identity.run_id
    return event_dict


def library_event(logger_name: str, template: str) -> str:
    """Our event for a library's log record, from its logger and unformatted message."""
    if logger_name.startswith("apscheduler"):
        for prefix, event in _APSCHEDULER:
            if template.startswith(prefix):
                return event
        return "scheduler.library_message"
    top = re.sub(r"[^a-z0-9_]", "_", logger_name.split(".", 1)[0].lower()) or "root"
    return f"library.{top}" if top[0].isalpha() else "library.message"


def _own_event(_logger: Any, _method: str,
               event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    record = event_dict.get("_record")
    event = event_dict.get("event")
    if not event_dict.get("_from_structlog", True) and isinstance(record, logging.LogRecord):
        event_dict["message"] = str(event)
        event_dict["event"] = library_event(record.name, str(record.msg))
    elif not isinstance(event, str) or not EVENT_NAME.match(event):
        # A free-text message from our own code is a bug, but the line must still parse.
        event_dict["message"] = str(event)
        event_dict["event"] = "log.message"
    return event_dict


_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.ExtraAdder(),
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _add_identity,
]


class _LogFile(logging.handlers.WatchedFileHandler):
    """The log file, which may become unwritable mid-run (a full disk, a quota, /dev/full).

    logging's own handleError prints "--- Logging error ---" and a traceback to stderr for every
    event that fails; the user gets one line instead, the first time, and the run goes on (the
    ledger, not the log, is the record of what was verified).
    """

    told = False

    def emit(self, record: logging.LogRecord) -> None:
        # WatchedFileHandler reopens a file deleted under it outside its own error handling: a
        # recipe that removes the log's folder would make the next event raise in the run.
        if self.stream is None:
            # Opened on its first record (see json_file_handler).
            try:
                os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
                self.stream = self._open()
                self._statstream()
            except OSError:
                self.handleError(record)
                return
        try:
            self.reopenIfNeeded()
        except OSError:
            try:
                os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
                self.reopenIfNeeded()
            except OSError:
                self.handleError(record)
                return
        logging.FileHandler.emit(self, record)

    def handleError(self, record: logging.LogRecord) -> None:
        if self.told:
            return
        self.told = True
        exc = sys.exc_info()[1]
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        from jobs.core import errors

        with contextlib.suppress(Exception):
            print(f"{errors.program}: cannot write the log file {self.baseFilename}: {why}; "
                  "the events of this run may be missing from it", file=sys.stderr)


def configure_logging(log_file: Path | None, *, console: bool | None = None,
                      level: int = logging.INFO, machine: str | None = None) -> None:
    """Send every event to `log_file` as one JSON object per line, and to stderr when it is a TTY.

    Exceptions are rendered without frame locals: a token held in a local must not reach the log.
    The file is reopened when logrotate or newsyslog has renamed it (WatchedFileHandler).
    """
    set_identity(machine=machine)
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        fh = _LogFile(log_file, encoding="utf-8")
        fh.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[
                _own_event,
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.ExceptionRenderer(
                    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)),
                structlog.processors.JSONRenderer(sort_keys=True),
            ],
        ))
        root.addHandler(fh)
    if console if console is not None else sys.stderr.isatty():
        sh = logging.StreamHandler(sys.stderr)
        sh.setLevel(logging.WARNING)
        sh.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[
                _own_event,
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(colors=False),
            ],
        ))
        root.addHandler(sh)


def json_file_handler(log_file: Path) -> logging.Handler:
    """A handler writing records as this module's JSON lines, for a library's loggers routed on
    their own (loop-pi-audit's PyGithub and urllib3) without reconfiguring the whole process."""
    # Created on its first record only: a command that refuses (`begin`: "nothing written")
    # must leave no run directory and no empty log behind.
    handler = _LogFile(log_file, encoding="utf-8", delay=True)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[_own_event, structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.JSONRenderer(sort_keys=True)]))
    return handler


def bound(**values: Any) -> contextlib.AbstractContextManager[Any]:
    """Every event logged inside the `with` carries these values (a run's run_id)."""
    return structlog.contextvars.bound_contextvars(**values)


def get_logger(name: str = "loop-jobs") -> Any:
    return structlog.get_logger(name)
