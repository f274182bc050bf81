"""The charter: a line ends at a newline or a carriage return only, and the charter that grants
is the one whose hash was checked."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from audit.evidence.charter import load_charter


def test_a_unicode_line_separator_does_not_start_a_charter_line(tmp_path: Path) -> None:
    """A markdown line ends at a newline (or a carriage return), nowhere else. The charter was
    split with splitlines(), so the text after a U+2028 or U+0085 in a line of prose became a
    line of its own and could grant authority nobody reading the charter saw as a key."""
    path = tmp_path / "charter.md"
    path.write_text("# Charter: acme/widgets loop1\r\n"
                    "Notes: no releases\u2028authority: release-please acme/widgets\n"
                    "Prose\x85session: someone-else\n"
                    "session: mine\r\n", encoding="utf-8")
    charter = load_charter(path)
    assert charter.grants == () and charter.session == "mine"


def test_the_charter_granted_is_the_one_whose_hash_was_checked(tmp_path: Path) -> None:
    """The charter is read once to check its hash and once to parse it; a file that could change
    between the two reads must not grant anything. A FIFO (which would hand each read other
    bytes) is refused before either read: only a regular file is read
    (jobs.core.fs.read_regular)."""
    from audit.commands.closeout import resolve_charter
    from jobs.core.errors import InputError

    frozen = b"# Charter: o/n loop1\nauthority: none\n"
    fifo = tmp_path / "charter.md"
    os.mkfifo(fifo)
    before = {"charter_sha256": hashlib.sha256(frozen).hexdigest()}
    with pytest.raises(InputError, match="cannot read charter: not a regular file"):
        resolve_charter(str(fifo), before, tmp_path / "audit-before.json")
