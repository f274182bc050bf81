"""Atomic file replacement and exclusive locks that die with the process."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new file, never a mix."""
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry must reach the disk too."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LockBusy(Exception):
    """Another process holds the lock."""


@contextlib.contextmanager
def exclusive_lock(path: Path, *, wait: bool = False) -> Iterator[int]:
    """Hold an flock on `path` for the block.

    The kernel drops an flock when its last descriptor closes, so a killed process never leaves a
    stale lock. The descriptor is close-on-exec: a recipe's grandchild must never inherit it and
    block tomorrow's run.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockBusy(str(path)) from exc
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield fd
    finally:
        os.close(fd)


def cannot_write_into(folder: Path) -> str | None:
    """Why no file can be created in `folder` (or, while it does not exist, in its nearest
    existing parent, where it would be made), or None.

    Tried for real — a probe file created and removed — because no mode bit tells: root writes
    where the mode says no, and not into an immutable folder, a read-only mount or a full disk.
    """
    folder = Path(folder)
    while not folder.is_dir() and folder.parent != folder:
        folder = folder.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".loop-verify-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


@contextlib.contextmanager
def exclusive_dir_lock(folder: Path) -> Iterator[int]:
    """Hold an flock on the folder itself for the block (LockBusy when another holds it).

    A lock file in a folder others write to can be deleted under its holder (a recipe's
    `rm -f .git/*.lock` clean-up): the next process then locks a new file of the same name and
    both go ahead. The folder cannot go while it holds what the holder works on. Dropped by the
    kernel when the process dies, however it dies; close-on-exec, so no child inherits it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockBusy(str(folder)) from exc
            raise
        yield fd
    finally:
        os.close(fd)


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The file's bytes (at most `limit` of them); OSError (FileNotFoundError when absent) for
    anything that is not a regular file once symlinks are followed. A FIFO or a device where a
    file is expected (in a folder a run or another machine can write) would block the open or
    the read for ever, or never end: it is opened without blocking and refused."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read() if limit is None else fh.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)
