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

from audit.judge.branch import BranchJudge
from audit.judge.rules import lines
from audit.judge.trust import distrusted
from audit.model import (
    FOREIGN,
    NON_FAST_FORWARD,
    UNGRANTED,
    UNVERIFIED,
    Change,
    Charter,
    Finding,
    History,
    PushEntry,
    sort_findings,
)
from audit.refs import covering, default_branch, judged_branch, ref_changes
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



class RepoJudge(BranchJudge):
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
