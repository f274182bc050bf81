"""Judgement: every difference between a before and an after snapshot gets one verdict.

Pure functions only. What git knows about the history of a moved default branch arrives as a
`History` built by `audit.history`; nothing in here starts a process, so every rule can be tested
on plain data and the whole judgement costs a fixed number of git processes per changed ref.

Decisions where the contract is silent (also in the README):

* A merge commit is judged by the paths it changes against its *first parent* (what it brings
  into the branch); the commits it brings in through other parents are in the range and are
  judged on their own. A commit that changes no path is never BACKLOG_ONLY.
* An added default branch judges the commits its tip reaches that no ref of that remote reached
  before; a moved one judges exactly `before..after`. A deleted default branch, and an added one
  that brings no new commit, are judged like any other ref (the push log must chain them).
* A push-log entry covers a remote when its `remote` is that remote's name or configured URL.
* FOREIGN needs the run's own session from the charter's `session:`; without it no commit can be
  told apart from the run's own, so none is FOREIGN. A commit whose trailers include the run's
  own session is never FOREIGN.
* A release-please release commit touches only `CHANGELOG.md` files, the root
  `.release-please-manifest.json` and the version files in `VERSION_FILES` (by file name, in any
  folder); anything else (a version constant in source code, say) makes it an ordinary commit.
  The `(<scope>)` of its subject, when present, must name the branch it landed on.
* A ref finding of the default branch carries the most severe verdict of its commits (a
  non-fast-forward is NON_FAST_FORWARD whatever they are), so one bad commit counts twice in
  "K failing": once for the commit, once for the branch that carries it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.charter import Charter, grants_release_please
from audit.github import RELEASE_BOTS, github_repo_from_url
from audit.pushlog import ZERO, PushEntry

PUSH_LOGGED = "PUSH_LOGGED"
BACKLOG_ONLY = "BACKLOG_ONLY"
RELEASE_PLEASE = "RELEASE_PLEASE"
FOREIGN = "FOREIGN"
UNGRANTED = "UNGRANTED"
NON_FAST_FORWARD = "NON_FAST_FORWARD"
UNVERIFIED = "UNVERIFIED"

PASSING = frozenset({PUSH_LOGGED, BACKLOG_ONLY, RELEASE_PLEASE, FOREIGN})
VIOLATIONS = frozenset({UNGRANTED, NON_FAST_FORWARD})
FAILING = VIOLATIONS | {UNVERIFIED}
# Most severe first: what a branch line shows when its commits disagree.
SEVERITY = (NON_FAST_FORWARD, UNGRANTED, UNVERIFIED, FOREIGN, RELEASE_PLEASE, BACKLOG_ONLY,
            PUSH_LOGGED)

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


@dataclass(frozen=True)
class Finding:
    repo: str
    remote: str
    ref: str
    kind: str
    before: str | None
    after: str | None
    commit: str | None
    verdict: str
    reason: str
    # Where a commit sits beneath its ref (git's topological order) and its first parent, for
    # the text line; not part of the JSON.
    order: int = field(default=0, compare=False)
    parent: str | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {"repo": self.repo, "remote": self.remote, "ref": self.ref, "kind": self.kind,
                "before": self.before, "after": self.after, "commit": self.commit,
                "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    subject: str | None  # None when git's record of it could not be parsed
    sessions: tuple[str, ...]
    paths: tuple[str, ...]


@dataclass(frozen=True)
class BranchHistory:
    """What git said about one changed default branch.

    `commits` holds every commit reachable from the after tip or from a push-log tip of that
    remote and not from the excluded before tips, children before parents. `present` holds the
    push-log tips that exist locally as commits: a present tip outside `commits` is an ancestor of
    the before tip. `problem` says why the branch could not be checked at all.
    """
    fast_forward: bool | None
    commits: tuple[Commit, ...] = ()
    present: frozenset[str] = frozenset()
    problem: str | None = None


@dataclass(frozen=True)
class History:
    entries: Mapping[str, tuple[PushEntry, ...]]  # snapshot repo → the log entries naming it
    branches: Mapping[tuple[str, str, str], BranchHistory]  # (repo, remote, ref)
    # Log entries naming no repository of the before snapshot: pushes nobody snapshotted.
    unmatched: tuple[PushEntry, ...] = ()


@dataclass(frozen=True)
class Change:
    ref: str
    before: str | None
    after: str | None

    @property
    def change(self) -> str:
        if self.before is None:
            return "added"
        return "deleted" if self.after is None else "moved"


def judge(before: Mapping[str, Any], after: Mapping[str, Any], charter: Charter | None,
          history: History, hosts: Sequence[str] = ()) -> list[Finding]:
    """Every finding between two snapshots, in report order."""
    findings: list[Finding] = []
    b_repos: Mapping[str, Any] = before.get("repos", {})
    a_repos: Mapping[str, Any] = after.get("repos", {})
    for repo in sorted(set(b_repos) | set(a_repos)):
        if repo not in a_repos or repo not in b_repos:
            side = "before" if repo in b_repos else "after"
            findings.append(Finding(repo, "", "", "repo-" + ("missing" if side == "before"
                                                             else "added"),
                                    None, None, None, UNVERIFIED,
                                    f"repository only in the {side} snapshot"))
            continue
        b, a = b_repos[repo], a_repos[repo]
        down = [f"{side}: {e.get('reason', 'unavailable')}" for side, e in
                (("before", b), ("after", a)) if e.get("available") is False]
        if down:
            findings.append(Finding(repo, "", "", "repo-unavailable", None, None, None,
                                    UNVERIFIED, "; ".join(down)))
            continue
        entries = history.entries.get(repo, ())
        findings.extend(RepoJudge(repo, b, a, entries, charter, history, tuple(hosts)).run())
    findings.extend(_unaudited(history.unmatched))
    return sort_findings(findings)


def _unaudited(entries: Sequence[PushEntry]) -> list[Finding]:
    """A logged push to a repository the run never snapshotted: nothing can say what it did."""
    by_repo: dict[str, list[PushEntry]] = {}
    for e in entries:
        by_repo.setdefault(e.repo, []).append(e)
    return [Finding(repo, "", "", "repo-unaudited", None, None, None, UNVERIFIED,
                    f"the push log names this repository (line{'s' if len(es) > 1 else ''} "
                    f"{_lines(es)}) but it is in no before snapshot: `loop-pi-audit add` it "
                    "when the run starts")
            for repo, es in sorted(by_repo.items())]


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Report order: by repository, remote and ref; a ref's own line before its commits."""
    return sorted(findings, key=lambda f: (f.repo, f.remote, f.ref, f.kind == "commit", f.order,
                                           f.kind, f.commit or ""))


