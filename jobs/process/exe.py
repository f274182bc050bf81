"""How `git` and `just` are started: the program, found on PATH's absolute folders only, and an
environment that names no other repository.

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
from collections.abc import Mapping, MutableMapping


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


# Variables that point git at another repository (set, say, when loop-verify runs from inside a
# git hook). Each repository loop-verify works on is named by its path alone.
REPOSITORY_ENV_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_IMPLICIT_WORK_TREE", "GIT_PREFIX",
    "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE",
    "GIT_INTERNAL_SUPER_PREFIX",
)


def isolate_environment(environ: MutableMapping[str, str]) -> None:
    """Drop what would send git (ours and a recipe's) to a repository other than the one named."""
    for name in REPOSITORY_ENV_VARS:
        environ.pop(name, None)
