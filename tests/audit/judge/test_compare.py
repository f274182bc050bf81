"""Judgement rules against real repositories and bare remotes: one scenario per rule and verdict.

Snapshots come from the real evidence code (`take_snapshot`); history from the real git layer
(`gather_history`). Only GitHub releases are written into the snapshot dicts directly (the
closeout tests read them from a GitHub-shaped test server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    GH,
    GH_URL,
    ZERO,
    Run,
    commit,
    commit_verdicts,
    git,
    isolate_git,
    make_repo_with_remote,
    other_clone,
    rev,
    verdicts,
)

from audit.evidence.history import gather_history
from audit.evidence.snapshot import take_snapshot
from audit.judge.compare import judge
from audit.model import (
    BACKLOG_ONLY,
    FOREIGN,
    NON_FAST_FORWARD,
    PUSH_LOGGED,
    RELEASE_PLEASE,
    UNGRANTED,
    UNVERIFIED,
    exit_code,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


# --- the default branch, commit by commit ------------------------------------------------------

def test_nothing_changed_is_no_finding(tmp_path: Path) -> None:
    run = Run(tmp_path)
    assert run.judge() == []


def test_a_logged_push_passes_commit_by_commit(tmp_path: Path) -> None:
    run = Run(tmp_path)
    a = commit(run.clone, "src/a.py", "a\n", "add a")
    b = commit(run.clone, "src/b.py", "b\n", "add b")
    run.push()
    findings = run.judge()
    assert commit_verdicts(findings) == {a: PUSH_LOGGED, b: PUSH_LOGGED}
    branch = [f for f in findings if f.kind == "branch-moved"]
    assert len(branch) == 1 and branch[0].verdict == PUSH_LOGGED
    assert "fast-forward" in branch[0].reason
    logged = next(f for f in findings if f.kind == "commit")  # one push: one run of commits
    assert (logged.count, logged.first, logged.last) == (2, a, b)
    assert "push-log line 1" in logged.reason
    assert verdicts(findings)[("HEAD", "ref-moved")] == PUSH_LOGGED
    assert exit_code(findings) == 0


def test_a_push_the_log_never_saw_fails(tmp_path: Path) -> None:
    run = Run(tmp_path)
    logged = commit(run.clone, "src/a.py", "a\n", "logged")
    run.push()
    sneaky = commit(run.clone, "src/b.py", "b\n", "not logged")
    run.push(logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {logged: PUSH_LOGGED, sneaky: UNGRANTED}
    bad = next(f for f in findings if f.commit == sneaky)
    assert "a push the log never saw" in bad.reason and "src/b.py" in bad.reason
    assert exit_code(findings) == 1


def test_an_empty_log_cannot_pass_moved_refs(tmp_path: Path) -> None:
    run = Run(tmp_path)
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push(logged=False)
    run.log.unlink()  # no log at all is an empty log, never a pass
    findings = run.judge()
    assert {f.verdict for f in findings} == {UNGRANTED}
    assert exit_code(findings) == 1


def test_backlog_only_commit_passes_but_backlog_plus_code_does_not(tmp_path: Path) -> None:
    run = Run(tmp_path)
    only = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    (run.clone / "backlog" / "tasks" / "task-2.md").write_text("y\n")
    (run.clone / "src").mkdir()
    (run.clone / "src" / "x.py").write_text("z\n")
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "task and code")
    mixed = rev(run.clone, "HEAD")
    run.push(logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {only: BACKLOG_ONLY, mixed: UNGRANTED}
    assert "backlog/tasks/task-1.md" in next(f for f in findings if f.commit == only).reason


def test_a_rename_out_of_backlog_is_not_backlog_only(tmp_path: Path) -> None:
    run = Run(tmp_path)
    commit(run.clone, "src/tool.py", "print(1)\n", "tool")
    run.push()
    (run.clone / "backlog").mkdir()
    git(run.clone, "mv", "src/tool.py", "backlog/tool.py")
    git(run.clone, "commit", "-q", "-m", "hide code in backlog")
    moved = rev(run.clone, "HEAD")
    run.push(logged=False)
    assert commit_verdicts(run.judge())[moved] == UNGRANTED  # src/tool.py is gone: a change


def test_merge_commits_are_judged_against_every_parent(tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    git(run.clone, "checkout", "-q", "-b", "side")
    side_task = commit(run.clone, "backlog/tasks/task-9.md", "t\n", "side task")
    git(run.clone, "checkout", "-q", "main")
    main_code = commit(run.clone, "src/m.py", "m\n", "main code")
    run.push()  # logged: base..main_code
    git(run.clone, "merge", "-q", "--no-ff", "--no-edit", "side")
    backlog_merge = rev(run.clone, "HEAD")
    git(run.clone, "checkout", "-q", "-b", "side2", base)
    side_code = commit(run.clone, "src/s.py", "s\n", "side code")
    git(run.clone, "checkout", "-q", "main")
    git(run.clone, "merge", "-q", "--no-ff", "--no-edit", "side2")
    code_merge = rev(run.clone, "HEAD")
    run.push(logged=False)
    got = commit_verdicts(run.judge())
    assert got == {main_code: PUSH_LOGGED, side_task: BACKLOG_ONLY,
                   # Only backlog/ against main, but src/m.py against the side branch: a merge
                   # is backlog-only only when it is against every parent.
                   backlog_merge: UNGRANTED,
                   side_code: UNGRANTED,  # an unlogged commit brought in by a merge parent
                   code_merge: UNGRANTED}


def test_a_logged_push_covers_commits_its_merges_bring_in(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "checkout", "-q", "-b", "side")
    side = commit(run.clone, "src/s.py", "s\n", "side")
    git(run.clone, "checkout", "-q", "main")
    mainline = commit(run.clone, "src/m.py", "m\n", "main")
    git(run.clone, "merge", "-q", "--no-ff", "--no-edit", "side")
    merge = rev(run.clone, "HEAD")
    run.push()
    findings = run.judge()
    # One logged push: its three commits are one finding (newest and oldest named, all counted).
    logged = [f for f in findings if f.kind == "commit"]
    assert [(f.verdict, f.count, f.last) for f in logged] == [(PUSH_LOGGED, 3, merge)]
    assert logged[0].first in (side, mainline)


def test_foreign_session_under_a_logged_push_and_own_session_unlogged(tmp_path: Path) -> None:
    run = Run(tmp_path, session="mine")
    other = other_clone(run)
    theirs = commit(other, "src/t.py", "t\n", "their work",
                    trailers=[("Claude-Session", "theirs")])
    git(other, "push", "-q", "origin", "main")  # another session's push: not in our log
    git(run.clone, "pull", "-q", "--ff-only", "origin", "main")
    ours = commit(run.clone, "src/o.py", "o\n", "our work", trailers=[("Claude-Session", "mine")])
    run.push()  # logged: theirs..ours
    own_unlogged = commit(run.clone, "src/p.py", "p\n", "our sneaky work",
                          trailers=[("Claude-Session", "mine")])
    run.push(logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {theirs: FOREIGN, ours: PUSH_LOGGED,
                                         own_unlogged: UNGRANTED}
    assert "theirs" in next(f for f in findings if f.commit == theirs).reason
    assert "own session mine" in next(f for f in findings if f.commit == own_unlogged).reason


def test_foreign_needs_a_logged_push_on_top_and_a_known_own_session(tmp_path: Path) -> None:
    run = Run(tmp_path, session="mine")
    other = other_clone(run)
    theirs = commit(other, "src/t.py", "t\n", "their work",
                    trailers=[("Claude-Session", "theirs")])
    git(other, "push", "-q", "origin", "main")
    # Nobody in this run pushed on top of it: an unexplained change to main.
    assert commit_verdicts(run.judge()) == {theirs: UNGRANTED}
    git(run.clone, "pull", "-q", "--ff-only", "origin", "main")
    commit(run.clone, "src/o.py", "o\n", "ours")
    run.push()
    assert commit_verdicts(run.judge())[theirs] == FOREIGN
    # Without the run's own session nothing can be told apart from the run's own work.
    assert commit_verdicts(run.judge(charter=None))[theirs] == UNGRANTED


def test_a_logged_force_push_is_still_non_fast_forward(tmp_path: Path) -> None:
    run = Run(tmp_path)
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "reset", "-q", "--hard", "HEAD~1")
    rewritten = commit(run.clone, "src/b.py", "b\n", "b")
    run.push(force=True)  # logged, yet history was rewritten
    findings = run.judge()
    branch = next(f for f in findings if f.ref == "refs/heads/main" and f.commit is None)
    assert branch.verdict == NON_FAST_FORWARD and "push log holds it" in branch.reason
    assert commit_verdicts(findings) == {rewritten: PUSH_LOGGED}
    assert exit_code(findings) == 1


def test_new_tip_fetched_from_the_remote_when_the_clone_lacks_it(tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = other_clone(run)
    unseen = commit(other, "src/x.py", "x\n", "pushed elsewhere")
    git(other, "push", "-q", "origin", "main")
    assert commit_verdicts(run.judge()) == {unseen: UNGRANTED}
    assert git(run.clone, "cat-file", "-t", unseen).strip() == "commit"
    assert rev(run.clone, "refs/loop-pi-audit/origin/heads/main") == unseen


def test_a_fast_forward_that_cannot_be_checked_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = other_clone(run)
    commit(other, "src/x.py", "x\n", "pushed elsewhere")
    git(other, "push", "-q", "origin", "main")
    after = run.snapshot()
    run.bare.rename(tmp_path / "gone.git")  # the remote vanished before the tip was fetched
    findings = run.judge(after)
    assert [(f.ref, f.kind, f.verdict) for f in findings] == [
        ("HEAD", "ref-moved", UNVERIFIED), ("refs/heads/main", "branch-moved", UNVERIFIED)]
    assert "could not check" in findings[1].reason and "fetch" in findings[1].reason
    assert exit_code(findings) == 3


def test_two_clones_of_one_remote_a_push_logged_for_the_other_covers_nothing(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = other_clone(run)
    c = commit(other, "src/x.py", "x\n", "from the other clone")
    run.push(clone=other)  # logged, but for the other clone
    assert commit_verdicts(run.judge()) == {c: UNGRANTED}
    git(run.clone, "fetch", "-q", "origin")
    git(run.clone, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt", "origin/main")
    w = commit(tmp_path / "wt", "src/w.py", "w\n", "from a linked worktree")
    run.push(src="HEAD", clone=tmp_path / "wt")  # a linked worktree is the same repository
    assert commit_verdicts(run.judge()) == {c: UNGRANTED, w: PUSH_LOGGED}


def test_a_push_logged_for_another_remote_covers_nothing(tmp_path: Path) -> None:
    run = Run(tmp_path)
    c = commit(run.clone, "src/a.py", "a\n", "a")
    old = run.remote_sha("refs/heads/main")
    git(run.clone, "push", "-q", "origin", "main")
    run.record("refs/heads/main", old, c, remote="fork")
    assert commit_verdicts(run.judge()) == {c: UNGRANTED}
    run.record("refs/heads/main", old, c, remote=str(run.bare))  # the remote's URL counts
    assert commit_verdicts(run.judge()) == {c: PUSH_LOGGED}


# --- other refs, HEAD, pull refs -----------------------------------------------------------------

def test_branches_added_moved_deleted_logged_and_not(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for name in ("gone-logged", "gone-silent", "moved-logged", "moved-silent"):
        git(run.clone, "push", "-q", "origin", f"HEAD:refs/heads/{name}")
    run.before = run.snapshot()
    commit(run.clone, "src/f.py", "f\n", "feature")
    run.push(ref="refs/heads/new-logged")
    run.push(ref="refs/heads/new-silent", logged=False)
    run.push(ref="refs/heads/moved-logged")
    run.push(ref="refs/heads/moved-silent", logged=False)
    run.push(src="", ref="refs/heads/gone-logged")
    run.push(src="", ref="refs/heads/gone-silent", logged=False)
    got = verdicts(run.judge())
    assert got == {
        ("refs/heads/new-logged", "branch-added"): PUSH_LOGGED,
        ("refs/heads/new-silent", "branch-added"): UNGRANTED,
        ("refs/heads/moved-logged", "branch-moved"): PUSH_LOGGED,
        ("refs/heads/moved-silent", "branch-moved"): UNGRANTED,
        ("refs/heads/gone-logged", "branch-deleted"): PUSH_LOGGED,
        ("refs/heads/gone-silent", "branch-deleted"): UNGRANTED,
    }


def test_a_ref_needs_log_entries_that_chain_before_to_after(tmp_path: Path) -> None:
    run = Run(tmp_path)
    first = commit(run.clone, "src/a.py", "a\n", "a")
    run.push(ref="refs/heads/topic")
    commit(run.clone, "src/b.py", "b\n", "b")
    run.push(ref="refs/heads/topic", logged=False)  # a gap in the chain
    third = commit(run.clone, "src/c.py", "c\n", "c")
    run.record("refs/heads/topic", rev(run.clone, "HEAD~1"), third)
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/topic")
    finding = next(f for f in run.judge() if f.ref == "refs/heads/topic")
    assert finding.verdict == UNGRANTED and "do not lead from" in finding.reason
    run.record("refs/heads/topic", first, rev(run.clone, "HEAD~1"))  # the missing link
    assert next(f for f in run.judge() if f.ref == "refs/heads/topic").verdict == PUSH_LOGGED


def test_pull_refs_are_foreign_and_head_follows_its_target(tmp_path: Path) -> None:
    run = Run(tmp_path)
    c = commit(run.clone, "src/p.py", "p\n", "proposal")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/pull/7/head")  # as the forge would
    git(run.clone, "reset", "-q", "--hard", "HEAD~1")
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    got = verdicts(run.judge())
    assert got[("refs/pull/7/head", "ref-added")] == FOREIGN
    assert got[("HEAD", "ref-moved")] == PUSH_LOGGED  # follows refs/heads/main
    assert c not in got


def test_tags_added_moved_deleted(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "tag", "v0.9")
    git(run.clone, "tag", "old")
    git(run.clone, "push", "-q", "origin", "v0.9", "old")
    run.before = run.snapshot()
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    git(run.clone, "tag", "-a", "-m", "one", "v1.0")
    run.push(src="refs/tags/v1.0", ref="refs/tags/v1.0")
    git(run.clone, "tag", "silent")
    run.push(src="refs/tags/silent", ref="refs/tags/silent", logged=False)
    git(run.clone, "tag", "-f", "v0.9")
    run.push(src="refs/tags/v0.9", ref="refs/tags/v0.9", logged=False, force=True)
    run.push(src="", ref="refs/tags/old", logged=False)
    got = verdicts(run.judge())
    assert got[("refs/tags/v1.0", "tag-added")] == PUSH_LOGGED
    assert got[("refs/tags/silent", "tag-added")] == UNGRANTED
    assert got[("refs/tags/v0.9", "tag-moved")] == UNGRANTED
    assert got[("refs/tags/old", "tag-deleted")] == UNGRANTED
    # The local tags changed too; v1.0 was pushed (logged), the moved v0.9 was not.
    local = {(f.ref, f.kind): f.verdict for f in run.judge() if f.remote == "local"}
    assert local[("refs/tags/v1.0", "tag-added")] == PUSH_LOGGED
    assert local[("refs/tags/v0.9", "tag-moved")] == UNGRANTED


# --- release-please ------------------------------------------------------------------------------

def release(tag: str, author: str = "release-please[bot]") -> dict[str, Any]:
    return {"id": 11, "tag_name": tag, "name": tag, "draft": False, "prerelease": False,
            "author": author, "target_commitish": "main", "created_at": "2026-11-30T07:10:00Z",
            "published_at": "2026-11-30T07:10:00Z", "repo": GH}


def release_please_lands(run: Run, tag: str = "v1.2.0") -> str:
    """What the bot does: a release commit on main, then a lightweight tag and a release, none
    of it pushed by the run (so none of it logged). The repository starts at its last release
    (taken as the before-snapshot)."""
    (run.clone / ".release-please-manifest.json").write_text('{".": "1.1.0"}\n')
    (run.clone / "package.json").write_text('{"version": "1.1.0"}\n')
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "chore(main): release 1.1.0 (#11)")
    git(run.clone, "push", "-q", "origin", "main")
    run.before = run.snapshot()
    (run.clone / "CHANGELOG.md").write_text("## 1.2.0\n")
    (run.clone / ".release-please-manifest.json").write_text('{".": "1.2.0"}\n')
    (run.clone / "package.json").write_text('{"version": "1.2.0"}\n')
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "chore(main): release 1.2.0 (#12)")
    sha = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "main", f"+HEAD:refs/tags/{tag}")
    return sha


def with_releases(run: Run, *rels: dict[str, Any]) -> dict[str, Any]:
    after = run.snapshot()
    after["repos"][run.key]["releases"]["releases"] = list(rels)
    return after


def test_a_granted_release_please_release_passes(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    sha = release_please_lands(run)
    findings = run.judge(with_releases(run, release("v1.2.0")))
    got = verdicts(findings)
    assert got[(sha, "commit")] == RELEASE_PLEASE
    assert got[("refs/tags/v1.2.0", "tag-added")] == RELEASE_PLEASE
    assert got[("releases/v1.2.0", "release-added")] == RELEASE_PLEASE
    assert exit_code(findings) == 0


def test_the_same_release_without_the_grant_fails(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority="release-please someone/else")
    sha = release_please_lands(run)
    findings = run.judge(with_releases(run, release("v1.2.0")))
    got = verdicts(findings)
    assert got[(sha, "commit")] == UNGRANTED
    assert got[("refs/tags/v1.2.0", "tag-added")] == UNGRANTED
    assert got[("releases/v1.2.0", "release-added")] == UNGRANTED
    assert "grants no release-please for acme/widgets" in next(
        f for f in findings if f.commit == sha).reason


def test_a_release_made_by_a_person_is_not_release_please(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    sha = release_please_lands(run)
    got = verdicts(run.judge(with_releases(run, release("v1.2.0", author="octocat"))))
    assert got[(sha, "commit")] == UNGRANTED
    assert got[("refs/tags/v1.2.0", "tag-added")] == UNGRANTED
    assert got[("releases/v1.2.0", "release-added")] == UNGRANTED


def test_release_commit_shape_is_checked(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    (run.clone / "CHANGELOG.md").write_text("## 1.2.0\n")
    (run.clone / "src").mkdir()
    (run.clone / "src" / "evil.py").write_text("import os\n")
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "chore(main): release 1.2.0")
    sha = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "main", "HEAD:refs/tags/v1.2.0")
    got = verdicts(run.judge(with_releases(run, release("v1.2.0"))))
    assert got[(sha, "commit")] == UNGRANTED  # touches code, not only release files
    assert got[("releases/v1.2.0", "release-added")] == UNGRANTED


def test_a_moved_tag_is_never_release_please(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/tags/v1.2.0")
    run.before = run.snapshot()
    release_please_lands(run)  # moves v1.2.0 onto the release commit
    got = verdicts(run.judge(with_releases(run, release("v1.2.0"))))
    assert got[("refs/tags/v1.2.0", "tag-moved")] == UNGRANTED


def test_releases_changed_and_deleted_fail(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    rel_a, rel_b = release("v0.1.0"), release("v0.2.0")
    run.before["repos"][run.key]["releases"]["releases"] = [rel_a, rel_b]
    after = with_releases(run, {**rel_a, "draft": True})
    got = verdicts(run.judge(after))
    assert got == {("releases/v0.1.0", "release-changed"): UNGRANTED,
                   ("releases/v0.2.0", "release-deleted"): UNGRANTED}


# --- parts that cannot be read -------------------------------------------------------------------

def test_a_part_unavailable_on_one_side_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    after = run.snapshot()
    after["repos"][run.key]["releases"] = {"available": False, "reason": "GitHub answered 502"}
    after["repos"][run.key]["remotes"]["origin"] = {"available": False, "url": GH_URL,
                                                    "reason": "ls-remote timed out"}
    findings = run.judge(after)
    assert [(f.kind, f.verdict) for f in findings] == [
        ("releases-unavailable", UNVERIFIED), ("remote-unavailable", UNVERIFIED)]
    assert "502" in findings[0].reason and "timed out" in findings[1].reason
    assert exit_code(findings) == 3


def test_a_repository_in_one_snapshot_only_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    after = run.snapshot()
    after["repos"] = {}
    findings = run.judge(after)
    assert [(f.kind, f.verdict) for f in findings] == [("repo-missing", UNVERIFIED)]


def test_release_commit_with_releases_unreadable_is_unverified_not_a_pass(tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    sha = release_please_lands(run)
    after = run.snapshot()
    after["repos"][run.key]["releases"] = {"available": False, "reason": "rate limited",
                                           "github_repo": GH, "github_repos": [GH]}
    findings = run.judge(after)
    got = verdicts(findings)
    assert got[(sha, "commit")] == UNVERIFIED
    assert got[("refs/tags/v1.2.0", "tag-added")] == UNVERIFIED
    assert exit_code(findings) == 3


def test_a_default_branch_created_during_the_run(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.bare, "update-ref", "-d", "refs/heads/main")  # no default branch yet at begin
    run.before = run.snapshot()
    assert "refs/heads/main" not in run.before["repos"][run.key]["remotes"]["origin"]["refs"]
    first = rev(run.clone, "HEAD")
    second = commit(run.clone, "src/a.py", "a\n", "a")
    run.push()  # logged 0 → second
    findings = run.judge()
    got = verdicts(findings)
    assert got[("refs/heads/main", "branch-added")] == PUSH_LOGGED
    assert got[("HEAD", "ref-added")] == PUSH_LOGGED  # advertised once main exists
    assert got[(first, "commit")] == got[(second, "commit")] == PUSH_LOGGED
    assert exit_code(findings) == 0


def test_a_deleted_default_branch_fails_logged_or_not(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/keep")
    git(run.bare, "config", "receive.denyDeleteCurrent", "ignore")
    run.before = run.snapshot()
    run.push(src="", ref="refs/heads/main", logged=False)
    got = verdicts(run.judge())
    assert got[("refs/heads/main", "branch-deleted")] == NON_FAST_FORWARD
    run.record("refs/heads/main", rev(run.clone, "HEAD"), ZERO)
    assert verdicts(run.judge())[("refs/heads/main", "branch-deleted")] == NON_FAST_FORWARD


def test_a_retargeted_remote_head_is_ungranted(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/other")
    run.before = run.snapshot()
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/other")
    got = verdicts(run.judge())
    assert got[("HEAD", "symref-changed")] == UNGRANTED


def test_a_shallow_clone_cannot_call_a_rewrite(tmp_path: Path) -> None:
    run = Run(tmp_path)
    commit(run.clone, "src/a.py", "a\n", "a")
    git(run.clone, "push", "-q", "origin", "main")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{run.bare}", str(shallow))
    before = take_snapshot([shallow], charter_sha256=None)
    git(run.clone, "reset", "-q", "--hard", "HEAD~1")
    commit(run.clone, "src/b.py", "b\n", "b")
    git(run.clone, "push", "-q", "--force", "origin", "main")
    after = take_snapshot([shallow], charter_sha256=None)
    findings = judge(before, after, None, gather_history(before, after, []), ())
    main = next(f for f in findings if f.ref == "refs/heads/main")
    assert main.verdict == UNVERIFIED and "shallow clone" in main.reason


def test_compare_when_the_clone_is_gone_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = other_clone(run)
    commit(other, "src/x.py", "x\n", "x")
    git(other, "push", "-q", "origin", "main")
    after = run.snapshot()
    run.clone.rename(tmp_path / "moved-away")
    findings = run.judge(after)
    main = next(f for f in findings if f.ref == "refs/heads/main")
    assert main.verdict == UNVERIFIED and "git failed" in main.reason
    assert exit_code(findings) == 3


def test_a_logged_push_to_a_repository_never_snapshotted_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    stray, _ = make_repo_with_remote(tmp_path, "stray")
    run.record("refs/heads/main", ZERO, rev(stray, "HEAD"), repo=stray)
    findings = run.judge()
    assert [(f.repo, f.kind, f.verdict) for f in findings] == [
        (str(stray), "repo-unaudited", UNVERIFIED)]
    assert "line 1" in findings[0].reason


def test_a_draft_release_grants_nothing(tmp_path: Path) -> None:
    """docs/audit.md: draft releases do not qualify for RELEASE_PLEASE. A draft by the bot whose
    tag the run had pushed passed the release commit, its tag and the draft itself."""
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    sha = release_please_lands(run)
    findings = run.judge(with_releases(run, {**release("v1.2.0"), "draft": True,
                                             "published_at": None}))
    got = verdicts(findings)
    assert got[(sha, "commit")] == UNGRANTED
    assert got[("refs/tags/v1.2.0", "tag-added")] == UNGRANTED
    assert got[("releases/v1.2.0", "release-added")] == UNGRANTED
