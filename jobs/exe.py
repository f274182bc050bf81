"""Where `git` and `just` are: found on PATH's absolute folders only.

loop-verify starts both with a repository as their working directory. A relative PATH entry
(`.`, or the empty one a stray colon makes: `PATH=:/usr/bin`) is looked up from there, so a
repository holding an executable `git` or `just` would have it started in their place, by
`run --dry-run` too. The argument vector is unchanged (`just` stays its first word); only the
program started is pinned.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
from collections.abc import Mapping


def executable(name: str, env: Mapping[str, str] | None = None) -> str:
    """The program to start for `name`: a path as given; else the one on the absolute folders
    of the PATH in `env` (the environment it is started with, as subprocess looks it up; by
    default ours); else FileNotFoundError, as when it is on no folder of PATH at all."""
    if os.sep in name:
        return name
    found = _on_path(name, (os.environ if env is None else env).get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return found


@functools.lru_cache(maxsize=8)
def _on_path(name: str, path: str) -> str | None:
    folders = os.pathsep.join(d for d in path.split(os.pathsep) if os.path.isabs(d))
    return shutil.which(name, path=folders)
