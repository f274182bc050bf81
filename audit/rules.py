"""The contract's rules that need no git and no snapshot walking: which ref is the default
branch, what changed, which log entries chain one value to another, what a release-please commit
looks like, and which log entries' ranges hold a commit (the reach sets)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from audit.model import Change, Commit
from audit.pushlog import ZERO, PushEntry

BACKLOG_DIR = "backlog/"
RELEASE_MANIFEST = ".release-please-manifest.json"
CHANGELOG = "CHANGELOG.md"
VERSION_FILES = frozenset({
    "package.json", "package-lock.json", "pyproject.toml", "setup.py", "setup.cfg",
    "Cargo.toml", "Cargo.lock", "version.txt", "version.py", "_version.py",
})
_RELEASE_SUBJECT = re.compile(
    r"^chore(?:\((?P<scope>[^()\s]+)\))?: release "
    r"(?:(?P<component>[A-Za-z0-9@][A-Za-z0-9@/._-]*) )?"
    r"v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?"
    r"(?: \(#\d+\))?$")
LOCAL = "local"
PEELED = "^{}"


def entry_covers_remote(entry: PushEntry, name: str, part: Mapping[str, Any]) -> bool:
    # A push by URL names the URL git went to, which may be where an insteadOf rule sends it.
    urls = [part.get("url"), *part.get("pushurls", []), *part.get("rewritten_to", [])]
    return entry.remote == name or entry.remote in [u for u in urls if u]


def default_branch(b_part: Mapping[str, Any], a_part: Mapping[str, Any]) -> str:
    """The remote's HEAD symref as the run found it (else as it left it), else main."""
    for part in (b_part, a_part):
        target = part.get("symrefs", {}).get("HEAD")
        if isinstance(target, str) and target.startswith("refs/heads/"):
            return target
    return "refs/heads/main"


def ref_changes(b_refs: Mapping[str, str], a_refs: Mapping[str, str]) -> list[Change]:
    """Changed refs; ls-remote's peeled `^{}` lines describe a tag, they are not refs."""
    out: list[Change] = []
    for ref in sorted(set(b_refs) | set(a_refs)):
        if ref.endswith(PEELED):
            continue
        old, new = b_refs.get(ref), a_refs.get(ref)
        if old != new:
            out.append(Change(ref, old, new))
    return out


def judged_branch(b_part: Mapping[str, Any], a_part: Mapping[str, Any]) -> Change | None:
    """The default-branch change whose commits are judged one by one, if any."""
    ref = default_branch(b_part, a_part)
    old, new = b_part.get("refs", {}).get(ref), a_part.get("refs", {}).get(ref)
    if old == new or new is None:
        return None
    return Change(ref, old, new)



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


def is_release_subject(subject: str, branch: str) -> bool:
    match = _RELEASE_SUBJECT.match(subject)
    if match is None:
        return False
    scope = match.group("scope")
    return scope is None or scope == branch


def is_release_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path == RELEASE_MANIFEST or name == CHANGELOG or name in VERSION_FILES



def reach_bits(commits: Sequence[Commit], entries: Sequence[PushEntry]) -> dict[str, int]:
    """For each commit, bit 2i+1 when entry i's new tip reaches it and bit 2i+2 when its old
    tip does (bit 0 is unused here). One pass over the graph, children before parents, whatever
    the number of entries: a Python int is a set of bits."""
    bits: dict[str, int] = {c.sha: 0 for c in commits}
    for i, e in enumerate(entries):
        if e.new in bits:
            bits[e.new] |= 1 << (2 * i + 1)
        if e.old in bits:
            bits[e.old] |= 1 << (2 * i + 2)
    parents = {c.sha: [p for p in c.parents if p in bits] for c in commits}
    for sha in children_first(commits):
        value = bits[sha]
        if value:
            for p in parents[sha]:
                bits[p] |= value
    # Shift so that bit 2i means "new reaches" and bit 2i+1 "old reaches".
    return {sha: v >> 1 for sha, v in bits.items()}


def children_first(commits: Sequence[Commit]) -> list[str]:
    """A topological order of the graph (every commit before its parents), Kahn's way."""
    shas = {c.sha for c in commits}
    waiting = dict.fromkeys(shas, 0)
    for c in commits:
        for p in c.parents:
            if p in shas:
                waiting[p] += 1
    parents = {c.sha: c.parents for c in commits}
    ready = [c.sha for c in commits if waiting[c.sha] == 0]
    order: list[str] = []
    while ready:
        sha = ready.pop()
        order.append(sha)
        for p in parents[sha]:
            if p in shas:
                waiting[p] -= 1
                if waiting[p] == 0:
                    ready.append(p)
    return order
