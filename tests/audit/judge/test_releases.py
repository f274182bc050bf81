"""SPEC Part 2 rules 3 and 4 on plain data: releases, their assets, and the tags they own."""

from __future__ import annotations

from typing import Any

from audit_data import (
    GH,
    GH_URL,
    MAIN,
    by_key,
    charter,
    entry,
    history,
    judged,
    moved_main,
    release,
    remote,
    repo_part,
    sha,
    snapshot,
)

from audit.model import PUSH_LOGGED, RELEASE_PLEASE, UNGRANTED, UNVERIFIED, Commit

B, X = sha(1), sha(2)
TAG = "refs/tags/v1.2.0"
GRANTED = charter(grants=[GH])


def logged_release(*rels: dict[str, Any], grant: Any = GRANTED) -> dict[tuple[str, str], str]:
    """X lands on main in a logged push; the tag v1.2.0 (unlogged) and `rels` appear."""
    return by_key(moved_main([Commit(X, (B,), "work", (), ("src/a.py",))], B, X,
                             [entry(MAIN, B, X)], grant=grant, releases_after=list(rels),
                             tags_after={TAG: X}))


def test_a_bots_release_on_a_logged_commit_passes_with_its_tag() -> None:
    got = logged_release(release("v1.2.0"))
    assert got[(X, "commit")] == PUSH_LOGGED
    assert got[("releases/v1.2.0", "release-added")] == RELEASE_PLEASE
    assert got[(TAG, "tag-added")] == RELEASE_PLEASE


def test_a_release_needs_the_grant_a_bot_and_no_draft() -> None:
    for rel, grant in ((release("v1.2.0"), charter(grants=["someone/else"])),
                       (release("v1.2.0", author="octocat"), GRANTED),
                       (release("v1.2.0", draft=True), GRANTED)):
        got = logged_release(rel, grant=grant)
        assert got[("releases/v1.2.0", "release-added")] == UNGRANTED, rel
        assert got[(TAG, "tag-added")] == UNGRANTED, rel


def test_a_release_bot_is_named_in_any_case_and_only_by_its_own_login() -> None:
    """GitHub logins are one account whatever their case: a charter's `release-bots: Acme-Bot`
    names the account GitHub reports as `acme-bot`. A look-alike login is still no bot."""
    bots = charter(grants=[GH], release_bots=["Acme-Bot"])
    for author in ("acme-bot", "Release-Please[bot]"):
        got = logged_release(release("v1.2.0", author=author), grant=bots)
        assert got[("releases/v1.2.0", "release-added")] == RELEASE_PLEASE, author
    for author in ("acme-bot2", "release-please-bot", "release-please[bot] ", "acme_bot"):
        got = logged_release(release("v1.2.0", author=author), grant=bots)
        assert got[("releases/v1.2.0", "release-added")] == UNGRANTED, author


def test_a_release_whose_tag_is_on_no_judged_commit_is_ungranted() -> None:
    b = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)}, releases=[]))
    a = snapshot(repo_part({"origin": remote({MAIN: B, TAG: X}, url=GH_URL)},
                           releases=[release("v1.2.0")]))
    got = by_key(judged(b, a, history(), GRANTED))
    assert got[("releases/v1.2.0", "release-added")] == UNGRANTED


def asset(name: str, uploader: str = "github-actions[bot]", digest: str = "sha256:1"
          ) -> dict[str, Any]:
    return {"name": name, "size": 1, "digest": digest, "uploader": uploader}


def test_assets_are_covered_only_on_a_granted_release_please_release_by_a_bot() -> None:
    old = [release("v0.9.0", assets=[asset("a.tgz"), asset("gone.zip")]),
           release("v0.8.0", author="octocat")]
    new = [release("v0.9.0", assets=[asset("a.tgz", digest="sha256:2"), asset("b.whl"),
                                     asset("c.sh", uploader="octocat")]),
           release("v0.8.0", author="octocat", assets=[asset("d.tgz")])]
    b = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)}, releases=old))
    a = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)}, releases=new))
    got = by_key(judged(b, a, history(), GRANTED))
    assert got[("releases/v0.9.0/assets/a.tgz", "asset-replaced")] == RELEASE_PLEASE
    assert got[("releases/v0.9.0/assets/b.whl", "asset-added")] == RELEASE_PLEASE
    assert got[("releases/v0.9.0/assets/c.sh", "asset-added")] == UNGRANTED
    assert got[("releases/v0.9.0/assets/gone.zip", "asset-deleted")] == UNGRANTED
    assert got[("releases/v0.8.0/assets/d.tgz", "asset-added")] == UNGRANTED


def test_releases_changed_or_deleted_fail() -> None:
    b = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)},
                           releases=[release("v0.1.0"), release("v0.2.0")]))
    a = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)},
                           releases=[release("v0.1.0", draft=True)]))
    assert by_key(judged(b, a, history(), GRANTED)) == {
        ("releases/v0.1.0", "release-changed"): UNGRANTED,
        ("releases/v0.2.0", "release-deleted"): UNGRANTED}


def test_unreadable_releases_leave_a_granted_tag_unverified() -> None:
    b = snapshot(repo_part({"origin": remote({MAIN: B}, url=GH_URL)}, releases=[]))
    a = snapshot(repo_part({"origin": remote({MAIN: B, TAG: X}, url=GH_URL)}, releases=[]))
    a["repos"]["/work/app"]["releases"] = {"available": False, "reason": "rate limited"}
    got = by_key(judged(b, a, history(), GRANTED))
    assert got[("releases", "releases-unavailable")] == UNVERIFIED
    assert got[(TAG, "tag-added")] == UNVERIFIED
