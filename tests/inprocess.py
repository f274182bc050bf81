"""Run a CLI's `main(argv)` inside the test process, as `subprocess.run` would report it.

Starting `python -m jobs.main` costs the interpreter and its imports on every call, and the
suite makes hundreds of such calls, so tests that involve no signal, kill, terminal or crash
of the process itself call `main()` here instead. What a fresh process would not carry over is
put back afterwards: the environment, the working directory, logging's handlers, structlog's
configuration and the few module-level values the CLIs keep for one process.

`LOOP_JOBS_TEST_SUBPROCESS=1` makes every helper built on this start a real process again (a
check that in-process and real runs agree: `make test-thorough`).
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

FORCE_SUBPROCESS = os.environ.get("LOOP_JOBS_TEST_SUBPROCESS", "") not in ("", "0")


def logger_state() -> dict[str, tuple[logging.Logger, list[logging.Handler], int, bool]]:
    loggers: dict[str, logging.Logger] = {"": logging.getLogger()}
    for name, obj in logging.Logger.manager.loggerDict.items():
        if isinstance(obj, logging.Logger):
            loggers[name] = obj
    return {name: (lg, list(lg.handlers), lg.level, lg.propagate) for name, lg in loggers.items()}


def restore_loggers(saved: Mapping[str, tuple[logging.Logger, list[logging.Handler], int,
                                               bool]]) -> None:
    current = logger_state()
    for name, (lg, handlers, _level, _propagate) in current.items():
        keep = saved[name][1] if name in saved else []
        for handler in handlers:
            if handler not in keep:
                lg.removeHandler(handler)
                handler.close()
    for lg, handlers, level, propagate in saved.values():
        for handler in handlers:
            if handler not in lg.handlers:
                lg.addHandler(handler)
        lg.setLevel(level)
        lg.propagate = propagate


def reset_process_globals() -> None:
    """What each CLI keeps for the life of its process (a fresh process starts without it)."""
    import structlog

    structlog.reset_defaults()
    mods = sys.modules
    if "jobs.core.logs" in mods:
        identity = mods["jobs.core.logs"]._Identity
        identity.machine = ""
        identity.run_id = ""
    if "jobs.core.errors" in mods:
        mods["jobs.core.errors"].crash_log = None
    if "jobs.verify.terminal" in mods:
        mods["jobs.verify.terminal"]._stdout_gone = False
    if "audit.evidence.github_log" in mods:
        mods["audit.evidence.github_log"]._TARGET.clear()


@contextmanager
def _process_like(cwd: Path | str | None, env: Mapping[str, str] | None) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_loggers = logger_state()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        restore_loggers(saved_loggers)
        reset_process_globals()


def _text(data: bytes) -> str:
    # As `subprocess.run(text=True)` reads a pipe: universal newlines.
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def call_main(main: Callable[[Sequence[str]], int], argv: Sequence[str], *,
              cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
              input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`main(argv)` with its own stdin/stdout/stderr, environment (`env` replaces it whole, as
    for a process) and working directory; exit code as a process would have it."""
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    stderr = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace",
                              write_through=True)
    with _process_like(cwd, env):
        sys.stdin = io.StringIO(input or "")
        sys.stdout, sys.stderr = stdout, stderr
        try:
            code: object = main(list(argv))
        except SystemExit as exc:
            code = exc.code
            if isinstance(code, str):
                print(code, file=stderr)
                code = 1
        except KeyboardInterrupt:
            raise
        except BaseException:  # as the interpreter would: a traceback on stderr, exit 1
            traceback.print_exc(file=stderr)
            code = 1
        stdout.flush()
        stderr.flush()
    returncode = 0 if code is None else int(code)  # type: ignore[call-overload]
    return subprocess.CompletedProcess(list(argv), returncode, _text(out_bytes.getvalue()),
                                       _text(err_bytes.getvalue()))


def loop_verify(argv: Sequence[str], **kw: object) -> subprocess.CompletedProcess[str]:
    from jobs.main import main

    return call_main(main, argv, **kw)  # type: ignore[arg-type]


def loop_pi_audit(argv: Sequence[str], **kw: object) -> subprocess.CompletedProcess[str]:
    from audit.main import main

    return call_main(main, argv, **kw)  # type: ignore[arg-type]
