"""What git says about a work tree and a commit to come, as plain data the pure rules read
(jobs/verify/rules/): filled in by jobs/git/repo.py, which runs git."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkTreeState:
    branch: str | None          # None when HEAD is detached
    changes: tuple[str, ...]    # staged, unstaged and untracked paths; ignored files excluded

    @property
    def clean(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class CommitFacts:
    """What stands in the way of a commit here, as git reports it."""

    locks: tuple[Path, ...] = ()                 # lock files a commit would need to take
    signing: bool = False                        # commit.gpgsign is set
    signing_error: str | None = None             # why a signed commit fails, when it does
    ignored: tuple[tuple[str, str], ...] = ()    # (path, "file:line:pattern" ignoring it)
    unwritable: tuple[tuple[str, str], ...] = ()  # (folder, why no task file can be written)
