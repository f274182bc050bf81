"""audit.evidence.history's reading of git's output, on plain text."""

from __future__ import annotations

from audit.evidence.history import parse_history
from audit.model import Commit

# --- the pure parts ------------------------------------------------------------------------------

def test_parse_history_keeps_paths_sessions_and_refuses_spoofed_headers() -> None:
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    text = (f"\0{a}\x1f{b} {c}\x1fMerge\x1f\0\nbacklog/x.md\0src/y\0"
            f"\0{b}\x1f\x1fchore: release 1.0.0\x1fs1\x1es2\0"
            f"\0{c}\x1f\x1fsubject\x1fwith\x1fseparators\0\nweird\x1fname\0")
    got = parse_history(text)
    assert got == [
        Commit(a, (b, c), "Merge", (), ("backlog/x.md", "src/y")),
        Commit(b, (), "chore: release 1.0.0", ("s1", "s2"), ()),
        Commit(c, (), None, (), ("weird\x1fname",)),
    ]
