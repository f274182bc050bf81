"""Where PyGithub's and urllib3's own log records go: our structured log, never bare stderr.

They are written as the project's JSON lines (`jobs.core.logs`: `run_id`, `machine`, an `event` of
our vocabulary such as `library.urllib3`, the library's text in `message`) to
`$LOOP_PI_AUDIT_LOG`, else `audit-log.jsonl` in the run directory when the command has one, else
nowhere. Only those libraries' loggers are routed (with propagation off), so Python's
last-resort handler never prints them and nothing else in the process is reconfigured.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from audit.evidence.rundir import ENV_VAR

LOG_ENV = "LOOP_PI_AUDIT_LOG"
RUN_LOG = "audit-log.jsonl"
LIBRARIES = ("github", "urllib3", "requests")


def audit_log_file(run_dir_arg: str | None, env: Mapping[str, str] = os.environ) -> Path | None:
    explicit = env.get(LOG_ENV, "")
    if explicit:
        return Path(explicit).expanduser()
    run_dir = run_dir_arg or env.get(ENV_VAR, "")
    return Path(run_dir).expanduser().absolute() / RUN_LOG if run_dir else None


_TARGET: dict[str, Path | None] = {}


def set_log_target(log_file: Path | None) -> None:
    """Where library records of this command go; routed only once GitHub is really read (the
    structured log costs a tenth of a second to import, and most audits never need it)."""
    _TARGET["file"] = log_file
    _TARGET.pop("routed", None)


def route_before_github() -> None:
    """Route once the command's target is known; used as a library (no command set a
    target), the host program's own logging configuration stands."""
    if "file" in _TARGET and "routed" not in _TARGET:
        route_library_logs(_TARGET.get("file"))
        _TARGET["routed"] = None


def unroute() -> None:
    """Give the libraries' loggers back as they were (a command run in-process, as tests do,
    must not leave its routing behind)."""
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "loop-pi-audit"]:
            logger.removeHandler(old)
            old.close()
        saved = _SAVED.pop(name, None)
        if saved is not None:
            logger.propagate, level = saved
            logger.setLevel(level)
    _TARGET.clear()


_SAVED: dict[str, tuple[bool, int]] = {}


def route_library_logs(log_file: Path | None) -> None:
    handler: logging.Handler = logging.NullHandler()
    if log_file is not None:
        from jobs.core.logs import json_file_handler
        try:
            handler = json_file_handler(log_file)
        except OSError:
            pass  # an unwritable log must not stop the audit; the records are dropped
    handler.set_name("loop-pi-audit")
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "loop-pi-audit"]:
            logger.removeHandler(old)
            old.close()
        _SAVED.setdefault(name, (logger.propagate, logger.level))
        logger.addHandler(handler)
        logger.propagate = False
        # Below a warning says nothing closeout needs (urllib3's debug lines name every URL).
        logger.setLevel(logging.WARNING)
