"""A run's claim on the recipes it starts, and the start-of-run sweep of what dead runs left.

The sweep touches only processes that carry the token of a run of *this* state directory whose
lock is free (the run is dead), that run as this user, in this PID namespace — never another
user's, another state directory's or another PID namespace's (a container's).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import uuid
from pathlib import Path
from types import TracebackType

import psutil

from jobs.process.tree import pid_namespace, send, token_of

SCOPE_DIR = "procs"


class Scope:
    """One loop-verify run's claim on the recipes it starts: a locked file in
    `<state_dir>/procs/`, named by the id every token of the run begins with.

    The lock is an flock, which the kernel drops when the run dies however it dies: a free lock
    proves its run is gone, so what carries its tokens was left behind.
    """

    def __init__(self, state_dir: Path | None, run_id: str | None = None) -> None:
        self.folder = Path(state_dir) / SCOPE_DIR if state_dir is not None else None
        # The run's id names its claim, so a later run can tell whether this one is alive.
        self.id = run_id if run_id and "." not in run_id and "/" not in run_id else (
            uuid.uuid4().hex)
        self.fd: int | None = None
        self.path: Path | None = None
        self.count = 0
        self.swept: int | None = None

    def __enter__(self) -> Scope:
        if self.folder is None:
            return self
        tmp = self.folder / f".{self.id}.tmp"
        fd = -1
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps({"pid": os.getpid(), "pidns": pid_namespace(),
                                     "uid": os.getuid()}).encode())
            # Locked before it gets the name a sweep looks for: never seen free while alive.
            path = self.folder / f"{self.id}.lock"
            os.replace(tmp, path)
        except OSError:
            # Without a claim nothing of this run can ever be swept: safe, only less tidy.
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return self
        self.fd, self.path = fd, path
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.fd is not None and self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
            self.fd = None

    def run_is_dead(self, run_id: str) -> bool:
        """Whether the run `run_id` of this state directory is provably dead: its claim is
        here, its lock free, and it ran in this PID namespace as this user. A run of another
        state directory, one whose claim is gone, or one that cannot be looked at is not."""
        if self.folder is None or run_id == self.id or "/" in run_id:
            return False
        fd = _dead_claim(self.folder / f"{run_id}.lock", pid_namespace())
        if fd is None:
            return False
        os.close(fd)
        return True

    def token(self) -> str:
        self.count += 1
        return f"{self.id}.{self.count}"

    def sweep_once(self) -> int:
        """`sweep_abandoned`, the first time only; how many processes it killed."""
        if self.swept is None:
            self.swept = self.sweep_abandoned()
            return self.swept
        return 0

    def sweep_abandoned(self) -> int:
        """Kill what recipes of this state directory's dead runs left running."""
        if self.folder is None or not self.folder.is_dir():
            return 0
        my_ns = pid_namespace()
        dead: dict[str, tuple[int, Path]] = {}
        try:
            try:
                claims = sorted(self.folder.glob("*.lock"))
            except OSError:
                return 0
            for path in claims:
                if path.stem == self.id:
                    continue
                held = _dead_claim(path, my_ns)
                if held is not None:
                    dead[path.stem] = (held, path)
            _remove_unfinished_claims(self.folder)
            if not dead:
                return 0
            killed = _kill_tokens(set(dead), my_ns)
            for _fd, path in dead.values():
                with contextlib.suppress(OSError):
                    path.unlink()
            return killed
        finally:
            for fd, _path in dead.values():
                os.close(fd)


def _remove_unfinished_claims(folder: Path) -> None:
    """A run killed while it made its claim left a temporary file; its lock says it is dead."""
    with contextlib.suppress(OSError):
        for path in folder.glob(".*.tmp"):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
            except OSError:
                pass
            finally:
                os.close(fd)


def _dead_claim(path: Path, my_ns: str | None) -> int | None:
    """The locked descriptor of a claim whose run is dead and was ours to sweep, else None."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        info = json.loads(os.read(fd, 4096) or b"{}")
        # A run of another PID namespace (a container sharing the folder) is never ours.
        if my_ns is not None and info.get("pidns") == my_ns and info.get("uid") == os.getuid():
            return fd
    except (OSError, ValueError, AttributeError):
        pass
    os.close(fd)
    return None


def _kill_tokens(owners: set[str], my_ns: str | None) -> int:
    uid = os.getuid()
    killed = 0
    for pid in psutil.pids():
        try:
            # Looked up afresh (never psutil's cache): a pid reused since is another process.
            p = psutil.Process(pid)
            if pid == os.getpid() or p.uids().real != uid:
                continue
        except psutil.Error:
            continue
        token = token_of(p)
        if token is None or token.partition(".")[0] not in owners:
            continue
        if my_ns is None or pid_namespace(p.pid) != my_ns:
            continue
        killed += send(p, signal.SIGKILL)
    return killed
