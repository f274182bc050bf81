"""Judgement: every difference between a before and an after snapshot gets one verdict.

Pure functions only. What git knows about the history of a moved default branch arrives as a
`History` built by `audit.evidence.history`; nothing in here starts a process, so every rule can be
tested on plain data and the whole judgement costs a fixed number of git processes per changed ref.

The decisions taken where the contract is silent (how merges, added or deleted default branches,
remotes sharing a URL, FOREIGN and release-please commits are judged, and how a branch finding
carries its commits' severity) are listed in docs/audit.md under "Decisions where the contract
is silent".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.judge.release import ReleaseJudge
from audit.judge.rules import chain, lines, noun, paths_note
from audit.judge.trust import distrusted
from audit.model import (
    BACKLOG_DIR,
    BACKLOG_ONLY,
    FOREIGN,
    NON_FAST_FORWARD,
    PUSH_LOGGED,
    RELEASE_PLEASE,
    SEVERITY,
    UNGRANTED,
    UNVERIFIED,
    ZERO,
    BranchHistory,
    Change,
    Charter,
    Commit,
    Finding,
    History,
    PushEntry,
    most_severe,
    short,
    sort_findings,
)
from audit.reach import first_entry, new_bit, new_bits, ranges_holding, reach_bits
from audit.refs import EntryIndex, covering, default_branch, judged_branch, ref_changes
from jobs.core.urls import redacted_urls


def judge(before: Mapping[str, Any], after: Mapping[str, Any], charter: Charter | None,
          history: History, hosts: Sequence[str] = ()) -> list[Finding]:
    """Every finding between two snapshots, in report order: judged once, and again when a
    branch that would pass rests on objects that do not hold up (`audit.judge.trust`)."""
    findings = _judge(before, after, charter, history, hosts)
    checked = distrusted(history, findings)
    if checked is history:
        return findings
    return _judge(before, after, charter, checked, hosts)


def _judge(before: Mapping[str, Any], after: Mapping[str, Any], charter: Charter | None,
           history: History, hosts: Sequence[str]) -> list[Finding]:
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
                    f"{lines(es)}) but it is in no before snapshot: `loop-pi-audit add` it "
                    "when the run starts")
            for repo, es in sorted(by_repo.items())]



class RepoJudge(ReleaseJudge):
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
            moved = [f"{key} {redacted_urls(b.get(key))!r} → {redacted_urls(a.get(key))!r}"
                     for key in ("url", "pushurls", "rewritten_to")
                     if redacted_urls(b.get(key)) != redacted_urls(a.get(key))]
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
        known = self.all_remotes()
        covered = {id(e) for name, part in parts for e in covering(self.entries, name, part, known)}
        by_remote: dict[str, list[PushEntry]] = {}
        for e in self.entries:
            if id(e) not in covered:
                by_remote.setdefault(e.remote, []).append(e)
        for remote, es in sorted(by_remote.items()):
            self._add(remote, "", "remote-unaudited", None, None, UNVERIFIED,
                      f"the push log names remote {remote} (line{'s' if len(es) > 1 else ''} "
                      f"{lines(es)}) but no snapshot holds it: what the push changed there "
                      "was never looked at")

    # -- remotes --------------------------------------------------------------------------

    def _judge_remote(self, name: str, b: Mapping[str, Any], a: Mapping[str, Any]) -> list[Change]:
        """Judge every changed ref but tags (which wait for the releases); return the tags."""
        b_refs: Mapping[str, str] = b.get("refs", {})
        a_refs: Mapping[str, str] = a.get("refs", {})
        index = self.remote_index(name, a)
        entries = list(index.all)
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
            elif change.after is None and change.ref == default_branch(b, a):
                verdict_of[change.ref] = self._add(
                    name, change.ref, "branch-deleted", change.before, None, NON_FAST_FORWARD,
                    "the default branch was deleted (a failure even when logged)")
            elif change.ref.startswith("refs/pull/"):
                verdict_of[change.ref] = self._add(
                    name, change.ref, f"ref-{change.change}", change.before, change.after,
                    FOREIGN, "pull-request ref: the forge writes it, not a push")
            else:
                verdict_of[change.ref] = self._judge_chain(name, change, index)
        if branch is None:
            self._judge_unchanged_branch(name, b, a, entries)
        self._judge_symrefs(name, b, a)
        for change in heads:
            self._judge_head(name, b, a, change, verdict_of)
        return tags

    def _judge_unchanged_branch(self, name: str, b: Mapping[str, Any], a: Mapping[str, Any],
                                entries: Sequence[PushEntry]) -> None:
        """A default branch that ends where it began can still have been rewritten in between
        (pushed away and back): its logged pushes are checked like a moved branch's."""
        ref = default_branch(b, a)
        value = b.get("refs", {}).get(ref)
        hist = self.history.branches.get((self.repo, name, ref))
        if value is None or value != a.get("refs", {}).get(ref) or hist is None:
            return
        if hist.problem is not None:
            self._add(name, ref, "branch-unchanged", value, value, UNVERIFIED,
                      f"back where it started, but its logged pushes could not be checked: "
                      f"{hist.problem}")
            return
        verdict, note = self._midrun(ref, hist, entries)
        if verdict is not None:
            self._add(name, ref, "branch-unchanged", value, value, verdict,
                      "back where it started" + note)

    def _judge_chain(self, remote: str, change: Change, entries: EntryIndex) -> Finding:
        mine = entries.of_ref(change.ref)
        kind = f"{noun(change.ref)}-{change.change}"
        path = chain(mine, change.before, change.after)
        if path is not None:
            return self._add(remote, change.ref, kind, change.before, change.after, PUSH_LOGGED,
                             f"logged (push-log line{'s' if len(path) > 1 else ''} "
                             f"{lines(path)})")
        why = ("a push the log never saw" if not mine else
               f"the log's pushes of this ref (lines {lines(mine)}) do not lead from "
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
            return self._judge_chain(remote, change, EntryIndex(entries))
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
        verdict, midrun = self._midrun(change.ref, hist, entries)
        if verdict is not None:
            verdicts.append(verdict)
        return self._add(remote, change.ref, kind, change.before, change.after,
                         most_severe(verdicts) if verdicts else UNVERIFIED,
                         ("fast-forward; " if change.before else "") + summary + midrun)

    @staticmethod
    def _midrun(ref: str, hist: BranchHistory, entries: Sequence[PushEntry]
                ) -> tuple[str | None, str]:
        """Rewrites in the middle of the run: a logged push of the default branch that deleted it
        or whose old tip is not an ancestor of its new one fails, even when the net change is a
        fast-forward (another session's commit may be gone); one that could not be checked is
        UNVERIFIED."""
        mine = [e for e in entries if e.ref == ref and e.old != ZERO]
        deleted = [e for e in mine if e.new == ZERO]
        rewrote = [e for e in mine if (e.old, e.new) in hist.rewrites]
        unknown = [e for e in mine if e.new != ZERO and (e.old, e.new) not in hist.rewrites
                   and (e.old, e.new) not in hist.fast_forwards]
        notes: list[str] = []
        if deleted:
            plural = "s" if len(deleted) > 1 else ""
            notes.append(f"the default branch was deleted (push-log line{plural} "
                         f"{lines(deleted)}), even though logged")
        if rewrote:
            notes.append("rewritten in the middle of the run: "
                         + ", ".join(f"line {e.line} {short(e.old)}..{short(e.new)} is not a "
                                     "fast-forward" for e in rewrote))
        if deleted or rewrote:
            return NON_FAST_FORWARD, "; " + "; ".join(notes)
        if unknown:
            return UNVERIFIED, ("; could not check that logged pushes were fast-forwards: "
                                + ", ".join(f"line {e.line} (old tip {short(e.old)} is not in "
                                            "the clone)" for e in unknown))
        return None, ""

    @staticmethod
    def _range(hist: BranchHistory, change: Change) -> list[Commit]:
        """The commits the after tip reaches in the history git gave (`before..after`): read off
        the reach sets when history worked them out (the branch's own move is the probe after
        the log entries), else walked."""
        if hist.reach is not None and hist.reach_entries is not None:
            probe = new_bit(len(hist.reach_entries))
            reach = hist.reach
            return [c for c in hist.commits if reach.get(c.sha, 0) & probe]
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
        if hist.reach is not None and hist.reach_entries is not None:
            usable, bits = list(hist.reach_entries), hist.reach
        else:
            usable = [e for e in entries
                      if all(s == ZERO or s in hist.present for s in (e.old, e.new))]
            bits = reach_bits(hist.commits, usable)
        this_ref = new_bits(i for i, e in enumerate(usable) if e.ref == change.ref)
        any_entry = new_bits(range(len(usable)))
        branch_name = change.ref.removeprefix("refs/heads/")
        gh_repos = self._github_repos(part)
        own = self.charter.session if self.charter is not None else None
        verdicts: list[str] = []
        for order, commit in enumerate(commits):
            reach = bits.get(commit.sha, 0)
            covered = ranges_holding(reach, this_ref)
            under_logged_tip = bool(reach & any_entry)
            verdict, reason, evidence = self._judge_commit(
                commit, usable, covered, under_logged_tip, branch_name, gh_repos, own)
            verdicts.append(verdict)
            self.commit_verdicts[commit.sha] = verdict
            self._add(remote, change.ref, "commit", change.before, change.after, verdict,
                      reason, commit=commit.sha, order=order,
                      parent=commit.parents[0] if commit.parents else None, evidence=evidence)
        return verdicts

    def _judge_commit(self, commit: Commit, usable: Sequence[PushEntry], covered: int,
                      under_logged_tip: bool, branch: str, gh_repos: Sequence[str],
                      own: str | None) -> tuple[str, str, str | None]:
        """The commit's verdict, its reason, and (when it passes) its evidence in words that
        hold for a run of commits."""
        said = f'"{commit.subject}"' if commit.subject is not None else "(unreadable subject)"
        if covered:
            entry = usable[first_entry(covered)]
            logged = (f"in logged push {short(entry.old)}..{short(entry.new)} "
                      f"(push-log line {entry.line}, {entry.source})")
            return PUSH_LOGGED, f"{said} {logged}", logged
        if commit.paths and not commit.gitlinks \
                and all(p.startswith(BACKLOG_DIR) for p in commit.paths):
            return (BACKLOG_ONLY, f"{said} changes only {paths_note(commit.paths)}",
                    f"each changes only {BACKLOG_DIR}")
        release = self._release_commit(commit, branch, gh_repos)
        if release is not None and release[0] == RELEASE_PLEASE:
            return release[0], f"{said} {release[1]}", f"{said} {release[1]}"
        others = [s for s in commit.sessions if s != own]
        if own is not None and others and len(others) == len(commit.sessions) \
                and under_logged_tip:
            foreign = f"session {others[0]}'s work (the run is {own}), under a logged push"
            return FOREIGN, f"{said} is {foreign}", foreign
        if release is not None:
            return release[0], f"{said} {release[1]}", None
        why = "a push the log never saw"
        if own is not None and own in commit.sessions:
            why += f" (the run's own session {own})"
        elif commit.sessions and own is None:
            why += " (the charter names no session:, so no session's work counts as foreign)"
        elif others and not under_logged_tip:
            why += f" (session {others[0]}'s work, but no logged push was made on top of it)"
        if commit.gitlinks:
            why += (f"; submodule gitlink or symbolic link {paths_note(commit.gitlinks)} is no "
                    "backlog change")
        return UNGRANTED, f"{said} {why}; changes {paths_note(commit.paths)}", None
