"""Text from tasks, output and commits as a report may show it: every character that acts
rather than shows written as an escape (`\\x1b`, `\\u202e`).

A Markdown report is read with `cat` and `less -R` as often as in a renderer: a task title or a
recipe's output holding a terminal escape (a colour, a window title, a screen clear, a cursor
move) would act on the reader's terminal, a carriage return would let later text hide earlier
text on its line, and a bidirectional override would reverse what follows it in the HTML page
too. Line feeds and tabs stay where a block of output keeps its lines.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidirectional embeddings, overrides, isolates and marks.
_ACTING = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_BLOCK = re.compile(f"[{_ACTING}]")
_IN_LINE = re.compile(f"[{_ACTING}\t\n]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def visible(text: str, *, block: bool = False) -> str:
    """`text` with every acting character escaped; in a `block`, line feeds and tabs kept."""
    return (_IN_BLOCK if block else _IN_LINE).sub(_escaped, text)
