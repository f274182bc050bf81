"""The contract's rules that need no git and no snapshot walking: which ref is the default
branch, what changed, which log entries chain one value to another, what a release-please commit
looks like, and which log entries' ranges hold a commit (the reach sets)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from audit.model import ZERO, Change, Commit, PushEntry
from jobs.core.urls import github_remote, redact_url

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


def remote_urls(part: Mapping[str, Any]) -> set[str]:
    """Every URL a remote names, as configured and where insteadOf rules send it, redacted and
    normalised: how remotes (and push-log entries) are compared."""
    urls = [part.get("url"), *part.get("pushurls", []), *part.get("rewritten_to", [])]
    return {_same_url(u) for u in urls if isinstance(u, str) and u}


def _same_url(url: str) -> str:
    """One spelling per repository: a local path as `/p`, `/p/` or `file:///p`; a github.com
    repository as https, ssh or scp-like, with or without `.git`, in any case (GitHub's names
    are case-insensitive). Anything else only loses a trailing slash."""
    url = redact_url(url).rstrip("/")
    found = github_remote(url)
    if found is not None:
        return "github:" + found[1].lower()
    if url.startswith("file://"):
        path = unquote(url.removeprefix("file://"))
        url = path if path.startswith("/") else url
    if "://" not in url and url.startswith("/"):
        url = os.path.normpath(url)
    return url


def entry_covers_remote(entry: PushEntry, name: str, part: Mapping[str, Any],
                        remotes: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
    """Does this log entry cover remote `name`? Its `remote` is that name, or a URL of it, or
    another remote (of `remotes`, the repository's remotes in either snapshot) sharing a URL
    with it after insteadOf: a push through one name lands wherever the URL leads."""
    return bool(covering([entry], name, part, remotes))


def covering(entries: Sequence[PushEntry], name: str, part: Mapping[str, Any],
             remotes: Mapping[str, Mapping[str, Any]] | None = None) -> list[PushEntry]:
    """The entries that cover remote `name` (see `entry_covers_remote`), in one pass: what each
    distinct `remote` value of the log means is worked out once, not once per entry."""
    mine = remote_urls(part)
    known = remotes or {}
    verdict: dict[str, bool] = {}
    out: list[PushEntry] = []
    for e in entries:
        said = e.remote
        if said not in verdict:
            other = known.get(said)
            verdict[said] = (said == name or _same_url(said) in mine
                             or (other is not None and bool(remote_urls(other) & mine)))
        if verdict[said]:
            out.append(e)
    return out


class EntryIndex:
    """A remote's push-log entries, indexed once by ref: judging 8,000 tags must not rescan
    the whole log for each one."""

    def __init__(self, entries: Sequence[PushEntry]) -> None:
        self.all: tuple[PushEntry, ...] = tuple(entries)
        self._by_ref: dict[str, list[PushEntry]] | None = None

    def of_ref(self, ref: str) -> list[PushEntry]:
        if self._by_ref is None:
            self._by_ref = {}
            for e in self.all:
                self._by_ref.setdefault(e.ref, []).append(e)
        return self._by_ref.get(ref, [])


def default_branch(b_part: Mapping[str, Any], a_part: Mapping[str, Any]) -> str:
    """The remote's HEAD symref as the run found it, else main. HEAD as the run left it counts
    only for a remote that had no branch at all when the run started: a HEAD that named no
    existing branch then (a server advertises none) must not let the run choose its default
    branch by creating the one it names, and so have main judged like any other branch."""
    target = b_part.get("symrefs", {}).get("HEAD")
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target
    if not any(ref.startswith("refs/heads/") for ref in b_part.get("refs", {})):
        target = a_part.get("symrefs", {}).get("HEAD")
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



# Reach sets. Which log entries' ranges hold which commit is worked out in one pass over the graph
# whatever the number of entries, with a Python int as a set of bits: for entry i, bit 2i says
# "its new tip reaches this commit" and bit 2i+1 "its old tip does".

def new_bit(i: int) -> int:
    return 1 << (2 * i)


def old_bit(i: int) -> int:
    return 1 << (2 * i + 1)


def new_bits(indexes: Iterable[int]) -> int:
    """The "new tip reaches" bits of these entries: a mask to ask about them only."""
    mask = 0
    for i in indexes:
        mask |= new_bit(i)
    return mask


def ranges_holding(reach: int, mask: int) -> int:
    """The new bits (within `mask`) of the entries whose range old..new holds a commit with
    this reach set: its new tip reaches the commit and its old tip does not."""
    return reach & ~(reach >> 1) & mask


def first_entry(bits: int) -> int:
    """The lowest entry index among these new bits (the earliest log line)."""
    return ((bits & -bits).bit_length() - 1) // 2


def reach_bits(commits: Sequence[Commit], entries: Sequence[PushEntry]) -> dict[str, int]:
    """For each commit, its reach set: new_bit(i) when entry i's new tip reaches it, old_bit(i)
    when its old tip does. One pass over the graph, children before parents."""
    bits: dict[str, int] = {c.sha: 0 for c in commits}
    for i, e in enumerate(entries):
        if e.new in bits:
            bits[e.new] |= new_bit(i)
        if e.old in bits:
            bits[e.old] |= old_bit(i)
    parents = {c.sha: [p for p in c.parents if p in bits] for c in commits}
    for sha in children_first(commits):
        value = bits[sha]
        if value:
            for p in parents[sha]:
                bits[p] |= value
    return bits


def entry_ancestry(commits: Sequence[Commit], entries: Sequence[PushEntry],
                   bits: Mapping[str, int] | None = None) -> list[bool | None]:
    """For each entry, is its old tip an ancestor of its new tip (a fast-forward push)?

    `commits` is what git listed: every commit reachable from the tips it was given and not
    from the excluded ones. An old tip inside that graph is an ancestor exactly when the new
    tip's reach set holds it (any path between them lies inside the graph). An old tip outside
    it is an ancestor when it is a parent, on the graph's edge, of a commit the new tip reaches;
    otherwise the graph cannot tell (None: ask git). Creations and deletions are None too.
    `bits`, when given, is `reach_bits(commits, entries)` already worked out."""
    if bits is None:
        bits = reach_bits(commits, entries)
    answers: list[bool | None] = [None] * len(entries)
    edge: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        if ZERO in (e.old, e.new):
            continue
        if e.old in bits:
            answers[i] = bool(bits[e.old] & new_bit(i)) and e.new in bits
        elif e.new in bits:
            edge.setdefault(e.old, []).append(i)
    if edge:
        for c in commits:
            for p in c.parents:
                for i in edge.get(p, ()) if p not in bits else ():
                    if bits[c.sha] & new_bit(i):
                        answers[i] = True
    return answers


def children_first(commits: Sequence[Commit]) -> list[str]:
    """A topological order of the graph (every commit before its parents): the given order when
    it already is one (git's `--topo-order`, checked in one pass), else Kahn's."""
    position = {c.sha: i for i, c in enumerate(commits)}
    if all(position.get(p, len(commits)) > i
           for i, c in enumerate(commits) for p in c.parents):
        return [c.sha for c in commits]
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
