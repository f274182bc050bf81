"""SPEC Part 2 rules 2, 3 and 5 on plain data: other refs, HEAD, tags, and parts that cannot be
read."""

from __future__ import annotations

from audit_data import (
    MAIN,
    REPO,
    by_key,
    entry,
    history,
    judged,
    remote,
    repo_part,
    sha,
    snapshot,
)

from audit.model import FOREIGN, NON_FAST_FORWARD, PUSH_LOGGED, UNGRANTED, UNVERIFIED, ZERO

A, B, C = sha(1), sha(2), sha(3)
SIDE = "refs/heads/side"


def refs_moved(b_refs: dict[str, str], a_refs: dict[str, str], entries: list = [],  # noqa: B006
               **kw: dict[str, str]) -> dict[tuple[str, str], str]:
    b = snapshot(repo_part({"origin": remote(b_refs)}, tags=kw.get("b_tags")))
    a = snapshot(repo_part({"origin": remote(a_refs)}, tags=kw.get("a_tags")))
    return by_key(judged(b, a, history({}, entries)))


def test_another_ref_passes_when_log_entries_chain_before_to_after() -> None:
    got = refs_moved({MAIN: A, SIDE: A}, {MAIN: A, SIDE: C},
                     [entry(SIDE, A, B, 1), entry(SIDE, B, C, 2)])
    assert got[(SIDE, "branch-moved")] == PUSH_LOGGED
    got = refs_moved({MAIN: A, SIDE: A}, {MAIN: A, SIDE: C}, [entry(SIDE, A, B, 1)])
    assert got[(SIDE, "branch-moved")] == UNGRANTED


def test_added_and_deleted_refs_chain_from_and_to_zeros() -> None:
    got = refs_moved({MAIN: A, SIDE: A}, {MAIN: A, "refs/heads/new": B},
                     [entry("refs/heads/new", ZERO, B), entry(SIDE, A, ZERO, 2)])
    assert got[("refs/heads/new", "branch-added")] == PUSH_LOGGED
    assert got[(SIDE, "branch-deleted")] == PUSH_LOGGED


def test_deleting_the_default_branch_fails_logged_or_not() -> None:
    got = refs_moved({MAIN: A}, {}, [entry(MAIN, A, ZERO)])
    assert got[(MAIN, "branch-deleted")] == NON_FAST_FORWARD


def test_pull_refs_are_foreign_and_head_follows_its_target() -> None:
    got = refs_moved({MAIN: A, "HEAD": A}, {MAIN: A, "HEAD": A, "refs/pull/1/head": B})
    assert got[("refs/pull/1/head", "ref-added")] == FOREIGN
    got = refs_moved({MAIN: A, SIDE: A, "HEAD": A}, {MAIN: A, SIDE: B, "HEAD": B},
                     [entry(SIDE, A, B)])
    assert got[("HEAD", "ref-moved")] == UNGRANTED  # HEAD moved without main


def test_a_retargeted_head_symref_is_ungranted() -> None:
    b = snapshot(repo_part({"origin": remote({MAIN: A, SIDE: A})}))
    a = snapshot(repo_part({"origin": remote({MAIN: A, SIDE: A}, head=SIDE)}))
    assert by_key(judged(b, a, history()))[("HEAD", "symref-changed")] == UNGRANTED


def test_tags_logged_pass_and_moved_or_unlogged_fail() -> None:
    got = refs_moved({MAIN: A, "refs/tags/v0.9": A}, {MAIN: A, "refs/tags/v0.9": B,
                                                      "refs/tags/v1": B, "refs/tags/v2": B},
                     [entry("refs/tags/v1", ZERO, B)])
    assert got[("refs/tags/v1", "tag-added")] == PUSH_LOGGED
    assert got[("refs/tags/v2", "tag-added")] == UNGRANTED
    assert got[("refs/tags/v0.9", "tag-moved")] == UNGRANTED


def test_local_tags_are_judged_too() -> None:
    got = refs_moved({MAIN: A}, {MAIN: A}, [entry("refs/tags/v1", ZERO, B)],
                     b_tags={}, a_tags={"refs/tags/v1": B, "refs/tags/v2": B})
    assert got[("refs/tags/v1", "tag-added")] == PUSH_LOGGED
    assert got[("refs/tags/v2", "tag-added")] == UNGRANTED


def test_peeled_lines_are_no_refs() -> None:
    got = refs_moved({MAIN: A}, {MAIN: A, "refs/tags/v1": B, "refs/tags/v1^{}": C},
                     [entry("refs/tags/v1", ZERO, B)])
    assert ("refs/tags/v1^{}", "tag-added") not in got


def test_parts_that_cannot_be_read_are_unverified() -> None:
    good = repo_part({"origin": remote({MAIN: A})})
    down = {"available": False, "reason": "ls-remote timed out", "url": "/srv/app.git"}
    a = snapshot(repo_part({"origin": down}))
    assert by_key(judged(snapshot(good), a, history()))[("", "remote-unavailable")] == UNVERIFIED
    assert by_key(judged(snapshot(good), snapshot(good, "/other"), history())) == {
        ("", "repo-missing"): UNVERIFIED, ("", "repo-added"): UNVERIFIED}
    gone = snapshot(repo_part({}))
    assert by_key(judged(snapshot(good), gone, history()))[("", "remote-removed")] == UNVERIFIED
    moved = snapshot(repo_part({"origin": remote({MAIN: A}, url="/srv/elsewhere.git")}))
    assert by_key(judged(snapshot(good), moved, history()))[("", "remote-url-changed")] \
        == UNVERIFIED


def test_a_logged_push_nobody_snapshotted_is_unverified() -> None:
    part = snapshot(repo_part({"origin": remote({MAIN: A})}))
    got = judged(part, part, history({}, [entry(MAIN, A, B, remote_name="/srv/other.git")]))
    assert [(f.kind, f.verdict) for f in got] == [("remote-unaudited", UNVERIFIED)]
    assert got[0].repo == REPO
