"""SPEC Part 2 rule 1 on plain data: the default branch, commit by commit (no git: the history is
written out as git would have listed it)."""

from __future__ import annotations

from audit_data import MAIN, by_key, charter, entry, line, moved_main, sha

from audit.model import (
    BACKLOG_ONLY,
    FOREIGN,
    NON_FAST_FORWARD,
    PUSH_LOGGED,
    UNGRANTED,
    UNVERIFIED,
    ZERO,
    Commit,
)

B, X, Y, Z = sha(1), sha(2), sha(3), sha(4)


def c(name: str, parent: str, paths: tuple[str, ...] = ("src/a.py",), *,
      sessions: tuple[str, ...] = (), gitlinks: tuple[str, ...] = (),
      subject: str | None = "work") -> Commit:
    return Commit(name, (parent,), subject, sessions, paths, gitlinks)


def test_a_commit_in_a_logged_range_is_push_logged_and_one_outside_is_ungranted() -> None:
    got = by_key(moved_main([c(Z, Y), c(Y, X), c(X, B)], B, Z, [entry(MAIN, B, Y)]))
    assert got[(X, "commit")] == got[(Y, "commit")] == PUSH_LOGGED
    assert got[(Z, "commit")] == UNGRANTED
    assert got[(MAIN, "branch-moved")] == UNGRANTED  # the branch carries its worst commit


def test_a_log_entry_for_another_ref_covers_no_commit_of_main() -> None:
    got = by_key(moved_main([c(X, B)], B, X, [entry("refs/heads/side", B, X)]))
    assert got[(X, "commit")] == UNGRANTED


def test_backlog_only_needs_every_path_under_backlog_and_no_link() -> None:
    findings = moved_main([c(Z, Y, ("backlog/tasks/t-1.md",)),
                           c(Y, X, ("backlog/t.md", "src/x.py")),
                           c(X, B, ("backlog/pinned",), gitlinks=("backlog/pinned",))], B, Z)
    got = by_key(findings)
    assert got[(Z, "commit")] == BACKLOG_ONLY
    assert got[(Y, "commit")] == UNGRANTED
    assert got[(X, "commit")] == UNGRANTED
    link = next(f for f in findings if f.commit == X)
    assert "gitlink or symbolic link backlog/pinned" in link.reason


def test_a_commit_that_changes_nothing_is_not_backlog_only() -> None:
    assert by_key(moved_main([c(X, B, ())], B, X))[(X, "commit")] == UNGRANTED


def test_foreign_needs_another_session_only_under_a_logged_tip() -> None:
    grant = charter(session="mine")
    commits = [c(Z, Y, sessions=("mine",)), c(Y, X, sessions=("other",)),
               c(X, B, sessions=("other",))]
    # The run pushed Z..Y on top of the other session's Y (logged): X and Y are FOREIGN.
    got = by_key(moved_main(commits, B, Z, [entry(MAIN, Y, Z)], grant=grant))
    assert got[(Y, "commit")] == got[(X, "commit")] == FOREIGN
    # Without a logged push on top, the other session's work is a push the log never saw.
    got = by_key(moved_main(commits, B, Z, [], grant=grant))
    assert got[(Y, "commit")] == UNGRANTED
    # Without the charter's session: line, nothing is FOREIGN.
    got = by_key(moved_main(commits, B, Z, [entry(MAIN, Y, Z)], grant=charter(session=None)))
    assert got[(Y, "commit")] == UNGRANTED


def test_a_commit_naming_the_runs_own_session_too_is_never_foreign() -> None:
    got = by_key(moved_main([c(Y, X), c(X, B, sessions=("other", "mine"))], B, Y,
                            [entry(MAIN, X, Y)], grant=charter(session="mine")))
    assert got[(X, "commit")] == UNGRANTED


def test_a_rewrite_is_non_fast_forward_even_when_logged() -> None:
    findings = moved_main([c(X, Y)], B, X, [entry(MAIN, B, X)], fast_forward=False)
    branch = next(f for f in findings if f.kind == "branch-moved")
    assert branch.verdict == NON_FAST_FORWARD
    assert "even though the push log holds it" in branch.reason


