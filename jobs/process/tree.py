"""Which processes belong to a recipe run, and getting rid of them — one psutil code path for
Linux and macOS.

A recipe's processes are found in three ways, each of which survives what defeats another:
  * its process group and session (ordinary background jobs);
  * the run token in its environment (`setsid` and double forks that kept their environment);
  * parent links recorded while the recipe runs (a descendant that cleared its environment is
    still a child of a recipe process until that one dies).
On Linux the process is also a child subreaper while a recipe runs, so an orphan that cleared its
environment *and* left the session comes to us and is caught too; that is an extra guard only.

Every signal to a found process goes through psutil, which refuses a pid reused since it was
found. Only processes in the recipe's session, or in a session made after it started, and
created after its `just`, are ever considered.

The start-of-run sweep of what dead runs left (`jobs.process.scope`) is narrower still.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import psutil

TOKEN_VAR = "LOOP_VERIFY_RUN_TOKEN"

_SWEEP_BUDGET = 5.0  # seconds the final sweep may take before giving up on unkillable processes
_RECORD_EVERY = 0.25  # seconds between records of a running recipe's descendants
# A Linux child subreaper while a recipe runs; elsewhere (macOS) the other ways must do.
USE_SUBREAPER = sys.platform.startswith("linux")

# Recipe runs going on in this process right now (leader pid -> token). Another run's processes
# must never be taken for orphans of this one.
_active_lock = threading.Lock()
_active: dict[int, str] = {}


def token_of(p: psutil.Process) -> str | None:
    """The run token a process was started with, if we may read its environment."""
    try:
        return p.environ().get(TOKEN_VAR)
    except (psutil.Error, OSError):
        return None


def pid_namespace(pid: int | str = "self") -> str | None:
    """The PID namespace a process lives in: "" where the system has none (macOS), None when it
    cannot be told (then nothing of that process may be touched by the sweep)."""
    if not os.path.exists("/proc/self/ns/pid"):
        return ""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _sid(pid: int) -> int:
    try:
        return os.getsid(pid)
    except OSError:
        return -1


def _ids(pid: int) -> tuple[int, int]:
    try:
        return os.getsid(pid), os.getpgid(pid)
    except OSError:
        return -1, -1


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _parent(p: psutil.Process) -> int | None:
    try:
        return p.ppid()
    except psutil.Error:
        return None


def _is_zombie(p: psutil.Process) -> bool:
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.ZombieProcess:
        return True
    except psutil.Error:
        return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def send(p: psutil.Process, sig: int) -> bool:
    """Signal a found process, unless its pid was reused since (psutil checks)."""
    try:
        p.send_signal(sig)
        return True
    except (psutil.Error, OSError):
        return False


# --- a short-lived child and its tree (a verdict's git commit) --------------------------------

def ended_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for `proc` to end, for at most `timeout` seconds."""
    # A pidfd wakes the wait the moment git ends, where Popen.wait(timeout) polls and would add
    # up to milliseconds to every verdict commit. macOS has none: there it polls.
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        return False
    proc.wait()
    return True


