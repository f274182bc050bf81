"""Fenced code blocks are text: a heading, a section marker, an HTML comment or a `verify-cmd:` line
shown inside one is not structure (SPEC, "What a task is" and "Verdicts").

`mask_fences` hides the lines of every fenced code block behind a filler of the same length, so a
reader can look for structure in the masked text with the offsets of the real one.
"""

from __future__ import annotations

import re

# CommonMark's fences: three or more backticks (no backtick in the info string after them) or
# tildes. Any indentation is taken, so that a fence inside a list item is one too.
_OPEN = re.compile(r"[ \t]*(?:(`{3,})[^`]*|(~{3,}).*)")
FILLER = "\x01"


def has_fence(text: str, start: int = 0) -> bool:
    return text.find("```", start) >= 0 or text.find("~~~", start) >= 0


def mask_fences(text: str, start: int = 0, filler: str = FILLER) -> str:
    """`text` with every character of a fenced code block's lines from `start` on (the fence
    lines too) replaced by `filler`; newlines and offsets stay. A fence that is never closed
    runs to the end, as in Markdown; a fence line inside an HTML comment opens nothing (the
    comment runs to its `-->`)."""
    if not has_fence(text, start):
        return text
    lines = text[start:].split("\n")
    for lo, hi, _closed in _blocks(lines):
        for i in range(lo, hi):
            lines[i] = filler * len(lines[i])
    return text[:start] + "\n".join(lines)


def unclosed_fence(text: str) -> int | None:
    """The index of the line that opens a fenced code block `text` never closes, if any."""
    if not has_fence(text):
        return None
    blocks = _blocks(text.split("\n"))
    return blocks[-1][0] if blocks and not blocks[-1][2] else None


def _closer(line: str) -> str | None:
    m = _OPEN.fullmatch(line)
    return (m.group(1) or m.group(2)) if m else None


def _is_close(line: str, fence: str | None) -> bool:
    stripped = line.strip(" \t")
    return fence is not None and stripped.startswith(fence) and stripped.strip(fence[0]) == ""


def _blocks(lines: list[str]) -> list[tuple[int, int, bool]]:
    """The fenced code blocks as line ranges [open, past close) and whether they close; one never
    closed runs to the end."""
    blocks: list[tuple[int, int, bool]] = []
    fence: str | None = None  # the run of backticks or tildes that closes the open block
    opened = 0
    in_comment = False
    for i, line in enumerate(lines):
        if fence is not None:
            if _is_close(line, fence):
                fence = None
                blocks.append((opened, i + 1, True))
            continue
        if not in_comment:
            fence = _closer(line)
            if fence is not None:
                opened = i
                continue
        begun, ended = line.rfind("<!--"), line.rfind("-->")
        if begun >= 0 or ended >= 0:
            in_comment = begun > ended  # the line's last word opens a comment or ends one
    if fence is not None:
        blocks.append((opened, len(lines), False))
    return blocks
