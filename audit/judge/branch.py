"""The default branch, commit by commit (SPEC Part 2, rule 1): each commit in `before..after`
is PUSH_LOGGED, BACKLOG_ONLY, RELEASE_PLEASE, FOREIGN or UNGRANTED, and the branch's own finding
carries the most severe of them (or NON_FAST_FORWARD for a rewrite)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.judge.release import ReleaseJudge
from audit.judge.rules import chain, lines, noun, paths_note
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
    Commit,
    Finding,
    PushEntry,
    most_severe,
    short,
)
from audit.reach import first_entry, new_bit, new_bits, reach_bits
from audit.refs import EntryIndex


class BranchJudge(ReleaseJudge):
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
        if change.before is not None and hist.fast_forward is None:
            # Rule 5: a fast-forward that could not be checked is no fast-forward.
            return self._add(remote, change.ref, kind, change.before, change.after, UNVERIFIED,
                             f"could not check that it was a fast-forward of "
                             f"{short(change.before)}; {summary}")
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
        gh_repos = self._github_repos(part)
        own = self.charter.session if self.charter is not None else None
        logged: dict[int, str] = {}
        verdicts: list[str] = []
        add, commit_verdicts = self._add, self.commit_verdicts
        ref, before, after = change.ref, change.before, change.after
        # Consecutive commits of one logged push are one finding (as the report would group
        # them, docs/audit.md "Runs of commits"), made once rather than once per commit.
        run: list[tuple[int, Commit]] = []
        run_entry = -1

        def flush() -> None:
            if not run:
                return
            (order, newest), oldest = run[0], run[-1][1]
            text = logged[run_entry]
            finding = add(remote, ref, "commit", before, after, PUSH_LOGGED, text,
                          commit=newest.sha, order=order,
                          parent=oldest.parents[0] if oldest.parents else None, evidence=text)
            if len(run) > 1:
                finding.reason = f"{len(run)} commits {text}"
                finding.count, finding.first, finding.last = len(run), oldest.sha, newest.sha
            run.clear()

        for order, commit in enumerate(commits):
            reach = bits.get(commit.sha, 0)
            covered = reach & ~(reach >> 1) & this_ref  # ranges_holding, inline: per commit
            if covered:
                # A logged push's commits are judged by the log alone: git was asked nothing
                # more about them (no subject, no paths).
                index = first_entry(covered)
                if index not in logged:
                    entry = usable[index]
                    logged[index] = (f"in logged push {short(entry.old)}..{short(entry.new)} "
                                     f"(push-log line {entry.line}, {entry.source})")
                if index != run_entry:
                    flush()
                    run_entry = index
                run.append((order, commit))
                verdicts.append(PUSH_LOGGED)
                commit_verdicts[commit.sha] = PUSH_LOGGED
                continue
            flush()
            verdict, reason, evidence = self._judge_commit(
                commit, bool(reach & any_entry), gh_repos, own)
            verdicts.append(verdict)
            commit_verdicts[commit.sha] = verdict
            add(remote, ref, "commit", before, after, verdict, reason, commit=commit.sha,
                order=order, parent=commit.parents[0] if commit.parents else None,
                evidence=evidence)
        flush()
        return verdicts

    def _judge_commit(self, commit: Commit, under_logged_tip: bool, gh_repos: Sequence[str],
                      own: str | None) -> tuple[str, str, str | None]:
        """A commit no log entry covers: its verdict, its reason, and (when it passes) its
        evidence in words that hold for a run of commits."""
        said = f'"{commit.subject}"' if commit.subject is not None else "(unreadable subject)"
        if commit.paths and not commit.gitlinks \
                and all(p.startswith(BACKLOG_DIR) for p in commit.paths):
            return (BACKLOG_ONLY, f"{said} changes only {paths_note(commit.paths)}",
                    f"each changes only {BACKLOG_DIR}")
        release = self._release_commit(commit, gh_repos)
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
