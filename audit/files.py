"""Reading the audit's input files (snapshots, the push log, the charter, the last report).

They live where the run can write, and a FIFO or a device in their place made closeout wait
forever on the read: a regular file is the only thing read, opened without blocking."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def read_regular(path: Path | str) -> bytes:
    """The file's bytes; OSError (FileNotFoundError when absent) for anything that is not a
    regular file once symlinks are followed."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read()
    finally:
        if fd >= 0:
            os.close(fd)
