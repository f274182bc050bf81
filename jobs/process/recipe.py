"""Run one `just verify-<name>` recipe and make sure nothing it started outlives the run.

The recipe runs in its own session (so its process group id and session id equal the `just` pid),
with its output going straight into a file we opened (never a pipe: a grandchild holding stdout can
then never block us). Whatever happens — normal exit, timeout, or the run being told to stop —
the run ends with a sweep that kills every process the recipe left behind and reaps every zombie
handed to us. How those processes are found is `jobs.process.tree`'s business.
"""

from __future__ import annotations

import errno
import os
import re
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jobs.core.diskspace import short_of_space
from jobs.core.tail import read_tail
from jobs.process import tree as proctree
from jobs.process.exe import executable
from jobs.process.justfile import JUSTFILE_NAMES as JUSTFILE_NAMES
from jobs.process.justfile import JustfileInvalid as JustfileInvalid
from jobs.process.justfile import RecipeError as RecipeError
from jobs.process.justfile import _start_failure
from jobs.process.justfile import find_justfile as find_justfile
from jobs.process.justfile import list_recipes as list_recipes
from jobs.process.justfile import recipe_env as recipe_env
from jobs.process.scope import Scope as Scope
from jobs.process.tree import TOKEN_VAR as TOKEN_VAR

_POLL = 0.05  # seconds between checks of the recipe; bounds how late a timeout or stop is noticed
# waitid(WNOWAIT) lets us see that `just` ended without reaping it; where Python lacks it, the
# leader is reaped on exit and its group id is only as safe as pid reuse allows.
_CAN_PEEK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
# A program's own crash is its failure; any other deadly signal came from outside the recipe.
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE,
                            signal.SIGABRT, signal.SIGSYS, signal.SIGTRAP})
# How `just` reports a recipe line (or shebang script) that a signal ended.
_JUST_SIGNALLED = re.compile(r"^error: recipe `(?P<recipe>[^`]+)` was terminated "
                             r"(?:on line \d+ )?by signal (?P<signal>\d+)\s*$",
                             re.IGNORECASE | re.MULTILINE)

# How `just` says it could not run a recipe at all (its shell or interpreter missing, a
# temporary folder it cannot create): the machine's fault, never the recipe's verdict. Just's
# own last error line; escape sequences in case a colour setting slipped through.
_JUST_COULD_NOT_RUN = re.compile(
    r"^error: (?:recipe `[^`]*` (?:could not be run because "
    r"|with (?:shebang|command) `.*` execution error: )"
    r"|backtick could not be run because )")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

RecipeEnd = Literal["exited", "timed_out", "interrupted", "error"]


@dataclass(frozen=True)
class RecipeResult:
    outcome: RecipeEnd
    exit_code: int | None
    duration: float
    output_path: Path
    tail: str
    error: str | None
    survivors_killed: int


def run_recipe(
    root: Path,
    justfile: Path,
    recipe: str,
    *,
    timeout: float,
    kill_grace: float,
    output_path: Path,
    just: str = "just",
    env: Mapping[str, str] | None = None,
    on_tick: Callable[[float], None] | None = None,
    stop: threading.Event | None = None,
    scope: Scope | None = None,
) -> RecipeResult:
    """Run `just <recipe>` in `root` under a timeout; nothing it started survives the call.

    `on_tick(elapsed)` is for display only: if it raises, it is not called again and the run goes
    on. A `stop` already set before the start means nothing is started ("interrupted"). `scope`
    is the run's claim in its state directory, whose id the recipe's token carries, so that a
    later run can sweep what this one leaves if it dies.
    """
    output_path = Path(output_path)
    try:
        output_path.parent.mkdir(parents=True, exist_ok=True)
        full = short_of_space(output_path.parent)
        if full is not None:
            raise OSError(errno.ENOSPC, full)
        out_fd = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        return RecipeResult("error", None, 0.0, output_path, "",
                            f"cannot write output file {output_path}: {exc.strerror or exc}", 0)
    if stop is not None and stop.is_set():
        os.close(out_fd)
        return RecipeResult("interrupted", None, 0.0, output_path, "", None, 0)

    argv = [just, "--justfile", str(justfile), "--working-directory", str(root), recipe]
    token = scope.token() if scope is not None else uuid.uuid4().hex
    with proctree.subreaper():
        return _run(argv, root, env, out_fd, output_path, timeout, kill_grace, on_tick, stop,
                    token, recipe)


