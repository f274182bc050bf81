"""Run one `just verify-<name>` recipe and make sure nothing it started outlives the run.

The recipe runs in its own session (so its process group id and session id equal the `just` pid),
with its output going through a pipe we read, never waiting on it, into a file that keeps at most
`output_limit` of it (`capture`); once the recipe's processes are swept the pipe is closed, so a
grandchild holding it open can never block us. Whatever happens — normal exit, timeout, or the
run being told to stop — the run ends with a sweep that kills every process the recipe left
behind and reaps every zombie handed to us. How those processes are found is
`jobs.process.tree`'s business.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jobs.core.diskspace import largest_files, short_of_space
from jobs.core.tail import read_tail
from jobs.process import tree as proctree
from jobs.process.capture import DEFAULT_OUTPUT_LIMIT, Capture, Pipe
from jobs.process.ending import could_not_run, killed_from_outside
from jobs.process.exe import executable
from jobs.process.justfile import JUSTFILE_NAMES as JUSTFILE_NAMES
from jobs.process.justfile import JustfileInvalid as JustfileInvalid
from jobs.process.justfile import RecipeError as RecipeError
from jobs.process.justfile import Recipes as Recipes
from jobs.process.justfile import _start_failure
from jobs.process.justfile import find_justfile as find_justfile
from jobs.process.justfile import list_recipes as list_recipes
from jobs.process.justfile import read_recipes as read_recipes
from jobs.process.justfile import recipe_env as recipe_env
from jobs.process.scope import Scope as Scope
from jobs.process.tree import TOKEN_VAR as TOKEN_VAR

_POLL = 0.05  # seconds between checks of the recipe; bounds how late a timeout or stop is noticed
# waitid(WNOWAIT) lets us see that `just` ended without reaping it; where Python lacks it, the
# leader is reaped on exit and its group id is only as safe as pid reuse allows.
_CAN_PEEK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
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
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    state_dir: Path | None = None,
    runs: Collection[str] = (),
) -> RecipeResult:
    """Run `just <recipe>` in `root` under a timeout; nothing it started survives the call.

    At most `output_limit` bytes of its output are kept (`capture`); when its file system is
    full, the error names the largest files under `state_dir` (else the output's folder).

    `on_tick(elapsed)` is for display only: if it raises, it is not called again and the run goes
    on. A `stop` already set before the start means nothing is started ("interrupted"). `scope`
    is the run's claim in its state directory, whose id the recipe's token carries, so that a
    later run can sweep what this one leaves if it dies. `runs` names (bare) the recipes `just`
    runs for `recipe` besides it, its dependencies (`Recipes.running`).
    """
    output_path = Path(output_path)
    filled = state_dir if state_dir is not None else output_path.parent
    try:
        output_path.parent.mkdir(parents=True, exist_ok=True)
        full = short_of_space(output_path.parent)
        if full is not None:
            raise OSError(errno.ENOSPC, f"{full}; {largest_files(filled)}")
        out_fd = os.open(output_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        return RecipeResult("error", None, 0.0, output_path, "",
                            f"cannot write output file {output_path}: {exc.strerror or exc}", 0)
    if stop is not None and stop.is_set():
        os.close(out_fd)
        return RecipeResult("interrupted", None, 0.0, output_path, "", None, 0)

    argv = [just, "--justfile", str(justfile), "--working-directory", str(root), recipe]
    token = scope.token() if scope is not None else uuid.uuid4().hex
    out = Capture(out_fd, output_limit)
    read_fd, write_fd = os.pipe()  # both close-on-exec; the child gets the write end as 1 and 2
    os.set_blocking(read_fd, False)
    try:
        with proctree.subreaper():
            return _run(argv, root, env, out, Pipe(read_fd, out), write_fd, output_path, timeout,
                        kill_grace, on_tick, stop, proctree.Tracker(token),
                        frozenset({recipe.rpartition("::")[2], *runs}), filled)
    finally:
        os.close(read_fd)
        os.close(out_fd)


def _run(argv: list[str], root: Path, env: Mapping[str, str] | None, out: Capture, pipe: Pipe,
         write_fd: int, output_path: Path, timeout: float, kill_grace: float,
         on_tick: Callable[[float], None] | None, stop: threading.Event | None,
         tracker: proctree.Tracker, recipes: frozenset[str], filled: Path) -> RecipeResult:
    started = time.monotonic()
    try:  # our copy of the pipe's write end is closed at once, whatever happens
        child_env = recipe_env(env)
        child_env[TOKEN_VAR] = tracker.token
        started = time.monotonic()
        with proctree._active_lock:  # a concurrent run must never see our leader unregistered
            proc = subprocess.Popen(
                argv, executable=executable(argv[0], child_env), cwd=root, env=child_env,
                stdin=subprocess.DEVNULL, stdout=write_fd,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
            )
            tracker.started(proc.pid)
    except OSError as exc:
        return RecipeResult("error", None, time.monotonic() - started, output_path, "",
                            _start_failure(argv[0], exc), 0)
    finally:
        os.close(write_fd)

    ticker = _Ticker(started, on_tick)
    try:
        outcome = _wait(tracker, proc, started + timeout, ticker, stop, pipe)
        if outcome != "exited":
            _terminate(tracker, proc, kill_grace, ticker, pipe)
        survivors = tracker.sweep()
        pipe.pump()  # what the recipe's processes wrote before they ended
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
    out.finish()
    tail = read_tail(output_path)
    error = None
    if out.error is not None:
        # No honest verdict without the output: the machine's fault (SPEC, error).
        why = out.error.strerror or str(out.error)
        if out.error.errno in (errno.ENOSPC, errno.EDQUOT):
            why = f"its file system is full ({why}); {largest_files(filled)}"
        error = f"cannot write output file {output_path}: {why}; the task is left as it was"
        outcome = "error"
    elif outcome == "exited":
        error = (killed_from_outside(exit_code, tail, recipes)
                 or could_not_run(exit_code, tail, recipes))
        if error is None and exit_code != 0:
            full = short_of_space(output_path.parent)
            if full is not None:
                # Its writes to the output file may have been what failed.
                error = (f"the recipe failed while the output file's file system was full "
                         f"({output_path}: {full}); the task is left as it was")
        if error is not None:
            outcome = "error"
    return RecipeResult(outcome, exit_code, duration, output_path, tail, error, survivors)


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
          tick: _Ticker, stop: threading.Event | None, pipe: Pipe) -> RecipeEnd:
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
        poller.register(pipe.fd, select.POLLIN)
        while True:
            pipe.pump()
            if not pipe.open:
                with contextlib.suppress(KeyError):
                    poller.unregister(pipe.fd)
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
                # Output wakes us too; the exit of `just` only the next look sees.
                poller.poll(min(wait, nap) * 1000)
                nap = min(nap * 2, _POLL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _terminate(tracker: proctree.Tracker, proc: subprocess.Popen[bytes], kill_grace: float,
               tick: _Ticker, pipe: Pipe) -> None:
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
        pipe.pump()  # a process flushing its output as it ends must not block on the pipe
        time.sleep(min(_POLL, max(0.0, grace_end - now)))
    tracker.kill_group()
    end = time.monotonic() + 2.0
    while not _leader_exited(proc) and time.monotonic() < end:
        time.sleep(0.01)
