"""Expected failures and the one place that turns them into a message and an exit code."""

from __future__ import annotations

import sys
from functools import wraps

# typing.TYPE_CHECKING without importing typing, pathlib and ParamSpec, which would cost
# `--help` milliseconds at start-up: they are needed only by the type checker (which reads
# any `if TYPE_CHECKING:` as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import ParamSpec

    P = ParamSpec("P")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNCHECKED = 3


class LoopError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class UsageError(LoopError):
    """Bad command line, missing run directory and the like (exit 2)."""


class ConfigError(UsageError):
    """A configuration value that cannot be used; names the file, the key and the value."""

    def __init__(self, path: Path | str, key: str, value: object, problem: str) -> None:
        self.path = str(path)
        self.key = key
        self.value = value
        super().__init__(f"{path}: {key}: {problem} (got {value!r})")


class InputError(LoopError):
    """A malformed input file, reported with its path and, where known, its line."""

    def __init__(self, path: Path | str, message: str, line: int | None = None,
                 exit_code: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", exit_code)


# The log file a crash is written to when the verb had not opened the log yet (`list` opens it
# only then); set by the verb's setup once the configuration names it.
crash_log: Path | None = None
# The running command's name (`loop-verify`, `loop-pi-audit`), for a message printed outside
# `cli_entry` (the log file failing mid-run); set by `cli_entry`.
program = "loop-jobs"


def log_unexpected(prog: str, exc: BaseException) -> None:
    """Write an unexpected exception to the log as one event (with its traceback there, never on
    the terminal). Never raises: the one line on stderr has been printed already."""
    try:
        configured = "structlog" in sys.modules and sys.modules["structlog"].is_configured()
        if not configured:
            # The verb never opened the log (`list` opens it only now), or failed before it
            # did: open the one the configuration names, if it was read; an unconfigured
            # structlog would print the event to stdout.
            if crash_log is None:
                return
            from jobs.logs import configure_logging

            configure_logging(crash_log, console=False)
        from jobs.logs import get_logger

        get_logger(prog).error("cli.unexpected_error", exc_type=type(exc).__name__,
                               error=str(exc), exc_info=exc)
    except Exception:  # a log that cannot be written must not hide the exit code
        pass


def cli_entry(prog: str) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """Wrap a CLI main so expected failures become `prog: message` on stderr and their exit code,
    and anything unexpected one line on stderr, a log event and exit 3."""

    def decorate(fn: Callable[P, int]) -> Callable[P, int]:
        @wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> int:
            global program
            program = prog
            try:
                return fn(*args, **kwargs)
            except LoopError as exc:
                print(f"{prog}: {exc.message}", file=sys.stderr)
                return exc.exit_code
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return 130
            except Exception as exc:
                # Exit 1 would say "a verification failed": an unexpected fault checked nothing.
                print(f"{prog}: unexpected error: {type(exc).__name__}: {exc}".splitlines()[0],
                      file=sys.stderr)
                log_unexpected(prog, exc)
                return EXIT_UNCHECKED

        return wrapper

    return decorate
