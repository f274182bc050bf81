"""A recipe's output into its file, at most `output_limit` of it: the head and the tail, with one
line between saying how many bytes were dropped (SPEC: a noisy recipe never fills the disk that
holds the ledger).

The recipe writes into a pipe we read (a file it wrote itself could not be capped). Output is
written straight to the file while it fits, so the file is whole for a quiet recipe and can be
followed while it runs; once it would pass the limit, the file is cut back to its head and the
tail is kept in memory (at most half the limit) and written after the marker at the end.
"""

from __future__ import annotations

import errno
import os
from collections import deque

READ_SIZE = 1 << 20
DEFAULT_OUTPUT_LIMIT = 16 << 20  # SPEC: output_limit, 16 MiB (as jobs/config/sizes.py)


class Capture:
    """The output file of one recipe, fed from the pipe's read end."""

    def __init__(self, out_fd: int, limit: int) -> None:
        self.fd = out_fd           # opened read-write: the cut reads back what passed the head
        self.limit = limit
        self.head = limit // 2
        self.tail_max = limit - self.head
        self.total = 0             # every byte the recipe wrote
        self.written = 0           # bytes in the file before the cut
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.cut = False
        self.head_ends_line = True
        self.error: OSError | None = None  # the file could not be written (a full disk)

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if self.error is not None:
            return
        if not self.cut:
            if self.total <= self.limit:
                self._write(data)
                return
            data = self._cut(data)
            if self.error is not None:
                return
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_max:
            self.tail_len -= len(self.tail.popleft())

    def _cut(self, data: bytes) -> bytes:
        """The output passes the limit: the file keeps its head, the rest starts the tail.
        Returns what of `data` goes to the tail."""
        self.cut = True
        if self.written < self.head:
            fill = self.head - self.written
            self._write(data[:fill])
            data = data[fill:]
            if self.error is not None:
                return b""
        try:
            kept = os.pread(self.fd, self.written - self.head, self.head)
            self.head_ends_line = not self.head or os.pread(self.fd, 1, self.head - 1) == b"\n"
            os.ftruncate(self.fd, self.head)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError as exc:
            self.error = exc
            return b""
        if kept:
            self.tail.append(kept)
            self.tail_len += len(kept)
        return data

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError as exc:
                self.error = exc
                return
            view = view[n:]
            self.written += n

    def pump(self, read_fd: int) -> bool:
        """Read what the pipe holds now (never waiting); False once every writer is gone."""
        while True:
            try:
                data = os.read(read_fd, READ_SIZE)
            except BlockingIOError:
                return True
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    return True
                raise
            if not data:
                return False
            self.feed(data)

    @property
    def dropped(self) -> int:
        return max(0, self.total - self.head - self.tail_max) if self.cut else 0

    def finish(self) -> None:
        """Write the marker line and the tail when the output was cut."""
        if not self.cut or self.error is not None:
            return
        tail = b"".join(self.tail)[-self.tail_max:]
        marker = (f"[loop-verify: {self.dropped} bytes of output dropped here; output_limit "
                  f"keeps the first {self.head} and the last {len(tail)}]\n").encode()
        self._write((b"" if self.head_ends_line else b"\n") + marker + tail)


class Pipe:
    """The read end of the recipe's output pipe, feeding its Capture until every writer is gone."""

    def __init__(self, fd: int, out: Capture) -> None:
        self.fd = fd
        self.out = out
        self.open = True

    def pump(self) -> None:
        if self.open:
            self.open = self.out.pump(self.fd)

