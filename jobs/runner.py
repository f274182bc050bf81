"""Run one `just verify-<name>` recipe and make sure nothing it started outlives the run.

The recipe runs in its own session (so its process group id and session id equal the `just` pid),
with its output going straight into a file we opened (never a pipe: a grandchild holding stdout can
then never block us). Whatever happens — normal exit, timeout, or the daemon being told to stop —
the run ends with a sweep that kills every process the recipe left behind and reaps every zombie
handed to us.

How leftovers are found on Linux, in one pass over /proc per sweep round:
  * same session or process group as the recipe (covers ordinary background jobs);
  * the run's unique token in /proc/<pid>/environ (covers `setsid` and double forks that kept
    their environment);
  * re-parented to us: while a recipe runs this process is a child subreaper, so orphans of the
    recipe come to us instead of init, and a new child we did not start that sits outside our own
    session (and is no other concurrent run's) can only be such an orphan.
A descendant that clears its environment *and* leaves the session *and* keeps a live parent outside
the recipe cannot exist: its parent is itself a descendant and is killed first, after which the
orphan is re-parented to us and caught in the next round.

Every signal to a process found by a scan goes through a pidfd opened after checking that the pid
still has the start time the scan saw, so a reused pid is never hit.

macOS has no /proc and no subreaper: there we kill the process group and every descendant that one
`ps -axo pid,ppid,pgid,stat` call can still link to the recipe by parent links. A daemon that
double-forked (its parent gone, so it was re-parented to launchd) *and* left the process group
cannot be found there: on macOS recipes must not daemonize. (On Linux under systemd, the unit's
cgroup kill is a further backstop.)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

JUSTFILE_NAMES = ("justfile", "Justfile", ".justfile")
TOKEN_VAR = "LOOP_VERIFY_RUN_TOKEN"

TAIL_LINES = 20
TAIL_BYTES = 2048

_POLL = 0.05  # seconds between checks of the recipe; bounds how late a timeout or stop is noticed
_SWEEP_BUDGET = 5.0  # seconds the final sweep may take before giving up on unkillable processes
_PR_SET_CHILD_SUBREAPER = 36
# Recipe runs going on in this process right now (leader pid -> token). Another run's processes
# must never be taken for orphans of this one.
_active_lock = threading.Lock()
_active: dict[int, str] = {}
# Whether /proc can answer for processes; elsewhere (macOS) one `ps` call per scan does.
_USE_PROC = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
# waitid(WNOWAIT) lets us see that `just` ended without reaping it; where Python lacks it, the
# leader is reaped on exit and its group id is only as safe as pid reuse allows.
_CAN_PEEK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")

Outcome = Literal["exited", "timed_out", "interrupted", "error"]


class RecipeError(Exception):
    """`just` cannot be run or its answer cannot be read: an infrastructure fault."""


# How a command-line parser (clap, for `just`) rejects the arguments themselves.
_USAGE_ERROR = re.compile(r"unexpected argument|wasn't expected|invalid value '[^']*' for '--|"
                          r"unrecognized (option|argument)|^usage:", re.IGNORECASE | re.MULTILINE)


class JustfileInvalid(Exception):
    """`just` ran but rejected the justfile: the verification fails, the infrastructure is fine."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class RecipeResult:
    outcome: Outcome
    exit_code: int | None
    duration: float
    output_path: Path
    tail: str
    error: str | None
    survivors_killed: int


def find_justfile(root: Path) -> Path | None:
    """The repository root's own justfile; a parent folder's never counts."""
    root = Path(root)
    for name in JUSTFILE_NAMES:
        candidate = root / name
        if candidate.is_file():
            return candidate
    return None