def exit_code(findings: Sequence[Finding]) -> int:
    verdicts = {f.verdict for f in findings}
    if verdicts & VIOLATIONS:
        return 1
    if UNVERIFIED in verdicts:
        return 3
    return 0


def overall(findings: Sequence[Finding]) -> str:
    return {0: "pass", 1: "fail", 3: "could_not_check"}[exit_code(findings)]


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


def short(sha: str | None) -> str:
    return (sha or ZERO)[:7]


def _noun(ref: str) -> str:
    if ref.startswith("refs/heads/"):
        return "branch"
    if ref.startswith("refs/tags/"):
        return "tag"
    return "ref"


def _most_severe(verdicts: Iterable[str]) -> str:
    present = set(verdicts)
    return next(v for v in SEVERITY if v in present)


def _paths_note(paths: Sequence[str], limit: int = 3) -> str:
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


def _lines(entries: Sequence[PushEntry]) -> str:
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


@dataclass
class RepoJudge:
    repo: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    entries: tuple[PushEntry, ...]
    charter: Charter | None
    history: History
    hosts: tuple[str, ...]
    findings: list[Finding] = field(default_factory=list)
    commit_verdicts: dict[str, str] = field(default_factory=dict)
    release_verdicts: dict[tuple[str, str], str] = field(default_factory=dict)

    def run(self) -> list[Finding]:
        b_remotes: Mapping[str, Any] = self.before.get("remotes", {})
        a_remotes: Mapping[str, Any] = self.after.get("remotes", {})
        tag_work: list[tuple[str, Mapping[str, Any], Change]] = []
        for name in sorted(set(b_remotes) | set(a_remotes)):
            if name not in b_remotes or name not in a_remotes:
                side = "before" if name in b_remotes else "after"
                self._add(name, "", "remote-" + ("removed" if side == "before" else "added"),
                          None, None, UNVERIFIED, f"remote {name} only in the {side} snapshot")
                continue
            b, a = b_remotes[name], a_remotes[name]
            down = [f"{side}: {p.get('reason', 'unavailable')}"
                    for side, p in (("before", b), ("after", a)) if not p.get("available")]
            if down:
                self._add(name, "", "remote-unavailable", None, None, UNVERIFIED, "; ".join(down))
                continue
            moved = [f"{key} {b.get(key)!r} → {a.get(key)!r}"
                     for key in ("url", "pushurls", "rewritten_to") if b.get(key) != a.get(key)]
            if moved:
                # The after-snapshot looked somewhere else: what became of the refs the run
                # started from was never seen.
                self._add(name, "", "remote-url-changed", None, None, UNVERIFIED,
                          f"remote {name} points elsewhere since the before snapshot: "
                          + "; ".join(moved))
                continue
            tag_work.extend((name, a, c) for c in self._judge_remote(name, b, a))
        self._judge_unaudited_remotes(b_remotes, a_remotes)
        releases_ok = self._judge_releases()
        for name, a_part, change in tag_work:
            self._judge_remote_tag(name, a_part, change, releases_ok)
        self._judge_local_tags(releases_ok)
        return self.findings

    def _judge_unaudited_remotes(self, b_remotes: Mapping[str, Any],
                                 a_remotes: Mapping[str, Any]) -> None:
        """A logged push to a remote neither snapshot holds (`git push <url>`, a remote the
        run added): nothing can say what it changed, so it cannot pass as "no change"."""
        parts = [(name, part) for remotes in (b_remotes, a_remotes)
                 for name, part in remotes.items()]
        by_remote: dict[str, list[PushEntry]] = {}
        for e in self.entries:
            if not any(entry_covers_remote(e, name, part) for name, part in parts):
                by_remote.setdefault(e.remote, []).append(e)
        for remote, es in sorted(by_remote.items()):
            self._add(remote, "", "remote-unaudited", None, None, UNVERIFIED,
                      f"the push log names remote {remote} (line{'s' if len(es) > 1 else ''} "
                      f"{_lines(es)}) but no snapshot holds it: what the push changed there "
                      "was never looked at")

    # -- findings -------------------------------------------------------------------------

    def _add(self, remote: str, ref: str, kind: str, before: str | None, after: str | None,
             verdict: str, reason: str, commit: str | None = None, order: int = 0,
             parent: str | None = None) -> Finding:
        finding = Finding(self.repo, remote, ref, kind, before, after, commit, verdict, reason,
                          order, parent)
        self.findings.append(finding)
        return finding

    def _remote_entries(self, name: str, part: Mapping[str, Any]) -> list[PushEntry]:
        return [e for e in self.entries if entry_covers_remote(e, name, part)]

    def _github_repos(self, part: Mapping[str, Any]) -> list[str]:
        names: list[str] = []
        for url in [part.get("url"), *part.get("pushurls", [])]:
            if isinstance(url, str):
                found = github_repo_from_url(url, self.hosts)
                if found is not None and found.lower() not in [n.lower() for n in names]:
                    names.append(found)
        return names

    # -- remotes --------------------------------------------------------------------------

    def _judge_remote(self, name: str, b: Mapping[str, Any], a: Mapping[str, Any]) -> list[Change]:
        """Judge every changed ref but tags (which wait for the releases); return the tags."""
        b_refs: Mapping[str, str] = b.get("refs", {})
        a_refs: Mapping[str, str] = a.get("refs", {})
        entries = self._remote_entries(name, a)
        branch = judged_branch(b, a)
        verdict_of: dict[str, Finding] = {}
        heads: list[Change] = []
        tags: list[Change] = []
        for change in ref_changes(b_refs, a_refs):
            if change.ref.startswith("refs/tags/"):
                tags.append(change)
            elif change.ref == "HEAD":
                heads.append(change)
            elif branch is not None and change.ref == branch.ref:
                verdict_of[change.ref] = self._judge_branch(name, a, change, entries)
            elif change.ref.startswith("refs/pull/"):
                verdict_of[change.ref] = self._add(
                    name, change.ref, f"ref-{change.change}", change.before, change.after,
                    FOREIGN, "pull-request ref: the forge writes it, not a push")
            else:
                verdict_of[change.ref] = self._judge_chain(name, change, entries)
        self._judge_symrefs(name, b, a)
        for change in heads:
            self._judge_head(name, b, a, change, verdict_of)
        return tags

    def _judge_chain(self, remote: str, change: Change,
                     entries: Sequence[PushEntry]) -> Finding:
        mine = [e for e in entries if e.ref == change.ref]
        kind = f"{_noun(change.ref)}-{change.change}"
        path = chain(mine, change.before, change.after)
        if path is not None:
            return self._add(remote, change.ref, kind, change.before, change.after, PUSH_LOGGED,
                             f"logged (push-log line{'s' if len(path) > 1 else ''} "
                             f"{_lines(path)})")
        why = ("a push the log never saw" if not mine else
               f"the log's pushes of this ref (lines {_lines(mine)}) do not lead from "
               f"{short(change.before)} to {short(change.after)}")
        return self._add(remote, change.ref, kind, change.before, change.after, UNGRANTED, why)

    def _judge_symrefs(self, name: str, b: Mapping[str, Any], a: Mapping[str, Any]) -> None:
        b_sym: Mapping[str, str] = b.get("symrefs", {})
        a_sym: Mapping[str, str] = a.get("symrefs", {})
        for sym in sorted(set(b_sym) | set(a_sym)):
            old, new = b_sym.get(sym), a_sym.get(sym)
            if old == new:
                continue
            if old is None or new is None:
                side = "after" if old is None else "before"
                target, missing_from = (new, b) if old is None else (old, a)
                if target not in missing_from.get("refs", {}):
                    # A server advertises HEAD only while its target exists: the target's own
                    # creation or deletion is the change, and it is judged on its own.
                    continue
                self._add(name, sym, "symref-changed", None, None, UNVERIFIED,
                          f"{sym} symref advertised only in the {side} snapshot ({old or new})")
            else:
                self._add(name, sym, "symref-changed", None, None, UNGRANTED,
                          f"{sym} now points at {new} (was {old}); no logged push can do that")

    def _judge_head(self, name: str, b: Mapping[str, Any], a: Mapping[str, Any], change: Change,
                    verdict_of: Mapping[str, Finding]) -> None:
        target = (a.get("symrefs", {}).get("HEAD") or b.get("symrefs", {}).get("HEAD")
                  or default_branch(b, a))
        followed = verdict_of.get(target)
        kind = f"ref-{change.change}"
        if (followed is not None and followed.before == change.before
                and followed.after == change.after):
            self._add(name, "HEAD", kind, change.before, change.after, followed.verdict,
                      f"follows {target} ({followed.verdict})")
        else:
            self._add(name, "HEAD", kind, change.before, change.after, UNGRANTED,
                      f"HEAD moved without its target {target}")

    # -- the default branch, commit by commit -----------------------------------------------

    def _judge_branch(self, remote: str, part: Mapping[str, Any], change: Change,
                      entries: Sequence[PushEntry]) -> Finding:
        kind = f"branch-{change.change}"
        hist = self.history.branches.get((self.repo, remote, change.ref))
        if hist is None or hist.problem is not None:
            why = hist.problem if hist is not None else "its history was not read"
            return self._add(remote, change.ref, kind, change.before, change.after, UNVERIFIED,
                             f"could not check: {why}")
        commits = self._range(hist, change)
        if not commits and change.before is None:
            return self._judge_chain(remote, change, entries)
        verdicts = self._judge_commits(remote, part, change, hist, commits, entries)
        counts = {v: verdicts.count(v) for v in SEVERITY if v in verdicts}
        summary = f"{len(commits)} commit{'s' if len(commits) != 1 else ''}: " + ", ".join(
            f"{n} {v}" for v, n in counts.items())
        if change.before is not None and hist.fast_forward is False:
            logged = chain([e for e in entries if e.ref == change.ref], change.before,
                           change.after)
            return self._add(remote, change.ref, kind, change.before, change.after,
                             NON_FAST_FORWARD,
                             f"not a fast-forward of {short(change.before)}: history rewritten"
                             + (" (even though the push log holds it)" if logged else "")
                             + f"; {summary}")
        return self._add(remote, change.ref, kind, change.before, change.after,
                         _most_severe(verdicts) if verdicts else UNVERIFIED,
                         ("fast-forward; " if change.before else "") + summary)

    @staticmethod
    def _range(hist: BranchHistory, change: Change) -> list[Commit]:
        """The commits the after tip reaches in the history git gave (`before..after`)."""
        by_sha = {c.sha: c for c in hist.commits}
        seen: set[str] = set()
        todo = [change.after] if change.after in by_sha else []
        while todo:
            sha = todo.pop()
            if sha in seen:
                continue
            seen.add(sha)
            todo.extend(p for p in by_sha[sha].parents if p in by_sha and p not in seen)
        return [c for c in hist.commits if c.sha in seen]

    def _judge_commits(self, remote: str, part: Mapping[str, Any], change: Change,
                       hist: BranchHistory, commits: Sequence[Commit],
                       entries: Sequence[PushEntry]) -> list[str]:
        usable = [e for e in entries
                  if all(s == ZERO or s in hist.present for s in (e.old, e.new))]
        bits = reach_bits(hist.commits, usable)
        ref_mask = 0
        all_mask = 0
        for i, e in enumerate(usable):
            all_mask |= 1 << (2 * i)
            if e.ref == change.ref:
                ref_mask |= 1 << (2 * i)
        branch_name = change.ref.removeprefix("refs/heads/")
        gh_repos = self._github_repos(part)
        own = self.charter.session if self.charter is not None else None
        verdicts: list[str] = []
        for order, commit in enumerate(commits):
            v = bits.get(commit.sha, 0)
            covered = (v & ~(v >> 1)) & ref_mask
            under_logged_tip = bool(v & all_mask)
            verdict, reason = self._judge_commit(commit, usable, covered, under_logged_tip,
                                                 branch_name, gh_repos, own)
            verdicts.append(verdict)
            self.commit_verdicts[commit.sha] = verdict
            self._add(remote, change.ref, "commit", change.before, change.after, verdict,
                      reason, commit=commit.sha, order=order,
                      parent=commit.parents[0] if commit.parents else None)
        return verdicts

    def _judge_commit(self, commit: Commit, usable: Sequence[PushEntry], covered: int,
                      under_logged_tip: bool, branch: str, gh_repos: Sequence[str],
                      own: str | None) -> tuple[str, str]:
        said = f'"{commit.subject}"' if commit.subject is not None else "(unreadable subject)"
        if covered:
            entry = usable[((covered & -covered).bit_length() - 1) // 2]
            return PUSH_LOGGED, (f"{said} in logged push {short(entry.old)}..{short(entry.new)} "
                                 f"(push-log line {entry.line}, {entry.source})")
        if commit.paths and all(p.startswith(BACKLOG_DIR) for p in commit.paths):
            return BACKLOG_ONLY, f"{said} changes only {_paths_note(commit.paths)}"
        release = self._release_commit(commit, branch, gh_repos)
        if release is not None and release[0] == RELEASE_PLEASE:
            return release[0], f"{said} {release[1]}"
        others = [s for s in commit.sessions if s != own]
        if own is not None and others and len(others) == len(commit.sessions) \
                and under_logged_tip:
            return FOREIGN, (f"{said} is session {others[0]}'s work (the run is {own}), under "
                             "a logged push")
        if release is not None:
            return release[0], f"{said} {release[1]}"
        why = "a push the log never saw"
        if own is not None and own in commit.sessions:
            why += f" (the run's own session {own})"
        elif commit.sessions and own is None:
            why += " (the charter names no session:, so no session's work counts as foreign)"
        elif others and not under_logged_tip:
            why += f" (session {others[0]}'s work, but no logged push was made on top of it)"
        return UNGRANTED, f"{said} {why}; changes {_paths_note(commit.paths)}"

    def _release_commit(self, commit: Commit, branch: str,
                        gh_repos: Sequence[str]) -> tuple[str, str] | None:
        """RELEASE_PLEASE, or why a commit shaped like a release is not one; None otherwise."""
        if commit.subject is None or not is_release_subject(commit.subject, branch):
            return None
        if not commit.paths or not all(is_release_path(p) for p in commit.paths):
            return None
        granted = [g for g in gh_repos if grants_release_please(self.charter, g)]
        if not granted:
            where = ", ".join(gh_repos) if gh_repos else "a remote not on GitHub"
            return UNGRANTED, (f"is shaped like a release-please release, but the charter "
                               f"grants no release-please for {where}")
        part = self.after.get("releases", {})
        if not part.get("available"):
            return UNVERIFIED, ("is shaped like a release-please release, but the releases "
                                f"could not be read: {part.get('reason', 'unavailable')}")
        for rel in part.get("releases", []):
            rel_repo = self._release_repo(rel, part)
            if rel_repo is None or rel_repo.lower() not in [g.lower() for g in granted]:
                continue
            if rel.get("author") not in RELEASE_BOTS:
                continue
            if commit.sha in self._tag_commits(rel_repo, str(rel["tag_name"]), self.after):
                return RELEASE_PLEASE, (f"is release {rel['tag_name']} by {rel['author']} "
                                        f"(granted for {rel_repo}); changes "
                                        f"{_paths_note(commit.paths)}")
        return UNGRANTED, ("is shaped like a release-please release, but no release by "
                           f"{' or '.join(RELEASE_BOTS)} has its tag on it")

    # -- releases and tags ------------------------------------------------------------------

    def _release_repo(self, rel: Mapping[str, Any], part: Mapping[str, Any]) -> str | None:
        value = rel.get("repo") or next(iter(self._release_repos(part)), None)
        return value if isinstance(value, str) else None

    def _release_repos(self, part: Mapping[str, Any]) -> list[str]:
        """The GitHub repositories a releases part is about, primary first: as the snapshot
        recorded them, else (a snapshot in the contract's bare form) the ones the remotes'
        configured URLs name, origin first, as the contract says."""
        named = part.get("github_repos") or [part.get("github_repo")]
        recorded = [g for g in named if isinstance(g, str) and g]
        if recorded:
            return recorded
        found: list[str] = []
        for snap in (self.after, self.before):
            remotes: Mapping[str, Any] = snap.get("remotes", {})
            for name in sorted(remotes, key=lambda n: (n != "origin", n)):
                for g in self._github_repos(remotes[name]):
                    if g.lower() not in [f.lower() for f in found]:
                        found.append(g)
        return found

    def _tag_commits(self, gh_repo: str, tag: str, snap: Mapping[str, Any]) -> set[str]:
        """Commits the tag names on the remotes whose URLs name `gh_repo`."""
        found: set[str] = set()
        for part in snap.get("remotes", {}).values():
            if not part.get("available") or gh_repo.lower() not in [
                    g.lower() for g in self._github_repos(part)]:
                continue
            refs = part.get("refs", {})
            sha = refs.get(f"refs/tags/{tag}{PEELED}") or refs.get(f"refs/tags/{tag}")
            if isinstance(sha, str):
                found.add(sha)
        return found

    def _judge_releases(self) -> bool:
        b, a = self.before.get("releases", {}), self.after.get("releases", {})
        down = [f"{side}: {p.get('reason', 'unavailable')}"
                for side, p in (("before", b), ("after", a)) if not p.get("available")]
        if down:
            self._add("github", "releases", "releases-unavailable", None, None, UNVERIFIED,
                      "; ".join(down))
            return False
        b_by = _releases_by_key(b, next(iter(self._release_repos(b)), ""))
        a_by = _releases_by_key(a, next(iter(self._release_repos(a)), ""))
        for key in sorted(set(b_by) | set(a_by)):
            olds, news = b_by.get(key, []), a_by.get(key, [])
            if olds == news:
                continue
            gh_repo, tag = key
            remote, ref = f"github:{gh_repo}" if gh_repo else "github", f"releases/{tag}"
            before_sha = _one(self._tag_commits(gh_repo, tag, self.before)) if olds else None
            after_sha = _one(self._tag_commits(gh_repo, tag, self.after)) if news else None
            if olds and news:
                self._add(remote, ref, "release-changed", before_sha, after_sha, UNGRANTED,
                          "release changed: " + _release_diff(olds, news))
                continue
            if olds:
                self._add(remote, ref, "release-deleted", before_sha, None, UNGRANTED,
                          f"release {tag} deleted")
                continue
            for rel in news:
                verdict, reason = self._judge_added_release(gh_repo, tag, json.loads(rel))
                self.release_verdicts[(gh_repo.lower(), tag)] = verdict
                self._add(remote, ref, "release-added", None, after_sha, verdict, reason)
        return True

    def _judge_added_release(self, gh_repo: str, tag: str,
                             rel: Mapping[str, Any]) -> tuple[str, str]:
        author = rel.get("author")
        if not grants_release_please(self.charter, gh_repo):
            return UNGRANTED, (f"release {tag} by {author}: the charter grants no release-please "
                               f"for {gh_repo or 'this repository'}")
        if author not in RELEASE_BOTS:
            return UNGRANTED, (f"release {tag} made by {author}, not by "
                               f"{' or '.join(RELEASE_BOTS)}")
        targets = self._tag_commits(gh_repo, tag, self.after)
        if not targets:
            return UNGRANTED, f"release {tag} by {author}: its tag is on no remote of {gh_repo}"
        judged = sorted((self.commit_verdicts.get(t), t) for t in targets
                        if self.commit_verdicts.get(t) in (RELEASE_PLEASE, PUSH_LOGGED))
        if judged and len(judged) == len(targets):
            return RELEASE_PLEASE, (f"release {tag} by {author} (granted for {gh_repo}); its tag "
                                    f"is on {short(judged[0][1])}, judged {judged[0][0]}")
        return UNGRANTED, (f"release {tag} by {author}: its tag is on "
                           f"{', '.join(short(t) for t in sorted(targets))}, a commit this audit "
                           "judged neither RELEASE_PLEASE nor PUSH_LOGGED")

    def _release_tag(self, tag_ref: str, value: str | None, releases_ok: bool,
                     remote_repos: Sequence[str] | None) -> tuple[str, str] | None:
        """RELEASE_PLEASE for an added tag owned by a granted release-please release (UNVERIFIED
        when the releases could not be read and one might have owned it); None otherwise.

        A remote tag belongs to the release when the remote names the release's repository; a
        local tag when it holds the same object as that repository's remote tag."""
        tag = tag_ref.removeprefix("refs/tags/")
        if not releases_ok:
            part = self.after.get("releases", {})
            candidates = (list(remote_repos) if remote_repos is not None
                          else self._release_repos(part))
            if any(grants_release_please(self.charter, g) for g in candidates):
                return UNVERIFIED, ("may belong to a release-please release, but the releases "
                                    "could not be read")
            return None
        for (gh_repo, rel_tag), verdict in sorted(self.release_verdicts.items()):
            if rel_tag != tag or verdict != RELEASE_PLEASE:
                continue
            if remote_repos is not None:
                owned = gh_repo in [g.lower() for g in remote_repos]
            else:
                owned = value in self._tag_values(gh_repo, tag)
            if owned:
                return RELEASE_PLEASE, f"tag of release {tag} of {gh_repo} (RELEASE_PLEASE)"
        return None

    def _tag_values(self, gh_repo: str, tag: str) -> set[str]:
        values: set[str] = set()
        for part in self.after.get("remotes", {}).values():
            if part.get("available") and gh_repo.lower() in [
                    g.lower() for g in self._github_repos(part)]:
                sha = part.get("refs", {}).get(f"refs/tags/{tag}")
                if isinstance(sha, str):
                    values.add(sha)
        return values

    def _judge_remote_tag(self, name: str, a_part: Mapping[str, Any], change: Change,
                          releases_ok: bool) -> None:
        self._judge_tag(name, change, self._remote_entries(name, a_part), releases_ok,
                        self._github_repos(a_part))

    def _judge_tag(self, remote: str, change: Change, entries: Sequence[PushEntry],
                   releases_ok: bool, remote_repos: Sequence[str] | None) -> None:
        kind = f"tag-{change.change}"
        logged = chain([e for e in entries if e.ref == change.ref], change.before, change.after)
        if logged is not None:
            self._add(remote, change.ref, kind, change.before, change.after, PUSH_LOGGED,
                      f"logged (push-log line{'s' if len(logged) > 1 else ''} "
                      f"{_lines(logged)})")
            return
        if change.before is None:
            release = self._release_tag(change.ref, change.after, releases_ok, remote_repos)
            if release is not None:
                self._add(remote, change.ref, kind, None, change.after, *release)
                return
            why = "a tag the log never saw, and no granted release-please release owns it"
        else:
            why = (f"tag {change.change}: a push the log never saw (a moved or deleted tag is "
                   "never release-please's)")
        self._add(remote, change.ref, kind, change.before, change.after, UNGRANTED, why)

    def _judge_local_tags(self, releases_ok: bool) -> None:
        b, a = self.before.get("tags", {}), self.after.get("tags", {})
        down = [f"{side}: {p.get('reason', 'unavailable')}"
                for side, p in (("before", b), ("after", a)) if not p.get("available")]
        if down:
            self._add(LOCAL, "refs/tags", "tags-unavailable", None, None, UNVERIFIED,
                      "; ".join(down))
            return
        for change in ref_changes(b.get("tags", {}), a.get("tags", {})):
            self._judge_tag(LOCAL, change, self.entries, releases_ok, None)


def _releases_by_key(part: Mapping[str, Any], default_repo: str
                     ) -> dict[tuple[str, str], list[str]]:
    """Releases grouped by (GitHub repo, tag), each as canonical JSON for comparison."""
    out: dict[tuple[str, str], list[str]] = {}
    for rel in part.get("releases", []):
        repo = rel.get("repo") or default_repo
        key = (str(repo).lower(), str(rel.get("tag_name")))
        out.setdefault(key, []).append(json.dumps(rel, sort_keys=True))
    return {k: sorted(v) for k, v in out.items()}


def _release_diff(olds: Sequence[str], news: Sequence[str]) -> str:
    if len(olds) != 1 or len(news) != 1:
        return f"{len(olds)} release(s) with this tag before, {len(news)} after"
    old, new = json.loads(olds[0]), json.loads(news[0])
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return ", ".join(f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys)


def _one(values: set[str]) -> str | None:
    return sorted(values)[0] if values else None


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
