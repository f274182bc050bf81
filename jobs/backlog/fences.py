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
    out = [text[:start]]
    fence: str | None = None  # the run of backticks or tildes that closes the open block
    in_comment = False
    for line in text[start:].split("\n"):
        if fence is not None:
            out.append(filler * len(line))
            stripped = line.strip(" \t")
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            continue
        if not in_comment:
            m = _OPEN.fullmatch(line)
            if m is not None:
                fence = m.group(1) or m.group(2)
                out.append(filler * len(line))
                continue
        opened, closed = line.rfind("<!--"), line.rfind("-->")
        if opened >= 0 or closed >= 0:
            in_comment = opened > closed  # the line's last word opens a comment or ends one
        out.append(line)
    return out[0] + "\n".join(out[1:])
