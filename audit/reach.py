"""Reach sets: which push-log entries' ranges hold which commit, and whether each logged push was
a fast-forward, worked out from the graph git listed.

Plain functions of plain data, shared by the evidence side (which asks git only about what the
graph cannot settle, and reads a commit's paths only where no entry covers it) and the judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from audit.model import ZERO, Commit, PushEntry

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
    bits: dict[str, int] = dict.fromkeys((c.sha for c in commits), 0)
    for i, e in enumerate(entries):
        if e.new in bits:
            bits[e.new] |= new_bit(i)
        if e.old in bits:
            bits[e.old] |= old_bit(i)
    order = commits if is_children_first(commits) else _kahn(commits)
    for c in order:
        value = bits[c.sha]
        if value:
            for p in c.parents:
                if p in bits:
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


def is_children_first(commits: Sequence[Commit]) -> bool:
    """Is every commit listed before its parents (git's `--topo-order`)? One pass."""
    seen: set[str] = set()
    add = seen.add
    for c in commits:
        for p in c.parents:
            if p in seen:
                return False
        add(c.sha)
    return True


def _kahn(commits: Sequence[Commit]) -> list[Commit]:
    by_sha = {c.sha: c for c in commits}
    waiting = dict.fromkeys(by_sha, 0)
    for c in commits:
        for p in c.parents:
            if p in by_sha:
                waiting[p] += 1
    ready = [c for c in commits if waiting[c.sha] == 0]
    order: list[Commit] = []
    while ready:
        c = ready.pop()
        order.append(c)
        for p in c.parents:
            if p in by_sha:
                waiting[p] -= 1
                if waiting[p] == 0:
                    ready.append(by_sha[p])
    return order
