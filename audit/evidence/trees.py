"""What a commit changes, worked out again from tree objects checked against their names.

git checks an object against its name where a walk starts, not where it follows a tree entry: a
tree object file the run rewrote in its clone changes the paths `git log` reports for a commit
(a code change can read as a task edit). A commit that could pass *because of its paths*
(BACKLOG_ONLY, RELEASE_PLEASE) is therefore compared again here, from its checked commit object
down: each tree on the way is hashed against its name, and only subtrees whose entries differ
are read, as git's own diff does. The paths found must be exactly those git reported.

Pure except for `read`, which the caller gives: it returns the checked objects of a batch of
names (one `cat-file --batch` per level of the trees, never one process per object).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from audit.evidence import git
from audit.model import BACKLOG_DIR, Commit

TREE_MODE = b"40000"
# gitlinks and symbolic links, as tree objects spell their modes
LINK_MODES = tuple(mode.encode() for mode in git.LINK_MODES)
# `<mode> SP <name> NUL <raw object name>`: 20 bytes for SHA-1, 32 for SHA-256
_ENTRY = {n: rb"([0-7]+) ([^\0]+)\0(.{%d})" % n for n in (20, 32)}
_ENTRIES = {n: re.compile(p, re.DOTALL) for n, p in _ENTRY.items()}
_TREE = {n: re.compile(rb"(?:%s)*" % p.replace(b"(", b"(?:"), re.DOTALL) for n, p in _ENTRY.items()}

# A tree's entries as (mode, name, raw object name): sets, so that two versions of a big
# folder are compared in C, and only the few entries that differ are looked at in Python.
Entries = frozenset[tuple[bytes, bytes, bytes]]
# Checked objects by name: (type, content), or None when missing or not matching its name.
Read = Callable[[Sequence[str]], Mapping[str, tuple[str, bytes] | None]]


def tree_entries(body: bytes, raw_len: int) -> Entries | None:
    """A tree object's entries, or None when its content is not a well-formed tree (bytes no
    entry accounts for, a name twice)."""
    if _TREE[raw_len].fullmatch(body) is None:
        return None
    found = _ENTRIES[raw_len].findall(body)
    entries = frozenset(found)
    return entries if len(set(map(itemgetter(1), found))) == len(found) else None


def commit_tree(body: bytes) -> str | None:
    """The tree a commit object names (its first line), or None when it names none."""
    first, _, _ = body.partition(b"\n")
    kind, _, name = first.partition(b" ")
    return name.decode("ascii") if kind == b"tree" and name.isalnum() else None


def commit_parents(body: bytes) -> tuple[str, ...]:
    """The parents a commit object names (the `parent` lines of its header)."""
    head, _, _ = body.partition(b"\n\n")
    return tuple(line[7:].decode("ascii", "replace") for line in head.split(b"\n")
                 if line.startswith(b"parent "))


_NONE: Entries = frozenset()


@dataclass
class _Pair:
    """Two trees at one path of one commit: the commit's (`new`) and a parent's (`old`)."""

    commit: str
    prefix: str
    new: str | None
    old: str | None


def _differ(pair: _Pair, new: Entries, old: Entries, paths: set[str], gitlinks: set[str],
            deeper: list[_Pair]) -> None:
    """Add the paths whose entries differ; queue the subtrees to compare."""
    added = {name: (mode, raw) for mode, name, raw in new - old}
    removed = {name: (mode, raw) for mode, name, raw in old - new}
    for name in added.keys() | removed.keys():
        a, b = added.get(name), removed.get(name)
        path = pair.prefix + name.decode("utf-8", "replace")
        sub_new = a[1].hex() if a is not None and a[0] == TREE_MODE else None
        sub_old = b[1].hex() if b is not None and b[0] == TREE_MODE else None
        if sub_new or sub_old:
            deeper.append(_Pair(pair.commit, path + "/", sub_new, sub_old))
        files = [e for e in (a, b) if e is not None and e[0] != TREE_MODE]
        if files:  # a file, link or gitlink on at least one side: git names the path
            paths.add(path)
            if any(e[0] in LINK_MODES for e in files):
                gitlinks.add(path)


def recheck_paths(commits: Iterable[Commit], objects: Mapping[str, tuple[str, bytes] | None],
                  read: Read) -> dict[str, str]:
    """For each of `commits` whose paths as git reported them cannot be trusted, why: its checked
    trees do not give exactly those paths (and, for a commit changing only backlog/, the
    gitlinks git reported), or a tree on the way does not match its name. `objects` holds the
    checked objects of the commits and of their parents. Commits whose trees bear git out are
    left out."""
    problems: dict[str, str] = {}
    pairs: list[_Pair] = []
    expected: dict[str, tuple[set[str], set[str] | None]] = {}
    for c in commits:
        why, own = _root_pairs(c, objects)
        if why is not None:
            problems[c.sha] = why
            continue
        # Gitlinks are read only for a commit that changes backlog/ alone (audit.evidence.history).
        backlog_only = all(p.startswith(BACKLOG_DIR) for p in c.paths)
        expected[c.sha] = (set(c.paths), set(c.gitlinks) if backlog_only else None)
        pairs.extend(own)
    found: dict[str, tuple[set[str], set[str]]] = {sha: (set(), set()) for sha in expected}
    parsed: dict[str, Entries] = {}
    bad: set[str] = set()
    while pairs:
        wanted = sorted({s for p in pairs for s in (p.new, p.old)
                         if s and s not in parsed and s not in bad})
        if wanted:
            got_trees = read(wanted)
            for sha in wanted:
                got = got_trees.get(sha)
                entries = (tree_entries(got[1], len(sha) // 2)
                           if got is not None and got[0] == "tree" else None)
                if entries is None:
                    bad.add(sha)
                else:
                    parsed[sha] = entries
        deeper: list[_Pair] = []
        for p in pairs:
            if p.commit in problems:
                continue
            broken = next((s for s in (p.new, p.old) if s and s in bad), None)
            if broken is not None:
                problems[p.commit] = (
                    f"tree {broken[:12]} in the clone does not match its name (its object file "
                    "was edited) or is missing: what the commits change cannot be read")
                continue
            paths, gitlinks = found[p.commit]
            _differ(p, parsed[p.new] if p.new else _NONE, parsed[p.old] if p.old else _NONE,
                    paths, gitlinks, deeper)
        pairs = [p for p in deeper if p.commit not in problems]
    for sha, (paths, gitlinks) in found.items():
        want_paths, want_gitlinks = expected[sha]
        if sha not in problems and (paths != want_paths or (
                want_gitlinks is not None and gitlinks != want_gitlinks)):
            problems[sha] = (f"commit {sha[:12]}'s checked trees do not change the paths git "
                             "reported (an object file in the clone was edited): what it changes "
                             "cannot be read")
    return problems


def _root_pairs(c: Commit, objects: Mapping[str, tuple[str, bytes] | None]
                ) -> tuple[str | None, list[_Pair]]:
    """The commit's root tree against each parent's (its root alone for a root commit), or why
    they cannot be read from checked objects."""
    got = objects.get(c.sha)
    tree = commit_tree(got[1]) if got is not None and got[0] == "commit" else None
    if tree is None:
        return f"commit {c.sha[:12]} could not be read back from a checked object", []
    pairs: list[_Pair] = []
    for parent in c.parents or (None,):
        old = None
        if parent is not None:
            got = objects.get(parent)
            old = commit_tree(got[1]) if got is not None and got[0] == "commit" else None
            if old is None:
                return (f"parent {parent[:12]} of commit {c.sha[:12]} does not match its name "
                        "or is missing"), []
        pairs.append(_Pair(c.sha, "", tree, old))
    return None, pairs