def test_logged_pushes_in_the_middle_of_the_run_are_checked_one_by_one() -> None:
    commits = [c(Y, X), c(X, B)]
    entries = [entry(MAIN, B, X, 1), entry(MAIN, X, Y, 2)]
    rewritten = moved_main(commits, B, Y, entries, rewrites=frozenset({(B, X)}),
                           fast_forwards=frozenset({(X, Y)}))
    branch = next(f for f in rewritten if f.kind == "branch-moved")
    assert branch.verdict == NON_FAST_FORWARD and "line 1" in branch.reason
    unknown = moved_main(commits, B, Y, entries, fast_forwards=frozenset({(X, Y)}))
    branch = next(f for f in unknown if f.kind == "branch-moved")
    assert branch.verdict == UNVERIFIED and "not in the clone" in branch.reason
    deleted = moved_main(commits, B, Y, [*entries, entry(MAIN, Y, ZERO, 3)],
                         fast_forwards=frozenset({(B, X), (X, Y)}))
    assert by_key(deleted)[(MAIN, "branch-moved")] == NON_FAST_FORWARD


def test_a_history_git_could_not_give_is_unverified() -> None:
    findings = moved_main([], B, X, problem="git failed in /work/app: boom", fast_forward=None)
    assert [(f.kind, f.verdict) for f in findings if f.ref == MAIN] == [
        ("branch-moved", UNVERIFIED)]
    assert "boom" in findings[0].reason or "boom" in findings[1].reason


def test_edited_commit_objects_fail_a_branch_that_would_pass_but_not_one_already_failing() -> None:
    forged = "commit 000000000002 in the clone does not match its name"
    passing = moved_main([c(X, B)], B, X, [entry(MAIN, B, X)], untrusted=forged)
    branch = next(f for f in passing if f.ref == MAIN and f.kind == "branch-moved")
    assert branch.verdict == UNVERIFIED and forged in branch.reason
    assert not [f for f in passing if f.kind == "commit"]  # nothing it says can be trusted
    failing = moved_main([c(X, B)], B, X, [], untrusted=forged)
    assert by_key(failing)[(X, "commit")] == UNGRANTED  # its own verdict, worse for the run


def test_checked_trees_matter_only_for_a_commit_passing_because_of_its_paths() -> None:
    lie = {X: "commit 000000000002's checked trees do not change the paths git reported"}
    only_backlog = [c(X, B, ("backlog/t.md",))]
    findings = moved_main(only_backlog, B, X, [], untrusted_paths=lie)
    assert by_key(findings)[(MAIN, "branch-moved")] == UNVERIFIED
    # Logged, the commit passes by the log, not its paths: what its trees say does not matter.
    findings = moved_main(only_backlog, B, X, [entry(MAIN, B, X)], untrusted_paths=lie)
    assert by_key(findings)[(X, "commit")] == PUSH_LOGGED


def test_a_merge_is_judged_on_its_own_and_its_other_parents_commits_each_on_theirs() -> None:
    merge = Commit(Z, (Y, X), "merge", (), ("backlog/a.md", "backlog/b.md"))
    got = by_key(moved_main([merge, c(Y, B, ("backlog/a.md",)), c(X, B, ("src/x.py",))], B, Z))
    assert got[(Z, "commit")] == BACKLOG_ONLY
    assert got[(Y, "commit")] == BACKLOG_ONLY
    assert got[(X, "commit")] == UNGRANTED


def test_line_helper_keeps_git_order() -> None:
    hist = line([c(Y, X), c(X, B)], present=[X])
    assert [k.sha for k in hist.commits] == [Y, X] and hist.present == {X}


def test_a_logged_pushs_commits_are_one_finding_per_push() -> None:
    W = sha(5)
    findings = moved_main([c(W, Z), c(Z, Y), c(Y, X), c(X, B)], B, W,
                          [entry(MAIN, B, Y, 1), entry(MAIN, Y, W, 2)])
    runs = [(f.count, f.first, f.last, f.reason) for f in findings if f.kind == "commit"]
    assert [r[:3] for r in runs] == [(2, Z, W), (2, X, Y)]
    assert runs[0][3].startswith("2 commits in logged push") and "line 2" in runs[0][3]
    branch = next(f for f in findings if f.kind == "branch-moved")
    assert "4 commits: 4 PUSH_LOGGED" in branch.reason  # every commit still counted


def test_a_moved_branch_whose_ancestry_is_unknown_is_unverified_not_a_fast_forward() -> None:
    # History that does not say whether the old tip is an ancestor of the new one (rule 5: a
    # fast-forward that could not be checked) must not read as a fast-forward, however well
    # its commits would pass.
    findings = moved_main([c(X, B, ("backlog/t.md",))], B, X, fast_forward=None)
    branch = next(f for f in findings if f.kind == "branch-moved")
    assert branch.verdict == UNVERIFIED
    assert "fast-forward" in branch.reason and "could not" in branch.reason
