"""audit.reach on plain data: which push-log entries' ranges hold which commit, and whether each
logged push was a fast-forward, read off the graph git listed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from audit.model import ZERO, Commit, PushEntry
from audit.reach import entry_ancestry, reach_bits


def test_reach_bits_marks_each_entry_range() -> None:
    # r <- x <- y <- z (children last); entry 0 covers x..z, entry 1 covers r..x.
    r, x, y, z = "1" * 40, "2" * 40, "3" * 40, "4" * 40
    commits = [Commit(z, (y,), "", (), ()), Commit(y, (x,), "", (), ()),
               Commit(x, (r,), "", (), ()), Commit(r, (), "", (), ())]
    entries = [PushEntry("/r", "origin", "refs/heads/main", x, z, "t", "s", 1),
               PushEntry("/r", "origin", "refs/heads/main", r, x, "t", "s", 2)]
    bits = reach_bits(commits, entries)

    def covered(sha: str, i: int) -> bool:
        v = bits[sha]
        return bool((v >> (2 * i)) & 1) and not (v >> (2 * i + 1)) & 1

    assert [covered(s, 0) for s in (z, y, x, r)] == [True, True, False, False]
    assert [covered(s, 1) for s in (z, y, x, r)] == [False, False, True, False]

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reach_bits_agrees_with_walking_each_range(data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=1, max_value=25))
    shas = [f"{i + 1:040x}" for i in range(n)]  # never the all-zero "absent"
    # Parents always have smaller indexes: a DAG with merges (up to two parents).
    parents = [tuple(sorted(set(data.draw(st.lists(st.integers(0, i - 1), max_size=2)))))
               if i else () for i in range(n)]
    commits = [Commit(shas[i], tuple(shas[p] for p in parents[i]), "", (), ())
               for i in reversed(range(n))]
    tip = st.one_of(st.just(ZERO), st.sampled_from(shas))
    entries = [PushEntry("/r", "origin", "refs/heads/main", data.draw(tip), data.draw(tip),
                         "t", "s", k)
               for k in range(data.draw(st.integers(0, 5)))]
    bits = reach_bits(commits, entries)

    def ancestors(sha: str) -> set[str]:
        if sha == ZERO:
            return set()
        seen, todo = set(), [sha]
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo.extend(shas[p] for p in parents[int(s, 16) - 1])
        return seen

    for i, e in enumerate(entries):
        expected = ancestors(e.new) - ancestors(e.old)
        got = {s for s in shas if (bits[s] >> (2 * i)) & 1 and not (bits[s] >> (2 * i + 1)) & 1}
        assert got == expected

def test_entry_ancestry_reads_fast_forwards_off_the_graph() -> None:

    # r <- x <- y <- z, with r excluded (the before tip): git listed only z, y, x.
    r, x, y, z, q = "1" * 40, "2" * 40, "3" * 40, "4" * 40, "5" * 40
    commits = [Commit(z, (y,), "", (), ()), Commit(y, (x,), "", (), ()),
               Commit(x, (r,), "", (), ())]

    def e(old: str, new: str) -> PushEntry:
        return PushEntry("/r", "origin", "refs/heads/main", old, new, "t", "s", 1)

    got = entry_ancestry(commits, [e(x, z), e(z, x), e(r, y), e(q, y), e(ZERO, z), e(y, ZERO)])
    # Inside the graph: settled either way; an old tip on the graph's edge: settled when the
    # new tip reaches it; an old tip the graph never saw: git must be asked (None).
    assert got == [True, False, True, None, None, None]
