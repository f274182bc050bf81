"""Appending to a task's Implementation Notes, as `backlog task edit --append-notes` does."""

from __future__ import annotations

import re

from jobs.backlog.document import Doc, Line, check_edit, fm_dict, frontmatter_of, parse_doc
from jobs.backlog.fences import unclosed_fence
from jobs.backlog.sections import NotesPlace, find_notes
from jobs.backlog.task import TaskEditError

NOTES_BEGIN = "<!-- SECTION:NOTES:BEGIN -->"
NOTES_END = "<!-- SECTION:NOTES:END -->"
NOTES_HEADING = "## Implementation Notes"

# --------------------------------------------------------------------------- notes



def normalize_note(text: str) -> str:
    """The note text as the CLI stores an appended chunk: LF, trimmed, no runs of blank lines;
    then defanged (see `defang_note`)."""
    text = text.replace("\r\n", "\n").strip()
    return defang_note(re.sub(r"\n{3,}", "\n\n", text))


_CMD_LIKE = re.compile(r"^( *(?:- )?)(?=verify-cmd)", re.MULTILINE)


def defang_note(text: str) -> str:
    """Keep appended text (a recipe's output, say) from forging task structure.

    `<!--` becomes `< !--`, so no line can act as a section marker for the CLI or for us, and a
    line that would read as a `verify-cmd` line gets `> ` before it, so a failure summary never
    adds a second command to the task (which would make it refused from then on), and a code
    block it leaves open is not one. Text without any of these is unchanged, so normal notes stay
    byte-identical to the CLI's.
    """
    if "<!--" in text:
        text = text.replace("<!--", "< !--")
    if "verify-cmd" in text:
        text = _CMD_LIKE.sub(r"\1> ", text)
    return _close_no_fence(text)


def _close_no_fence(text: str) -> str:
    """A code block the text opens and never closes would run to the end of the file, over the
    END marker and everything after it; a space after the first backtick or tilde of its fence
    line makes that line text."""
    while (at := unclosed_fence(text)) is not None:
        lines = text.split("\n")
        line = lines[at]
        cut = len(line) - len(line.lstrip(" \t")) + 1
        lines[at] = f"{line[:cut]} {line[cut:]}"
        text = "\n".join(lines)
    return text


def _last_nonblank(body: list[Line], lo: int, hi: int) -> int:
    for j in range(hi - 1, lo - 1, -1):
        if body[j].text.strip():
            return j
    return lo


def append_notes(data: bytes, text: str) -> bytes:
    """Append `text` to the Implementation Notes where ``backlog task edit --append-notes`` puts
    it (`sections.find_notes`): inside the NOTES markers under the `## Implementation Notes`
    heading (one blank line after the existing notes); at the end of a legacy section without
    markers; else a new marked section where the CLI makes one. A fenced code block is text.
    The text is normalised as the CLI does (LF, trimmed, blank-line runs collapsed) and defanged
    (`defang_note`)."""
    note = normalize_note(text)
    if not note:
        return data
    doc = parse_doc(data)
    before = fm_dict(doc)
    eol = doc.body_eol
    new = [Line(t, eol) for t in note.split("\n")]
    body = doc.body
    place = find_notes(body)
    if place.kind == "marked":
        begin, end = place.begin, place.end
        if body[begin].text.strip() != NOTES_BEGIN or body[end].text.strip() != NOTES_END:
            raise TaskEditError("the notes markers are not on lines of their own")
        eol = body[begin].eol or eol
        for ln in new:
            ln.eol = eol
        last = next((j for j in range(end - 1, begin, -1) if body[j].text.strip()), begin)
        insert = new if last == begin else [Line("", eol), *new]
        body[last + 1:end] = insert
    elif place.kind == "legacy":
        _insert_after(body, place.end, [Line("", eol), *new], eol)
    else:
        block = [Line(NOTES_HEADING, eol), Line("", eol), Line(NOTES_BEGIN, eol), *new,
                 Line(NOTES_END, eol)]
        _insert_notes_section(doc, block, eol, place)
    out = doc.render()
    check_edit(before, frontmatter_of(out), {})
    return out


def _insert_after(body: list[Line], idx: int, lines: list[Line], eol: str) -> None:
    """Insert `lines` after body[idx]; a last line without newline keeps the file's missing one."""
    if not body[idx].eol:
        body[idx].eol = eol
        lines[-1].eol = ""
    body[idx + 1:idx + 1] = lines


def _insert_notes_section(doc: Doc, block: list[Line], eol: str, place: NotesPlace) -> None:
    body = doc.body
    if not any(ln.text.strip() for ln in body):
        # an empty body: the CLI writes one blank line after the frontmatter, then the section
        had_newline = bool(body[-1].eol) if body else bool(doc.close_fence.eol)
        if not doc.close_fence.eol:
            doc.close_fence.eol = doc.fm_eol
        doc.body = [Line("", eol), *block]
        if not had_newline:
            doc.body[-1].eol = ""
        return
    if place.after:
        end = place.end
        follow = end + 1 < len(body) and body[end + 1].text.strip() != ""
        _insert_after(body, end, [Line("", eol), *block, *([Line("", eol)] if follow else [])],
                      eol)
        return
    h = place.end
    if h < len(body):
        prev_blank = h == 0 or not body[h - 1].text.strip()
        body[h:h] = [*([] if prev_blank else [Line("", eol)]), *block, Line("", eol)]
        return
    last = _last_nonblank(body, 0, len(body))
    _insert_after(body, last, [Line("", eol), *block], eol)