def recipe_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a recipe sees: no `JUST_*` overrides, and git never prompts."""
    base = os.environ if env is None else env
    clean = {k: v for k, v in base.items() if not k.startswith("JUST_")}
    clean["GIT_TERMINAL_PROMPT"] = "0"
    return clean


def list_recipes(
    justfile: Path, root: Path, *, just: str = "just", timeout: float = 30
) -> frozenset[str]:
    """Every recipe and alias name `just` would accept, from one `--dump` call.

    Recipes of modules appear by their path (`sub::verify-x`); private recipes are included
    because `just` runs them when named.
    """
    argv = [just, "--justfile", str(justfile), "--working-directory", str(root),
            "--dump", "--dump-format", "json"]
    try:
        proc = subprocess.Popen(
            argv, cwd=root, env=recipe_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        raise RecipeError(_start_failure(just, exc)) from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        # Kill the group, not just `just`: anything holding our pipes would block the drain.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        proc.wait()
        raise RecipeError(f"`{just} --dump` did not answer within {timeout:g}s") from exc
    if proc.returncode < 0:
        raise RecipeError(f"`{just} --dump` was killed by signal {-proc.returncode}")
    if proc.returncode != 0:
        message = stderr.decode("utf-8", errors="replace").strip()
        if _USAGE_ERROR.search(message):
            # `just` did not understand our own command line (an old `just`, or another program
            # of that name): the infrastructure's fault, which must never reopen a task.
            raise RecipeError(f"`{just}` rejected `--dump --dump-format json`: "
                              f"{message.splitlines()[0]}")
        raise JustfileInvalid(message or f"`just --dump` exited {proc.returncode}")
    try:
        dump = json.loads(stdout)
    except ValueError as exc:
        raise RecipeError(f"`{just} --dump` printed something that is not JSON") from exc
    if not isinstance(dump, dict):
        raise RecipeError(f"`{just} --dump` printed an unexpected document")
    return frozenset(_names(dump, ""))


def _names(module: dict[str, Any], prefix: str) -> Iterable[str]:
    for key in ("recipes", "aliases"):
        table = module.get(key)
        if isinstance(table, dict):
            yield from (prefix + name for name in table)
    modules = module.get("modules")
    if isinstance(modules, dict):
        for name, sub in modules.items():
            if isinstance(sub, dict):
                yield from _names(sub, f"{prefix}{name}::")


def _start_failure(just: str, exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else just
    return f"cannot start {just}: {exc.strerror or exc} ({where})"


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
) -> RecipeResult:
    """Run `just <recipe>` in `root` under a timeout; nothing it started survives the call.

    `on_tick(elapsed)` is for display only: if it raises, it is not called again and the run goes
    on. A `stop` already set before the start means nothing is started ("interrupted").
    """
    output_path = Path(output_path)
    try:
        output_path.parent.mkdir(parents=True, exist_ok=True)
        out_fd = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        return RecipeResult("error", None, 0.0, output_path, "",
                            f"cannot write output file {output_path}: {exc.strerror or exc}", 0)
    if stop is not None and stop.is_set():
        os.close(out_fd)
        return RecipeResult("interrupted", None, 0.0, output_path, "", None, 0)

    argv = [just, "--justfile", str(justfile), "--working-directory", str(root), recipe]
    with _subreaper():
        return _run(argv, root, env, out_fd, output_path, timeout, kill_grace, on_tick, stop)


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
) -> RecipeResult:
    started = time.monotonic()
    try:  # `out_fd` is ours to close, whatever happens
        token = _new_token()
        child_env = recipe_env(env)
        child_env[TOKEN_VAR] = token
        tracker = _Tracker.before_start(token)
        started = time.monotonic()
        with _active_lock:  # a concurrent run's scan must never see our leader unregistered
            proc = subprocess.Popen(
                argv, cwd=root, env=child_env, stdin=subprocess.DEVNULL, stdout=out_fd,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
            )
            _active[proc.pid] = token
    except OSError as exc:
        return RecipeResult("error", None, time.monotonic() - started, output_path, "",
                            _start_failure(argv[0], exc), 0)
    finally:
        os.close(out_fd)

    tracker.started(proc)
    ticker = _Ticker(started, on_tick)
    try:
        outcome = _wait(tracker, started + timeout, ticker, stop)
        if outcome != "exited":
            _terminate(tracker, kill_grace, ticker)
        survivors = tracker.sweep()
    except BaseException:
        # Interrupted ourselves (KeyboardInterrupt, a bug): still leave nothing behind.
        tracker.sweep()
        _reap(proc)
        tracker.finished()
        raise
    # Reaping the leader only now keeps its pid, and so the recipe's group and session ids,
    # reserved until the sweep is over: no unrelated process can inherit them meanwhile.
    exit_code = _reap(proc)
    tracker.finished()
    duration = time.monotonic() - started
    return RecipeResult(outcome, exit_code, duration, output_path, read_tail(output_path),
                        None, survivors)


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


def _wait(
    tracker: _Tracker, deadline: float, tick: _Ticker, stop: threading.Event | None
) -> Outcome:
    # On Linux a pidfd wakes us the moment `just` exits; a fixed sleep would add up to _POLL to
    # every recipe (50 ms of a 2 ms no-op recipe in bench/verify_overhead.py).
    try:
        pidfd: int | None = os.pidfd_open(tracker.leader)
    except (AttributeError, OSError):
        pidfd = None
    try:
        poller = select.poll()
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        while True:
            if tracker.leader_exited():
                return "exited"
            now = time.monotonic()
            if stop is not None and stop.is_set():
                return "interrupted"
            if now >= deadline:
                return "timed_out"
            tick(now)
            wait = min(_POLL, max(0.0, deadline - now))
            if pidfd is not None:
                poller.poll(wait * 1000)
            else:
                time.sleep(wait)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _terminate(tracker: _Tracker, kill_grace: float, tick: _Ticker) -> None:
    """SIGTERM to everything, wait up to the grace for it all to end, then SIGKILL the group."""
    tracker.signal_all(signal.SIGTERM)
    grace_end = time.monotonic() + kill_grace
    next_scan = 0.0
    while (now := time.monotonic()) < grace_end:
        if tracker.leader_exited() and now >= next_scan:
            if not tracker.live():
                return
            next_scan = now + tracker.scan_interval
        tick(now)
        time.sleep(min(_POLL, max(0.0, grace_end - now)))
    tracker.kill_group()
    end = time.monotonic() + 2.0
    while not tracker.leader_exited() and time.monotonic() < end:
        time.sleep(0.01)


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        # Only a process stuck in the kernel ignores SIGKILL this long; don't hang the job on it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        return None


def read_tail(path: Path, max_lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last lines of the output, within both limits, decoded with replacement characters."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes - 1)
            fh.seek(start)
            chunk = fh.read()
    except OSError:
        return ""
    if chunk.endswith(b"\n"):
        chunk = chunk[:-1]
    elif start > 0:
        chunk = chunk[1:]  # the spare byte was only read to tell whether output ends in a newline
    if len(chunk) > max_bytes:
        chunk = chunk[-max_bytes:]
    if start > 0:
        # Don't start with a fragment of a line (or of a character) when whole lines fit.
        cut = chunk.find(b"\n")
        if 0 <= cut < len(chunk) - 1:
            chunk = chunk[cut + 1:]
        else:
            while chunk and 0x80 <= chunk[0] <= 0xBF:
                chunk = chunk[1:]
    lines = chunk.split(b"\n")[-max_lines:]
    return "\n".join(line.decode("utf-8", errors="replace").rstrip("\r") for line in lines)


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
def _subreaper() -> Iterator[None]:
    """While any recipe runs, its orphans come to this process instead of init (Linux).

    Only while a recipe runs: a process that stayed a subreaper all day would also adopt every
    orphan of unrelated work (a detached `git gc --auto`, say) and collect them as zombies. If
    something else already made this process a subreaper, it is left that way.
    """
    global _subreaper_users, _subreaper_owned
    if not sys.platform.startswith("linux"):
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
            except OSError:
                _subreaper_owned = False  # the token and session scan still find most things
        _subreaper_users += 1
    try:
        yield
    finally:
        with _subreaper_lock:
            _subreaper_users -= 1
            if _subreaper_users == 0 and _subreaper_owned:
                with contextlib.suppress(OSError):
                    _prctl(_PR_SET_CHILD_SUBREAPER, 0)


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    zombie: bool
    start: int  # Linux: clock ticks since boot; elsewhere 0 (unknown)


class _Tracker:
    """Knows which processes belong to one recipe run and how to get rid of them."""

    scan_interval = 0.1

    def __init__(self, token: str, known_children: frozenset[int]) -> None:
        self.token = token
        self.known_children = known_children
        self.me = os.getpid()
        self.my_sid = os.getsid(0)
        self.proc: subprocess.Popen[bytes] | None = None
        self.leader = -1
        self.leader_start = 0
        self._use_proc = _USE_PROC
        if not self._use_proc:
            self.scan_interval = 0.5

    @classmethod
    def before_start(cls, token: str) -> _Tracker:
        me = os.getpid()
        children = frozenset(p.pid for p in _scan_all() if p.ppid == me)
        return cls(token, children)

    def started(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.leader = proc.pid
        stat = _read_stat(proc.pid)
        self.leader_start = stat.start if stat is not None else 0

    def finished(self) -> None:
        with _active_lock:
            _active.pop(self.leader, None)

    def leader_exited(self) -> bool:
        """Whether `just` has ended — without reaping it, so its pid stays reserved."""
        if _CAN_PEEK:
            try:
                info = os.waitid(os.P_PID, self.leader, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            return info is not None and info.si_pid == self.leader
        return self.proc is None or self.proc.poll() is not None

    # --- finding -----------------------------------------------------------------------------

    def members(self) -> list[_Proc]:
        """Every process (live or zombie) of this run except the `just` leader itself."""
        if not self._use_proc:
            return self._members_ps()
        with _active_lock:  # no other run may start its leader between these two lines
            others = {pid: tok for pid, tok in _active.items() if pid != self.leader}
            table = _scan_all()
        found = []
        for p in table:
            if p.pid in (self.me, self.leader) or p.start < self.leader_start:
                continue  # a descendant cannot be older than the recipe
            if p.sid == self.leader or p.pgid == self.leader:
                found.append(p)
                continue
            if p.pid in others or p.sid in others or p.pgid in others:
                continue
            token = None if p.zombie else _token_of(p.pid)
            if token == self.token:
                found.append(p)
            elif token is not None and token in others.values():
                continue
            elif p.ppid == self.me and p.pid not in self.known_children and p.sid != self.my_sid:
                # An orphan handed to us by the subreaper: nothing else we did not start
                # ourselves can be our child outside our own session.
                found.append(p)
        return found

    def _members_ps(self) -> list[_Proc]:
        table = _ps_table()
        ours = {p.pid for p in table if p.pgid == self.leader and p.pid != self.leader}
        ours.add(self.leader)
        grew = True
        while grew:  # close over parent links: descendants that moved to another group
            grew = False
            for p in table:
                if p.ppid in ours and p.pid not in ours and p.pid != self.me:
                    ours.add(p.pid)
                    grew = True
        return [p for p in table if p.pid in ours and p.pid != self.leader]

    def live(self) -> list[_Proc]:
        return [p for p in self.members() if not p.zombie]

    # --- killing -----------------------------------------------------------------------------

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.leader, sig)

    def signal_all(self, sig: int) -> None:
        self.kill_group(sig)
        for p in self.live():
            if p.pgid != self.leader:
                _send(p, sig)

    def sweep(self) -> int:
        """Kill every remaining process of the run and reap the zombies handed to us."""
        # Whatever is still alive now was left behind (or escaped the group kill): count it.
        killed = {p.pid for p in self.live()}
        self.kill_group()
        end = time.monotonic() + _SWEEP_BUDGET
        while True:
            members = self.members()
            pending = False
            for p in members:
                if p.zombie:
                    if p.ppid == self.me:
                        _reap_pid(p.pid)
                        pending = True
                    elif self._is_member(p.ppid, members):
                        pending = True  # its parent dies next; then it comes to us
                else:
                    if _send(p, signal.SIGKILL):
                        killed.add(p.pid)
                    pending = True
            if not pending or time.monotonic() >= end:
                return len(killed)
            time.sleep(0.01)

    @staticmethod
    def _is_member(pid: int, members: list[_Proc]) -> bool:
        return any(p.pid == pid and not p.zombie for p in members)


def _send(p: _Proc, sig: int) -> bool:
    """Signal a process found by a scan, unless its pid now belongs to someone else."""
    if p.start and hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
        try:
            fd = os.pidfd_open(p.pid)
        except (ProcessLookupError, OSError):
            return False
        try:
            now = _read_stat(p.pid)
            if now is None or now.start != p.start:
                return False  # the pid was reused between the scan and now
            signal.pidfd_send_signal(fd, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False
        finally:
            os.close(fd)
    try:
        os.kill(p.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap_pid(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _new_token() -> str:
    """A run token that also names its owner, so a later run can tell when the owner died."""
    me = _read_stat(os.getpid())
    return f"{os.getpid()}-{me.start if me is not None else 0}-{uuid.uuid4().hex}"


def sweep_abandoned() -> int:
    """Kill what recipes of a loop-verify that was itself killed (SIGKILL, a crash) left running.

    A killed loop-verify cannot sweep its recipe's tree; the next run does, by the run token whose
    owner (pid and start time) no longer exists. One pass over /proc (Linux only); returns how many
    processes it killed.
    """
    if not _USE_PROC:
        return 0
    me = os.getpid()
    killed = 0
    for p in _scan_all():
        if p.zombie or p.pid == me:
            continue
        token = _token_of(p.pid)
        if token is None:
            continue
        owner_pid, _, rest = token.partition("-")
        owner_start, _, _ = rest.partition("-")
        if not (owner_pid.isdigit() and owner_start.isdigit()) or int(owner_pid) == me:
            continue
        owner = _read_stat(int(owner_pid))
        if owner is None or owner.start != int(owner_start):
            killed += _send(p, signal.SIGKILL)
    return killed


def _token_of(pid: int) -> str | None:
    """The run token a process was started with, if any (its environment at exec time)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    prefix = f"{TOKEN_VAR}=".encode()
    for entry in data.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode("ascii", errors="replace")
    return None


def _read_stat(pid: int) -> _Proc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; the fields follow the last ')'.
    fields = data[data.rindex(b")") + 2:].split()
    return _Proc(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]),
                 zombie=fields[0] in (b"Z", b"X"), start=int(fields[19]))


def _scan_all() -> list[_Proc]:
    if not _USE_PROC:
        return _ps_table()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _read_stat(int(name))
            if stat is not None:
                found.append(stat)
    return found


def _ps_table() -> list[_Proc]:
    """One `ps` call for systems without /proc (macOS)."""
    try:
        done = subprocess.run(
            ["ps", "-axo", "pid=,ppid=,pgid=,stat="], capture_output=True, timeout=10,
            check=False, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    table = []
    for line in done.stdout.decode("ascii", errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit() and parts[2].isdigit():
            table.append(_Proc(pid=int(parts[0]), ppid=int(parts[1]), pgid=int(parts[2]),
                               sid=-1, zombie=parts[3].startswith("Z"), start=0))
    return table
