"""The end of a recipe's output, as an exit summary shows it (SPEC: at most the last 20 lines
and 2 KB)."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_LINES = 20
TAIL_BYTES = 2048


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
