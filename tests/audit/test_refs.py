"""audit.refs on plain data: the default branch, what changed, which log entries cover a remote."""

from __future__ import annotations

from audit_data import MAIN, entry, remote, sha

from audit.model import Change
from audit.refs import EntryIndex, covering, default_branch, judged_branch, ref_changes

A, B = sha(1), sha(2)


def test_the_default_branch_is_heads_symref_at_the_start_else_main() -> None:
    assert default_branch(remote({MAIN: A}, head="refs/heads/trunk"), remote({})) \
        == "refs/heads/trunk"
    assert default_branch(remote({MAIN: A}, head=None), remote({}, head="refs/heads/x")) == MAIN
    # A remote with no branch at the start: HEAD as the run left it.
    assert default_branch(remote({}, head=None), remote({"refs/heads/x": A},
                                                        head="refs/heads/x")) == "refs/heads/x"


def test_the_judged_branch_is_the_default_one_when_it_moved_or_was_added() -> None:
    assert judged_branch(remote({MAIN: A}), remote({MAIN: B})) == Change(MAIN, A, B)
    assert judged_branch(remote({}), remote({MAIN: B})) == Change(MAIN, None, B)
    assert judged_branch(remote({MAIN: A}), remote({MAIN: A})) is None
    assert judged_branch(remote({MAIN: A}), remote({})) is None  # deleted: judged as a ref


def test_ref_changes_skip_peeled_lines_and_unchanged_refs() -> None:
    got = ref_changes({MAIN: A, "refs/tags/v1": A, "refs/tags/v1^{}": B},
                      {MAIN: B, "refs/tags/v1": A, "refs/tags/v2": B})
    assert got == [Change(MAIN, A, B), Change("refs/tags/v2", None, B)]
    assert [c.change for c in got] == ["moved", "added"]


def test_an_entry_covers_a_remote_by_name_url_or_a_remote_sharing_its_url() -> None:
    origin = remote({}, url="https://github.com/Acme/Widgets.git")
    mirror = remote({}, url="git@github.com:acme/widgets")
    other = remote({}, url="/srv/other.git")
    entries = [entry(MAIN, A, B, 1, remote_name="origin"),
               entry(MAIN, A, B, 2, remote_name="https://github.com/acme/widgets"),
               entry(MAIN, A, B, 3, remote_name="mirror"),
               entry(MAIN, A, B, 4, remote_name="other"),
               entry(MAIN, A, B, 5, remote_name="file:///srv/other.git/")]
    remotes = {"origin": origin, "mirror": mirror, "other": other}
    assert [e.line for e in covering(entries, "origin", origin, remotes)] == [1, 2, 3]
    assert [e.line for e in covering(entries, "other", other, remotes)] == [4, 5]


def test_an_insteadof_rewrite_counts_as_the_remotes_url() -> None:
    part = {**remote({}, url="gh:acme/w"), "rewritten_to": ["/srv/w.git"]}
    assert covering([entry(MAIN, A, B, remote_name="/srv/w.git/")], "origin", part) != []


def test_entry_index_finds_a_refs_entries() -> None:
    index = EntryIndex([entry(MAIN, A, B, 1), entry("refs/tags/v1", A, B, 2)])
    assert [e.line for e in index.of_ref("refs/tags/v1")] == [2]
    assert index.of_ref("refs/heads/none") == []
