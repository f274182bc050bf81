"""The one place that turns a command's failures into a message and an exit code, for both CLIs."""

from __future__ import annotations

import sys
from functools import wraps

from jobs.core import errors
from jobs.core.errors import EXIT_UNCHECKED, LoopError

# typing.TYPE_CHECKING without importing typing, pathlib and ParamSpec, which would cost
# `--help` milliseconds at start-up: they are needed only by the type checker (which reads
# any `if TYPE_CHECKING:` as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ParamSpec

    P = ParamSpec("P")


def log_unexpected(prog: str, exc: BaseException) -> None:
    """Write an unexpected exception to the log as one event (with its traceback there, never on
    the terminal). Never raises: the one line on stderr has been printed already."""
    try:
        configured = "structlog" in sys.modules and sys.modules["structlog"].is_configured()
        if not configured:
            # The verb never opened the log (`list` opens it only now), or failed before it
            # did: open the one the configuration names, if it was read; an unconfigured
            # structlog would print the event to stdout.
            if errors.crash_log is None:
                return
            from jobs.core.logs import configure_logging

            configure_logging(errors.crash_log, console=False)
        from jobs.core.logs import get_logger

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
            errors.program = prog
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
