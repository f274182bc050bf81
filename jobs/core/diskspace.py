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
