"""audit.judge.rules on plain data: how a ref's change chains through the push log."""

from __future__ import annotations

from audit_data import MAIN, entry, sha

from audit.judge.rules import chain, lines, noun, paths_note
from audit.model import ZERO

A, B, C, D = sha(1), sha(2), sha(3), sha(4)


def test_chain_finds_the_entries_leading_from_before_to_after() -> None:
    log = [entry(MAIN, A, B, 1), entry(MAIN, C, D, 2), entry(MAIN, B, C, 3)]
    assert [e.line for e in chain(log, A, D) or []] == [1, 3, 2]
    assert chain(log, B, A) is None  # entries do not run backwards
    assert chain(log, A, A) is None  # no change needs no entry, and none chains to itself
    assert [e.line for e in chain([entry(MAIN, ZERO, A, 4)], None, A) or []] == [4]
    assert [e.line for e in chain([entry(MAIN, A, ZERO, 5)], A, None) or []] == [5]


def test_words_for_refs_paths_and_lines() -> None:
    assert [noun(r) for r in (MAIN, "refs/tags/v1", "refs/pull/1/head")] == [
        "branch", "tag", "ref"]
    assert paths_note(()) == "no paths"
    assert paths_note(("a", "b", "c", "d", "e")) == "a, b, c and 2 more"
    assert lines([entry(MAIN, A, B, 3), entry(MAIN, B, C, 9)]) == "3, 9"
