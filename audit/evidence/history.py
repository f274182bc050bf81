"""The git layer of the judgement: what history says about each changed default branch.

Every piece of evidence is gathered here, before anything is judged, as plain data
(`audit.model.History`); the judge (`audit.judge`) never asks git anything.

Cost is bounded by refs, not commits. Per repository: one `cat-file --batch-check` for every tip
the judgement needs (plus one more after fetching, when something was missing), at most two
`git fetch` per remote (the moved refs by name into `refs/loop-pi-audit/<remote>/`, then any tip
still missing by SHA). Per changed default branch: one `git log --name-only` over the whole
range together with the push log's tips for that remote, one `git log --no-walk --raw` for the
gitlinks of the commits that change only `backlog/`, `rev-list --ancestry-path` and a
`cat-file --batch` only for a logged push the graph cannot settle, one `cat-file --batch` that
checks each commit against its name, and one per level of the trees of the commits that could
pass because of their paths (`audit.evidence.trees`). Which log entry covers which commit is
worked out in Python (`audit.reach.reach_bits`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.evidence.commits import (
    Details,
    blobs_wanted,
    commit_parents,
    file_changes,
    forged_commit,
    parse_details,
    parse_graph,
    roots,
    trees_problem,
)
from audit.evidence.git import (
    absolute_url,
    ancestry_path,
    commit_details,
    fetch_for_audit,
    is_shallow,
    object_types,
    rev_list,
    stored_objects,
)
from audit.evidence.pushlog import same_repo
from audit.evidence.snapshot import read_remote_config
from audit.model import (
    BACKLOG_DIR,
    ZERO,
    BranchHistory,
    Change,
    Commit,
    FileChange,
    History,
    PushEntry,
)
from audit.reach import entry_ancestry, new_bits, reach_bits
from audit.refs import covering, default_branch, judged_branch
from audit.releases import is_release_subject
from jobs.core.urls import redact_text
from jobs.git.run import GitError

PRIVATE_NAMESPACE = "refs/loop-pi-audit"


@dataclass
class _Work:
    remote: str
    change: Change
    before_part: Mapping[str, Any]
    after_part: Mapping[str, Any]
    entries: list[PushEntry] = field(default_factory=list)

    def entry_tips(self) -> set[str]:
        return {s for e in self.entries for s in (e.old, e.new) if s != ZERO}

    def exclusions(self) -> set[str]:
        """What `before` means: the old tip, or for an added branch every tip the remote had."""
        if self.change.before is not None:
            return {self.change.before}
        return set(self.before_part.get("refs", {}).values())


def entries_by_repo(repos: Sequence[str], entries: Sequence[PushEntry]
                    ) -> dict[str, tuple[PushEntry, ...]]:
    """The log entries naming each repository (by real path or git common dir, so a linked
    worktree counts and another clone does not); one identity lookup per distinct path."""
    out: dict[str, tuple[PushEntry, ...]] = {}
    for repo in repos:
        named = {path: same_repo(path, repo) for path in {e.repo for e in entries}}
        out[repo] = tuple(e for e in entries if named[e.repo])
    return out


def gather_history(before: Mapping[str, Any], after: Mapping[str, Any],
                   entries: Sequence[PushEntry], *, fetch: bool = True) -> History:
    b_repos: Mapping[str, Any] = before.get("repos", {})
    a_repos: Mapping[str, Any] = after.get("repos", {})
    common = sorted(set(b_repos) & set(a_repos))
    by_repo = entries_by_repo(sorted(set(b_repos) | set(a_repos)), entries)
    matched = {id(e) for found in by_repo.values() for e in found}
    unmatched = tuple(e for e in entries if id(e) not in matched)
    branches: dict[tuple[str, str, str], BranchHistory] = {}
    for repo in common:
        b, a = b_repos[repo], a_repos[repo]
        if b.get("available") is False or a.get("available") is False:
            continue
        work: list[_Work] = []
        for name in sorted(set(b.get("remotes", {})) & set(a.get("remotes", {}))):
            b_part, a_part = b["remotes"][name], a["remotes"][name]
            if not (b_part.get("available") and a_part.get("available")):
                continue
            mine = covering(by_repo[repo], name, a_part, {**b["remotes"], **a["remotes"]})
            change = judged_branch(b_part, a_part) or _unchanged_but_pushed(b_part, a_part, mine)
            if change is not None:
                work.append(_Work(name, change, b_part, a_part, mine))
        if not work:
            continue
        try:
            results = _read_repo(repo, work, fetch)
        except GitError as exc:
            results = {w.remote: BranchHistory(None, problem=f"git failed in {repo}: {exc}")
                       for w in work}
        for w in work:
            branches[(repo, w.remote, w.change.ref)] = results[w.remote]
    return History(entries=by_repo, branches=branches, unmatched=unmatched)


def _unchanged_but_pushed(b_part: Mapping[str, Any], a_part: Mapping[str, Any],
                          entries: Sequence[PushEntry]) -> Change | None:
    """A default branch back where it started, with logged pushes in between: its history is
    read all the same, so that a rewrite in the middle of the run (pushed away, then back) is
    seen."""
    ref = default_branch(b_part, a_part)
    old, new = b_part.get("refs", {}).get(ref), a_part.get("refs", {}).get(ref)
    if old is None or old != new:
        return None
    if not any(e.ref == ref and e.old != ZERO for e in entries):
        return None
    return Change(ref, old, new)


def _read_repo(repo: str, work: Sequence[_Work], fetch: bool) -> dict[str, BranchHistory]:
    needed: set[str] = set()
    for w in work:
        needed |= {w.change.after or ZERO} | w.exclusions() | w.entry_tips()
    needed.discard(ZERO)
    types = object_types(repo, sorted(needed))
    fetch_errors: dict[str, str] = {}
    if fetch:
        types, fetch_errors = _fetch_missing(repo, work, types)
    results: dict[str, BranchHistory] = {}
    for w in work:
        results[w.remote] = _read_branch(repo, w, types, fetch_errors.get(w.remote))
    return results


def _fetch_missing(repo: str, work: Sequence[_Work], types: dict[str, str | None]
                   ) -> tuple[dict[str, str | None], dict[str, str]]:
    """Bring in tips the judgement needs and the clone lacks: first the moved refs by name (one
    fetch per remote), then whatever is still missing by SHA (one more fetch per remote)."""
    errors: dict[str, str] = {}
    # Fetched by URL, as read now from the clone's configuration (the snapshot's URLs are
    # redacted): the remote's own settings there (upload-pack, helpers) are never used.
    try:
        config = read_remote_config(repo)
    except GitError as exc:
        return types, {w.remote: f"cannot read the remotes' configuration: {exc}" for w in work}

    def missing(w: _Work) -> list[str]:
        tips = [w.change.after] + ([w.change.before] if w.change.before else [])
        return [t for t in tips if t is not None and types.get(t) is None]

    for by_sha in (False, True):
        todo = [w for w in work if missing(w)]
        if not todo:
            break
        for w in todo:
            if by_sha:
                specs = missing(w)
            else:
                specs = [f"+{w.change.ref}:{PRIVATE_NAMESPACE}/{w.remote}/"
                         f"{w.change.ref.removeprefix('refs/')}"]
            remote = config.get(w.remote)
            if remote is None or remote.fetch_url is None:
                errors[w.remote] = f"remote {w.remote} has no url configured any more"
                continue
            try:
                fetch_for_audit(repo, absolute_url(remote.fetch_url, repo), specs)
            except GitError as exc:
                errors[w.remote] = redact_text(f"git fetch {w.remote} failed: {exc}")
        types = {**types, **object_types(repo, [t for w in todo for t in missing(w)])}
    return types, errors


def _read_branch(repo: str, w: _Work, types: Mapping[str, str | None],
                 fetch_error: str | None) -> BranchHistory:
    after, before = w.change.after, w.change.before
    assert after is not None
    for label, sha in (("new tip", after), ("old tip", before)):
        if sha is not None and types.get(sha) != "commit":
            kind = types.get(sha)
            what = f"is a {kind}, not a commit" if kind else "is not in the clone"
            return BranchHistory(None, problem=f"{label} {sha[:12]} of {w.change.ref} {what}"
                                 + (f" ({fetch_error})" if fetch_error else
                                    " and could not be fetched" if not kind else ""))
    present = frozenset(t for t in w.entry_tips() if types.get(t) == "commit")
    exclude = sorted(x for x in w.exclusions() if types.get(x) == "commit")
    tips = [after, *sorted(present - {after})]
    graph = parse_graph(rev_list(repo, tips, exclude))
    # The remote's usable log entries (both tips in the clone), then the branch's own move as a
    # probe: one pass over the graph says which entries' ranges hold which commit and, mostly,
    # whether each push (and the branch itself) was a fast-forward. git is asked only about
    # what the graph cannot settle.
    usable = tuple(e for e in w.entries
                   if all(s == ZERO or s in present for s in (e.old, e.new)))
    probe = PushEntry("", "", w.change.ref, before or ZERO, after, "", "", 0)
    bare = [Commit(sha, parents, None) for sha, parents in graph]
    reach = reach_bits(bare, [*usable, probe])
    answers = entry_ancestry(bare, [*usable, probe], reach)
    fast_forward = None
    if before is not None:
        # The graph holds every commit the after tip reaches and the before tip does not: before
        # is an ancestor exactly when it is the parent of one of them. git is not asked: its
        # walk below the before tip would read objects `read_commits` never checks.
        fast_forward = before == after or bool(answers[-1])
    if fast_forward is False and is_shallow(repo):
        return BranchHistory(None, problem=f"{repo} is a shallow clone: it cannot tell whether "
                             f"{w.change.ref} was rewritten or its history was cut")
    fast_forwards, rewrites = _entry_ancestry(repo, w.change.ref, usable, answers[:-1])
    mine = new_bits(i for i, e in enumerate(usable) if e.ref == w.change.ref)
    # What a logged push covers is judged by the log alone: only the others are read further.
    uncovered = [sha for sha, _ in graph
                 if not (bits := reach.get(sha, 0)) & ~(bits >> 1) & mine]  # ranges_holding
    commits, untrusted, untrusted_paths = read_commits(repo, bare, uncovered, after)
    return BranchHistory(fast_forward, commits, present, fast_forwards=fast_forwards,
                         rewrites=rewrites, reach=reach, reach_entries=usable,
                         untrusted=untrusted, untrusted_paths=untrusted_paths)


def read_commits(repo: str, bare: Sequence[Commit], uncovered: Sequence[str], after: str
                 ) -> tuple[tuple[Commit, ...], str | None, dict[str, str]]:
    """The range's commits, those in `uncovered` with their subject, trailers and paths (and,
    shaped like a release, what they change file by file); why the commits cannot be trusted
    (None when they can); and for each commit that could pass because of what it changes, why
    git's account of that cannot be trusted. Four git processes whatever the range holds: one
    `log --no-walk` of the uncovered commits (of the after tip when there is none, so that the
    commits never decide how many processes run), one `cat-file --batch` of every commit (and
    the parents of those judged by their paths), one of the trees and blobs those are judged by
    (`audit.evidence.commits`)."""
    details = parse_details(commit_details(repo, uncovered or [after]))
    wanted = {sha: details[sha] for sha in uncovered if sha in details}
    by_paths = {sha: d for sha, d in wanted.items() if _by_paths(d)}
    try:
        bodies = {*by_paths, *(p for d in by_paths.values() for p in d.parents)}
        objects = stored_objects(repo, [c.sha for c in bare]
                                 + [p for d in by_paths.values() for p in d.parents],
                                 keep=bodies.__contains__)
        forged = forged_commit((c.sha for c in bare), objects)
        if forged is not None:
            return tuple(bare), forged, {}
        problems: dict[str, str] = {}
        tree_roots: dict[str, list[str]] = {}
        for sha, d in by_paths.items():
            why, found = roots(d, objects)
            if why is not None:
                problems[sha] = why
            tree_roots[sha] = found
        more = [t for sha, d in by_paths.items() if sha not in problems
                for t in (*tree_roots[sha], *sorted(d.trees),
                          *(blobs_wanted(d) if d.subject and is_release_subject(d.subject)
                            else ()))]
        checked = stored_objects(repo, more or [after])
    except GitError as exc:
        return tuple(bare), f"its commits could not be checked: {exc}", {}
    changes: dict[str, tuple[FileChange, ...]] = {}
    for sha, d in by_paths.items():
        if sha not in problems:
            why = trees_problem(d, tree_roots[sha], checked)
            if why is not None:
                problems[sha] = why
        if d.subject is not None and is_release_subject(d.subject):
            changes[sha] = file_changes(d, checked)
    commits = tuple(wanted[c.sha].commit(changes.get(c.sha)) if c.sha in wanted else c
                    for c in bare)
    return commits, None, problems


def _by_paths(details: Details) -> bool:
    """Could this commit pass because of what it changes: only paths under backlog/, or shaped
    like a release-please release (whose files are then judged by their content)?"""
    if details.subject is not None and is_release_subject(details.subject):
        return True
    return bool(details.files) and all(f[4].startswith(BACKLOG_DIR) for f in details.files)


def _entry_ancestry(repo: str, ref: str, usable: Sequence[PushEntry],
                    answers: Sequence[bool | None]
                    ) -> tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str]]]:
    """Which of the branch's logged pushes were fast-forwards: the graph's answers, and
    `checked_ancestor` for each pair it could not settle."""
    ff: set[tuple[str, str]] = set()
    rewritten: set[tuple[str, str]] = set()
    asked: dict[tuple[str, str], bool | None] = {}
    for e, answer in zip(usable, answers, strict=True):
        if e.ref != ref or ZERO in (e.old, e.new):
            continue
        pair = (e.old, e.new)
        if answer is None:
            if pair not in asked:
                try:
                    asked[pair] = checked_ancestor(repo, *pair)
                except GitError:
                    asked[pair] = None
            answer = asked[pair]
        if answer is not None:
            (ff if answer else rewritten).add(pair)
    return frozenset(ff), frozenset(rewritten)


def checked_ancestor(repo: str, old: str, new: str) -> bool | None:
    """Whether `old` is an ancestor of `new`, shown by commit objects checked against their
    names. git's ancestry walk reads the commits below the range unchecked (an object file the
    run rewrote, with a parent added, makes a rewrite a fast-forward), so the path it finds is
    read again (one `cat-file --batch`); None when that path does not hold up. No path found is
    False: an edited object could only hide one, and a hidden one fails the run."""
    if old == new:
        return True
    path = ancestry_path(repo, old, new)
    if not path:
        return False
    objects = stored_objects(repo, path)
    parents: dict[str, tuple[str, ...]] = {}
    for sha in path:
        got = objects.get(sha)
        if got is None or got[0] != "commit":
            return None
        parents[sha] = commit_parents(got[1])
    seen, todo = {new}, [new]
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent == old:
                return True
            if parent in parents and parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return None
