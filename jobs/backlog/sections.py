"""Where `backlog task edit --append-notes` finds a task's Implementation Notes, or would make them.

The CLI finds its sections with patterns on the whole body (Backlog.md's structured-sections
reader): the notes are a `## Implementation Notes` heading followed by the NOTES markers, outside
the Description, Plan and Final Summary (whose own marker pairs, or headings, hide what they
show); else a `## Implementation Notes` heading without markers, running to the next heading the
CLI knows. Markers under another heading (`## Notes`) or under none are not notes to it: it makes
a new section, after the Plan, else the Definition of Done, else the Acceptance Criteria, else
before the Comments, else before the Final Summary, else at the end.

The same patterns run here on the body with every fenced code block masked (`fences`), so a
heading or marker shown in a code block is text (SPEC) — where the CLI would take it for
structure, this is the one place loop-verify puts the summary elsewhere (docs/verify.md).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from jobs.backlog.fences import mask_fences


class _Line(Protocol):
    text: str


_I = re.IGNORECASE
# The titles that end a section without markers (Backlog.md's known section titles).
_KNOWN = ("Description", "Acceptance Criteria", "Definition of Done", "Implementation Plan",
          "Implementation Notes", "Comments", "Final Summary", "Acceptance Criteria (Optional)",
          "Implementation Plan (Optional)", "Implementation Notes (Optional)", "Notes",
          "Notes & Comments (Optional)")
# The structured sections: their title and marker id, in the CLI's order.
_STRUCTURED = (("Description", "DESCRIPTION"), ("Implementation Plan", "PLAN"),
               ("Implementation Notes", "NOTES"), ("Final Summary", "FINAL_SUMMARY"))
_TOKEN = re.compile(r"<!-- (SECTION:[A-Z][A-Z0-9_]*|COMMENTS|COMMENT|AC|DOD):(BEGIN|END) -->")
_TOP_HEADING = re.compile(r"^##[\t ]+(.+?)[\t ]*$", re.MULTILINE)


def _lookahead(title: str) -> str:
    others = "|".join(re.escape(t) for t in _KNOWN if t.lower() != title.lower())
    return rf"(?=\n+## (?:{others})(?:\s|\Z)|\n*\Z)"


def _sentinel(title: str, marker: str, anchored: bool = False) -> re.Pattern[str]:
    lead = r"(\n|\A)" if anchored else ""
    return re.compile(rf"{lead}## {re.escape(title)}\s*\n<!-- SECTION:{marker}:BEGIN -->\s*\n"
                      rf"([\s\S]*?)<!-- SECTION:{marker}:END -->", _I)


def _legacy(title: str) -> re.Pattern[str]:
    return re.compile(rf"(\n|\A)## {re.escape(title)}\s*\n([\s\S]*?){_lookahead(title)}", _I)


Range = tuple[int, int]


def _within(at: int, ranges: Sequence[Range]) -> bool:
    return any(lo <= at < hi for lo, hi in ranges)


def _overlaps(lo: int, hi: int, ranges: Sequence[Range]) -> bool:
    return any(lo < b and a < hi for a, b in ranges)


def _first_outside(pattern: re.Pattern[str], text: str,
                   ranges: Sequence[Range]) -> re.Match[str] | None:
    return next((m for m in pattern.finditer(text) if not _within(m.start(), ranges)), None)


def _structured_ranges(text: str, skip: str) -> list[Range]:
    """Where the Description, Plan, Notes and Final Summary are (but `skip`'s): what they show
    is theirs, not another section's."""
    ranges: list[tuple[str, int, int]] = []
    for title, marker in _STRUCTURED:
        for m in _sentinel(title, marker).finditer(text):
            ranges.append((title, m.start(), m.end()))
        for m in _legacy(title).finditer(text):
            if not _overlaps(m.start(), m.end(), [(a, b) for _, a, b in ranges]):
                ranges.append((title, m.start(), m.end()))
    return [(a, b) for title, a, b in ranges if title != skip]


def _pairs(text: str, family: str | None = None, exclude: str | None = None) -> list[Range]:
    """The spans of balanced marker pairs (per family), innermost pairing as the CLI does."""
    by_family: dict[str, list[tuple[str, int, int]]] = {}
    for m in _TOKEN.finditer(text):
        if (family is None or m.group(1) == family) and m.group(1) != exclude:
            by_family.setdefault(m.group(1), []).append((m.group(2), m.start(), m.end()))
    spans: list[Range] = []
    for tokens in by_family.values():
        pending: list[int] = []
        for kind, start, end in tokens:
            if kind == "BEGIN":
                pending.append(start)
            elif pending:
                spans.append((pending.pop(), end))
    return sorted(spans)


def _checklist_end(text: str, title: str, family: str) -> int | None:
    """Where the Acceptance Criteria or Definition of Done section ends, as the CLI finds it:
    its marker pair under its heading, else its heading up to the next `## ` heading."""
    foreign = _pairs(text, exclude=family)
    header = re.compile(rf"(?:\A|\n)(## {re.escape(title)})[\t ]*\n(?:[\t ]*\n)*[\t ]*\Z", _I)
    begin_end = [(a, b) for a, b in _pairs(text, family) if not _within(a, foreign)]
    for start, end in begin_end:
        if header.search(text[:start]) and not _within(start, foreign):
            return end
    if begin_end:
        return None
    headings = [m for m in _TOP_HEADING.finditer(text) if not _within(m.start(), foreign)]
    for i, m in enumerate(headings):
        if m.group(1).strip().lower() == title.lower():
            return headings[i + 1].start() if i + 1 < len(headings) else len(text)
    return None


def _section_end(text: str, title: str, marker: str) -> int | None:
    pairs = _pairs(text)
    m = _first_outside(_sentinel(title, marker), text, pairs) or _first_outside(
        _legacy(title), text, pairs)
    return m.end() if m else None


def _section_start(text: str, title: str, sentinel: re.Pattern[str],
                   legacy: re.Pattern[str]) -> int | None:
    pairs = _pairs(text)
    m = _first_outside(sentinel, text, pairs) or _first_outside(legacy, text, pairs)
    return m.start() if m else None


@dataclass(frozen=True)
class NotesPlace:
    """Where the summary goes, in body line numbers.

    `marked`: the notes between the BEGIN line `begin` and the END line `end`. `legacy`: the
    notes under the heading `begin`, whose last line of text is `end`. `new`: no notes yet; a
    section goes after line `end` (`after` true) or before line `end`."""

    kind: Literal["marked", "legacy", "new"]
    begin: int
    end: int
    after: bool = True


def find_notes(body: Sequence[_Line]) -> NotesPlace:
    """Where the CLI's --append-notes would put a note in this body (fences masked)."""
    starts: list[int] = []
    offset = 0
    for line in body:
        starts.append(offset)
        offset += len(line.text) + 1
    text = mask_fences("\n".join(line.text for line in body))

    def line_at(at: int) -> int:
        return bisect_right(starts, at) - 1

    others = _structured_ranges(text, "Implementation Notes")
    m = _first_outside(_sentinel("Implementation Notes", "NOTES"), text, others)
    if m is not None:
        begin = text.lower().index("<!-- section:notes:begin -->", m.start())
        return NotesPlace("marked", line_at(begin), line_at(m.end(1)))
    legacy = _first_outside(_legacy("Implementation Notes"), text, others)
    if legacy is not None and legacy.group(2).strip():
        return NotesPlace("legacy", line_at(legacy.start(2)) - 1,
                          line_at(legacy.start(2) + len(legacy.group(2).rstrip()) - 1))
    end = (_section_end(text, "Implementation Plan", "PLAN")
           or _checklist_end(text, "Definition of Done", "DOD")
           or _checklist_end(text, "Acceptance Criteria", "AC"))
    if end is not None:
        return NotesPlace("new", 0, line_at(max(0, len(text[:end].rstrip()) - 1)), True)
    comments = _section_start(
        text, "Comments",
        re.compile(r"(\n|\A)## Comments\s*\n<!-- COMMENTS:BEGIN -->\s*\n([\s\S]*?)"
                   r"<!-- COMMENTS:END -->", _I),
        re.compile(r"(\n|\A)## Comments\s*\n(?!<!-- COMMENTS:BEGIN -->)([\s\S]*?)"
                   r"(?=\n+##\s+|\n*\Z)", _I))
    if comments is None:
        comments = _section_start(text, "Final Summary",
                                  _sentinel("Final Summary", "FINAL_SUMMARY", anchored=True),
                                  _legacy("Final Summary"))
    if comments is not None:
        at = comments + (1 if text.startswith("\n", comments) else 0)
        return NotesPlace("new", 0, line_at(at), False)
    return NotesPlace("new", 0, len(body), False)
