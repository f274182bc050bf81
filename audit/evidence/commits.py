"""What the commits of a judged range are, and what those no push-log entry covers change.

A commit a log entry covers costs its name (from `git rev-list`) and the check of its object
against that name, nothing more: its verdict rests on the log. Only for the others are the
subject, the Claude-Session trailers and the paths read (one `git log --no-walk` for all of
them), and only for those that could pass because of what they change (only `backlog/`, or
shaped like a release) are the objects that say so checked: the trees git's diff went through
(`-t` lists them) and, for a release, the blobs of the files it changes, read in one `cat-file
--batch` and hashed against the names their checked trees give them.

git checks an object against its name where a walk starts, not where it follows a parent or a
tree entry: an object file the run rewrote in its clone would otherwise be read as the object it
names (a code change could read as a task edit, a script as a version bump).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from audit.evidence.git import LINK_MODES, TREE_MODE
from audit.model import REGULAR_MODES, Commit, FileChange

ABSENT_MODE = "000000"
# Checked objects by name: (type, content), or None when missing or not matching its name.
Objects = Mapping[str, tuple[str, bytes] | None]
Read = Callable[[Sequence[str]], Objects]


def parse_graph(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """`git rev-list --parents` output: each commit's name and its parents', in git's order."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for line in text.split("\n"):
        if line:
            sha, *parents = line.split(" ")
            out.append((sha, tuple(parents)))
    return out


@dataclass
class Details:
    """What `git log --raw -t` said of one commit (against each of its parents, in order)."""

    sha: str
    parents: tuple[str, ...]
    subject: str | None
    sessions: tuple[str, ...]
    # (old mode, new mode, old name, new name, path) of every file, link or gitlink changed
    files: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    # the trees the diff went through below the roots, as their parent trees name them
    trees: set[str] = field(default_factory=set)

    def commit(self, changes: tuple[FileChange, ...] | None = None) -> Commit:
        paths = tuple(dict.fromkeys(f[4] for f in self.files))
        links = tuple(dict.fromkeys(f[4] for f in self.files
                                    if f[0] in LINK_MODES or f[1] in LINK_MODES))
        return Commit(self.sha, self.parents, self.subject, self.sessions, paths, links, changes)


def parse_details(text: str) -> dict[str, Details]:
    """Parse `audit.evidence.git.commit_details` output (see DETAILS_FORMAT). A merge comes once
    per parent: its files are those it changes against each of them."""
    found: dict[str, Details] = {}
    tokens = text.split("\0")
    i, n = (1 if tokens and tokens[0] == "" else 0), len(tokens)
    current: Details | None = None
    while i < n:
        token = tokens[i]
        i += 1
        if token.startswith(":") or token.startswith("\n:"):
            # `:<old mode> <new mode> <old> <new> <status>`; the next token is its path, which
            # may hold anything.
            path = tokens[i] if i < n else ""
            i += 1
            fields = token.lstrip("\n")[1:].split(" ")
            if current is None or len(fields) != 5:
                continue
            old_mode, new_mode, old, new = fields[:4]
            if TREE_MODE in (old_mode, new_mode) and old_mode in (TREE_MODE, ABSENT_MODE) \
                    and new_mode in (TREE_MODE, ABSENT_MODE):
                current.trees.update(s for s in (old, new) if s.strip("0"))
            else:
                current.files.append((old_mode, new_mode, old, new, path))
            continue
        if token == "" or token == "\n":
            continue
        current = _header(token)
        if current.sha in found:  # a merge's diff against its next parent
            kept = found[current.sha]
            current = kept
        else:
            found[current.sha] = current
    return found


def _header(header: str) -> Details:
    fields = header.lstrip("\n").split("\x1f")
    sha = fields[0]
    parents = tuple(fields[1].split()) if len(fields) > 1 else ()
    if len(fields) != 4:
        # A subject or trailer holding our separator: keep the graph and paths, trust no text.
        return Details(sha, parents, None, ())
    trailers = fields[3]
    sessions = tuple(s.strip() for s in trailers.split("\x1e") if s.strip()) if trailers else ()
    return Details(sha, parents, fields[2], sessions)


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


def forged_commit(shas: Iterable[str], objects: Objects) -> str | None:
    """Why these commits cannot be trusted (the first whose object does not match its name), or
    None when every one does."""
    for sha in shas:
        got = objects.get(sha)
        if got is None or got[0] != "commit":
            return (f"commit {sha[:12]} in the clone does not match its name (its object file "
                    "was edited): the history read cannot be trusted")
    return None


def roots(details: Details, objects: Objects) -> tuple[str | None, list[str]]:
    """The root trees the commit's diff started from (its own and each parent's), from checked
    commit objects; or why they cannot be read."""
    got = objects.get(details.sha)
    tree = commit_tree(got[1]) if got is not None and got[0] == "commit" else None
    if tree is None:
        return f"commit {details.sha[:12]} could not be read back from a checked object", []
    found = [tree]
    for parent in details.parents:
        got = objects.get(parent)
        old = commit_tree(got[1]) if got is not None and got[0] == "commit" else None
        if old is None:
            return (f"parent {parent[:12]} of commit {details.sha[:12]} does not match its name "
                    "or is missing"), []
        found.append(old)
    return None, found


def blobs_wanted(details: Details) -> list[str]:
    """The blobs a release's content is judged by: each regular file's two sides."""
    return [name for old_mode, new_mode, old, new, _path in details.files
            for mode, name in ((old_mode, old), (new_mode, new))
            if mode in REGULAR_MODES and name.strip("0")]


def trees_problem(details: Details, tree_roots: Sequence[str], objects: Objects) -> str | None:
    """Why what git's diff said of this commit cannot be trusted: a tree it went through does
    not match its name (git read it unchecked); None when every one does."""
    for sha in [*tree_roots, *sorted(details.trees)]:
        got = objects.get(sha)
        if got is None or got[0] != "tree":
            return (f"tree {sha[:12]} in the clone does not match its name (its object file was "
                    "edited) or is missing: what the commits change cannot be read")
    return None


def file_changes(details: Details, objects: Objects) -> tuple[FileChange, ...]:
    """Every path the commit changes, with the regular files' checked contents (None for a blob
    that is missing or does not match its name: such a file cannot be judged)."""
    out: list[FileChange] = []
    for old_mode, new_mode, old, new, path in details.files:
        out.append(FileChange(
            path, None if old_mode == ABSENT_MODE else old_mode,
            None if new_mode == ABSENT_MODE else new_mode,
            _blob(old_mode, old, objects), _blob(new_mode, new, objects)))
    return tuple(out)


def _blob(mode: str, name: str, objects: Objects) -> bytes | None:
    if mode not in REGULAR_MODES:
        return None
    got = objects.get(name)
    return got[1] if got is not None and got[0] == "blob" else None
