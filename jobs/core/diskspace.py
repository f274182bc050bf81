"""Is there room for a recipe's output? A full file system under `state_dir` makes the recipe's
own writes to its output fail ("No space left on device"), `just` and most programs then exit
non-zero, and that failure is the machine's, not the task's: it must never reopen a task."""

from __future__ import annotations

import os
from pathlib import Path

# Below this much free space a recipe's output may not fit: no recipe is started, and a recipe
# that failed while the file system was this full is not judged.
MIN_FREE = 1 << 20


def short_of_space(folder: Path, need: int = MIN_FREE) -> str | None:
    """Why `folder`'s file system cannot be trusted to take a recipe's output, or None."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None  # cannot tell; opening and writing the file say what is wrong
    # root may also write into the blocks a file system reserves for it.
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    free = blocks * st.f_frsize
    if free >= need:
        return None
    return f"its file system is full ({free // 1024} KiB free)"


def largest_files(folder: Path, count: int = 3) -> str:
    """What fills `folder`'s tree: its largest files, for a message saying why a disk is full."""
    sizes: list[tuple[int, str]] = []
    for top, _dirs, files in os.walk(folder, onerror=lambda _exc: None):
        for name in files:
            path = os.path.join(top, name)
            try:
                sizes.append((os.lstat(path).st_blocks * 512, path))
            except OSError:
                continue
    sizes.sort(reverse=True)
    if not sizes or sizes[0][0] == 0:
        return f"nothing large under {folder}: the space went elsewhere on that file system"
    shown = ", ".join(f"{os.path.relpath(path, folder)} ({_size(size)})"
                      for size, path in sizes[:count] if size)
    return f"the largest files under {folder}: {shown}"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"