def _run(
    argv: list[str],
    root: Path,
    env: Mapping[str, str] | None,
    out_fd: int,
    output_path: Path,
    timeout: float,
    kill_grace: float,
    on_tick: Callable[[float], None] | None,
    stop: threading.Event | None,
    token: str,
    recipe: str,
) -> RecipeResult:
    started = time.monotonic()
    tracker = proctree.Tracker(token)
    try:  # `out_fd` is ours to close, whatever happens
        child_env = recipe_env(env)
        child_env[TOKEN_VAR] = token
        started = time.monotonic()
        with proctree._active_lock:  # a concurrent run must never see our leader unregistered
            proc = subprocess.Popen(
                argv, executable=executable(argv[0], child_env), cwd=root, env=child_env,
                stdin=subprocess.DEVNULL, stdout=out_fd,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
            )
            tracker.started(proc.pid)
    except OSError as exc:
        return RecipeResult("error", None, time.monotonic() - started, output_path, "",
                            _start_failure(argv[0], exc), 0)
    finally:
        os.close(out_fd)

    ticker = _Ticker(started, on_tick)
    try:
        outcome = _wait(tracker, proc, started + timeout, ticker, stop)
        if outcome != "exited":
            _terminate(tracker, proc, kill_grace, ticker)
        survivors = tracker.sweep()
    except BaseException:
        # Interrupted ourselves (KeyboardInterrupt, a bug): still leave nothing behind.
        tracker.sweep()
        proctree.reap_leader(proc)
        tracker.finished()
        raise
    # Reaping the leader only now keeps its pid, and so the recipe's group and session ids,
    # reserved until the sweep is over: no unrelated process can inherit them meanwhile.
    exit_code = proctree.reap_leader(proc)
    tracker.finished()
    duration = time.monotonic() - started
    tail = read_tail(output_path)
    error = None
    if outcome == "exited":
        error = _killed_from_outside(exit_code, tail, recipe) or _could_not_run(exit_code, tail)
        if error is None and exit_code != 0:
            full = short_of_space(output_path.parent)
            if full is not None:
                # Its writes to the output file may have been what failed.
                error = (f"the recipe failed while the output file's file system was full "
                         f"({output_path}: {full}); the task is left as it was")
        if error is not None:
            outcome = "error"
    return RecipeResult(outcome, exit_code, duration, output_path, tail, error, survivors)


def _killed_from_outside(exit_code: int | None, tail: str, recipe: str) -> str | None:
    """Why a recipe that ended on its own really was killed by a signal we never sent, or None.

    `just` itself killed shows as a negative exit code; a recipe line killed makes `just` say so
    as its last word. A shell reporting its child's death as an exit code (137) is an exit code.
    """
    signum: int | None = None
    if exit_code is not None and exit_code < 0:
        signum = -exit_code
    else:
        last = tail.rstrip("\n").rsplit("\n", 1)[-1]
        m = _JUST_SIGNALLED.match(last)
        if m is not None and m.group("recipe") == recipe:
            signum = int(m.group("signal"))
    if signum is None or signum in _CRASH_SIGNALS:
        return None
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return (f"the recipe was killed by {name}, which loop-verify did not send "
            "(the OOM killer or another process); the task is left as it was")


def _could_not_run(exit_code: int | None, tail: str) -> str | None:
    """What `just` said when it could not run the recipe at all, or None.

    Its error is its last word: the last `error: ` line of the output (a backtick's error is
    followed only by the lines that point into the justfile). A recipe that prints the same
    words and fails is followed by `just`'s own "failed with exit code" line, so it is not
    taken for one."""
    if exit_code != 1:
        return None
    for line in reversed(_ANSI.sub("", tail).splitlines()):
        if line.startswith("error: "):
            if _JUST_COULD_NOT_RUN.match(line) is None:
                return None
            return "just could not run the recipe: " + line[len("error: "):]
    return None


class _Ticker:
    """Calls on_tick about once a second; a failing display never stops the run."""

    def __init__(self, started: float, on_tick: Callable[[float], None] | None) -> None:
        self.started = started
        self.on_tick = on_tick
        self.next = started + 1.0

    def __call__(self, now: float) -> None:
        if self.on_tick is None or now < self.next:
            return
        self.next += 1.0 * max(1, int(now - self.next) + 1)
        try:
            self.on_tick(now - self.started)
        except Exception:
            self.on_tick = None


def _leader_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `just` has ended — without reaping it, so its pid stays reserved."""
    if _CAN_PEEK:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None and info.si_pid == proc.pid
    return proc.poll() is not None


def _wait(tracker: proctree.Tracker, proc: subprocess.Popen[bytes], deadline: float,
          tick: _Ticker, stop: threading.Event | None) -> RecipeEnd:
    # Where a pidfd exists it wakes us the moment `just` exits; elsewhere the first waits are
    # short, so a quick recipe is not charged a whole polling interval.
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    nap = 0.001
    try:
        poller = select.poll()
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        while True:
            if _leader_exited(proc):
                return "exited"
            now = time.monotonic()
            if stop is not None and stop.is_set():
                return "interrupted"
            if now >= deadline:
                return "timed_out"
            tick(now)
            tracker.record(now)
            wait = min(_POLL, max(0.0, deadline - now))
            if pidfd is not None:
                poller.poll(wait * 1000)
            else:
                time.sleep(min(wait, nap))
                nap = min(nap * 2, _POLL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _terminate(tracker: proctree.Tracker, proc: subprocess.Popen[bytes], kill_grace: float,
               tick: _Ticker) -> None:
    """SIGTERM to everything, wait up to the grace for it all to end, then SIGKILL the group."""
    tracker.record(float("inf"))
    tracker.signal_all(signal.SIGTERM)
    grace_end = time.monotonic() + kill_grace
    next_scan = 0.0
    while (now := time.monotonic()) < grace_end:
        if _leader_exited(proc) and now >= next_scan:
            if not tracker.live():
                return
            next_scan = now + 0.1
        tick(now)
        time.sleep(min(_POLL, max(0.0, grace_end - now)))
    tracker.kill_group()
    end = time.monotonic() + 2.0
    while not _leader_exited(proc) and time.monotonic() < end:
        time.sleep(0.01)