def stop_tree(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Stop `proc` and the processes it started (git's hooks and theirs): SIGTERM first, on
    which git removes its own lock files, then SIGKILL to whatever is left after `grace`
    seconds. A process that has left the tree by then (a daemon) is not found."""
    try:
        leader = psutil.Process(proc.pid)
        started = leader.children(recursive=True)
    except psutil.Error:
        leader, started = None, []
    if leader is not None:
        send(leader, signal.SIGTERM)
    for p in started:
        send(p, signal.SIGTERM)
    end = time.monotonic() + grace
    if not ended_within(proc, grace):
        proc.kill()
        proc.wait()
    _, alive = psutil.wait_procs(started, timeout=max(0.0, end - time.monotonic()))
    for p in alive:
        send(p, signal.SIGKILL)


class Tracker:
    """Knows which processes belong to one recipe run and how to end them."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.me = os.getpid()
        self.my_sid = os.getsid(0)
        self.leader_pid = -1
        self.leader: psutil.Process | None = None
        self.since = 0.0
        self.recorded: dict[int, psutil.Process] = {}
        self.next_record = 0.0
        # The sessions that exist before the recipe starts. A process of the recipe is in its
        # session or in one a descendant made later with setsid: never in one of these (a pid
        # is not reused while its session exists). Two system calls per process, no file read.
        self.old_sessions = {sid for sid in map(_sid, psutil.pids()) if sid >= 0}

    def started(self, pid: int) -> None:
        """Register the `just` leader (under _active_lock, held by the caller)."""
        self.leader_pid = pid
        _active[pid] = self.token
        try:
            self.leader = psutil.Process(pid)
            self.since = self.leader.create_time()
        except psutil.Error:
            # It ended (and was reaped by nobody: it is our child) before we looked; a process
            # it started cannot be older than our own call.
            self.since = time.time() - 1.0
        self.next_record = time.monotonic() + _RECORD_EVERY

    def finished(self) -> None:
        with _active_lock:
            _active.pop(self.leader_pid, None)

    def record(self, now: float) -> None:
        """Remember the recipe's descendants now, so one that later clears its environment and
        leaves the session is still known once its parent is gone."""
        if now < self.next_record or self.leader is None:
            return
        self.next_record = now + _RECORD_EVERY
        try:
            for child in self.leader.children(recursive=True):
                self.recorded.setdefault(child.pid, child)
        except psutil.Error:
            pass

    # --- finding -----------------------------------------------------------------------------

    def members(self) -> list[psutil.Process]:
        """Every process (live or zombie) of this run except the `just` leader itself."""
        with _active_lock:
            others = {pid: tok for pid, tok in _active.items() if pid != self.leader_pid}
        found: dict[int, psutil.Process] = {}
        for pid in psutil.pids():
            if pid in (self.me, self.leader_pid) or pid in others:
                continue
            # Two system calls, no file read: the recipe's group and session are ours for sure
            # (their id is the leader's pid, which stays reserved until the sweep is over).
            sid, pgid = _ids(pid)
            if sid in others or pgid in others:
                continue
            if self.leader_pid not in (sid, pgid) and sid in self.old_sessions:
                continue
            p = _process(pid)  # looked up afresh: a pid reused since an earlier look is new
            if p is None:
                continue
            if self.leader_pid in (sid, pgid):
                found[pid] = p
                continue
            try:
                if p.create_time() < self.since:
                    continue  # a descendant cannot be older than the recipe
            except psutil.Error:
                continue
            token = token_of(p)
            if token == self.token:
                found[pid] = p
            elif token is not None and token in others.values():
                continue
            elif USE_SUBREAPER and sid != self.my_sid and _parent(p) == self.me:
                # An orphan handed to us as subreaper: nothing else we did not start ourselves
                # can be our child outside our own session.
                found[pid] = p
        for pid, p in self.recorded.items():
            if pid not in found and p.is_running():
                found[pid] = p
        return list(found.values())

    def live(self) -> list[psutil.Process]:
        return [p for p in self.members() if not _is_zombie(p)]

    # --- ending ------------------------------------------------------------------------------

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.leader_pid, sig)

    def signal_all(self, sig: int) -> None:
        self.kill_group(sig)
        for p in self.live():
            if _ids(p.pid)[1] != self.leader_pid:
                send(p, sig)

    def sweep(self) -> int:
        """Kill every remaining process of the run and reap the zombies handed to us."""
        members = self.members()
        if not members:
            return 0  # the usual case after a normal exit: one look, nothing to do
        # Whatever is still alive now was left behind (or escaped the group kill): count it.
        killed = {p.pid for p in members if not _is_zombie(p)}
        self.kill_group()
        end = time.monotonic() + _SWEEP_BUDGET
        while True:
            alive = {p.pid for p in members if not _is_zombie(p)}
            pending = False
            for p in members:
                if p.pid not in alive:
                    try:
                        parent = p.ppid()
                    except psutil.Error:
                        continue
                    if parent == self.me:
                        _reap(p.pid)
                        pending = True
                    elif parent in alive:
                        pending = True  # its parent dies next; then it is reaped or comes to us
                elif send(p, signal.SIGKILL):
                    killed.add(p.pid)
                    pending = True
            if not pending or time.monotonic() >= end:
                return len(killed)
            time.sleep(0.01)
            members = self.members()


# --- Linux child subreaper (an extra guard) --------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_subreaper_lock = threading.Lock()
_subreaper_users = 0
_subreaper_owned: bool | None = None  # None: not decided yet; False: someone else set it


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _prctl(option: int, arg: object) -> int:
    return int(_libc().prctl(option, arg, 0, 0, 0))


@contextlib.contextmanager
def subreaper() -> Iterator[None]:
    """While any recipe runs, its orphans come to this process instead of init (Linux).

    Only while a recipe runs: a process that stayed a subreaper all day would also adopt every
    orphan of unrelated work (a detached `git gc --auto`, say) and collect them as zombies. If
    something else already made this process a subreaper, it is left that way.
    """
    global _subreaper_users, _subreaper_owned
    if not USE_SUBREAPER:
        yield
        return
    with _subreaper_lock:
        if _subreaper_users == 0:
            try:
                if _subreaper_owned is None:
                    flag = ctypes.c_int(0)
                    _prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag))
                    _subreaper_owned = flag.value == 0
                if _subreaper_owned:
                    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            except (OSError, AttributeError):
                _subreaper_owned = False  # the token, group and records still find the rest
        _subreaper_users += 1
    try:
        yield
    finally:
        with _subreaper_lock:
            _subreaper_users -= 1
            if _subreaper_users == 0 and _subreaper_owned:
                with contextlib.suppress(OSError):
                    _prctl(_PR_SET_CHILD_SUBREAPER, 0)


def reap_leader(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        # Only a process stuck in the kernel ignores SIGKILL this long; don't hang the job on it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        return None
