"""The contract's rules that need no git: how a ref's change chains through the push log, and the
words a finding uses for refs, paths and log lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.model import ZERO, PushEntry
from audit.refs import covering

LOCAL = "local"


def entry_covers_remote(entry: PushEntry, name: str, part: Mapping[str, Any],
                        remotes: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
    """Does this log entry cover remote `name`? Its `remote` is that name, or a URL of it, or
    another remote (of `remotes`, the repository's remotes in either snapshot) sharing a URL
    with it after insteadOf: a push through one name lands wherever the URL leads."""
    return bool(covering([entry], name, part, remotes))


def noun(ref: str) -> str:
    if ref.startswith("refs/heads/"):
        return "branch"
    if ref.startswith("refs/tags/"):
        return "tag"
    return "ref"


def paths_note(paths: Sequence[str], limit: int = 3) -> str:
    if not paths:
        return "no paths"
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")



def chain(entries: Sequence[PushEntry], old: str | None, new: str | None) -> list[PushEntry] | None:
    """Log entries leading from `old` to `new` (zeros for absent), or None when none do."""
    start, goal = old or ZERO, new or ZERO
    came: dict[str, PushEntry | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for sha in frontier:
            for entry in entries:
                if entry.old == sha and entry.new not in came:
                    came[entry.new] = entry
                    nxt.append(entry.new)
        frontier = nxt
    if goal not in came or goal == start:
        return None
    path: list[PushEntry] = []
    at = goal
    while at != start:
        step = came[at]
        assert step is not None
        path.append(step)
        at = step.old
    return path[::-1]


def lines(entries: Sequence[PushEntry]) -> str:
    return ", ".join(str(e.line) for e in entries)
