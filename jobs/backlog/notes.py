"""Appending to a task's Implementation Notes, as `backlog task edit --append-notes` does."""

from __future__ import annotations

import re

from jobs.backlog.document import Doc, Line, check_edit, fm_dict, frontmatter_of, parse_doc
from jobs.backlog.task import TaskEditError

NOTES_BEGIN = "<!-- SECTION:NOTES:BEGIN -->"
NOTES_END = "<!-- SECTION:NOTES:END -->"
NOTES_HEADING = "## Implementation Notes"

# --------------------------------------------------------------------------- notes

_HEADING_RE = re.compile(r"^##[ \t]+(.*?)[ \t]*$")


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
    adds a second command to the task (which would make it refused from then on). Text without
    either is unchanged, so normal notes stay byte-identical to the CLI's.
    """
    if "<!--" in text:
        text = text.replace("<!--", "< !--")
    if "verify-cmd" in text:
        text = _CMD_LIKE.sub(r"\1> ", text)
    return text


def _heading(line: Line) -> str | None:
    m = _HEADING_RE.match(line.text)
    return m.group(1).lower() if m else None


def _next_heading(body: list[Line], after: int) -> int:
    for j in range(after + 1, len(body)):
        if _heading(body[j]) is not None:
            return j
    return len(body)


def _last_nonblank(body: list[Line], lo: int, hi: int) -> int:
    for j in range(hi - 1, lo - 1, -1):
        if body[j].text.strip():
            return j
    return lo


def _section_end(body: list[Line], title: str, end_marker: str) -> int | None:
    """Index of the last line of the section titled `title` (its END marker when marked)."""
    h = _section_start(body, title)
    if h is None:
        return None
    first = next((k for k in range(h + 1, len(body)) if body[k].text.strip()), None)
    if first is not None and body[first].text.strip().endswith(":BEGIN -->"):
        for j in range(first + 1, len(body)):
            if body[j].text.strip() == end_marker:
                return j
    return _last_nonblank(body, h, _next_heading(body, h))


def _section_start(body: list[Line], title: str) -> int | None:
    for h, line in enumerate(body):
        if _heading(line) == title:
            return h
    return None


def append_notes(data: bytes, text: str) -> bytes:
    """Append `text` to the Implementation Notes as ``backlog task edit --append-notes`` does.

    Inside the NOTES markers when present (one blank line after the existing notes); at the end
    of a legacy ``## Implementation Notes`` section without markers; else a new marked section in
    the CLI's position: after the Plan, else Definition of Done, else Acceptance Criteria, else
    before Comments, else before Final Summary, else at the end. The text is normalised as the
    CLI does (LF, trimmed, blank-line runs collapsed) and defanged (`defang_note`).
    """
    note = normalize_note(text)
    if not note:
        return data
    doc = parse_doc(data)
    before = fm_dict(doc)
    eol = doc.body_eol
    new = [Line(t, eol) for t in note.split("\n")]
    body = doc.body
    begin = next((i for i, ln in enumerate(body) if ln.text.strip() == NOTES_BEGIN), None)
    stray_end = any(ln.text.strip() == NOTES_END for ln in body)
    if begin is not None:
        end = next((i for i in range(begin + 1, len(body)) if body[i].text.strip() == NOTES_END),
                   None)
        if end is None:
            raise TaskEditError("notes BEGIN marker without END marker")
        eol = body[begin].eol or eol
        for ln in new:
            ln.eol = eol
        last = _last_nonblank(body, begin + 1, end)
        if last == begin + 1 and not body[last].text.strip():
            last = begin  # empty notes
        insert = new if last == begin else [Line("", eol), *new]
        body[last + 1:end] = insert
    elif stray_end or any(NOTES_BEGIN in ln.text or NOTES_END in ln.text for ln in body):
        raise TaskEditError("notes markers are not on lines of their own")
    else:
        h = _section_start(body, "implementation notes")
        if h is not None:
            last = _last_nonblank(body, h, _next_heading(body, h))
            _insert_after(body, last, [Line("", eol), *new], eol)
        else:
            block = [Line(NOTES_HEADING, eol), Line("", eol), Line(NOTES_BEGIN, eol), *new,
                     Line(NOTES_END, eol)]
            _insert_notes_section(doc, block, eol)
    out = doc.render()
    check_edit(before, frontmatter_of(out), {})
    return out


def _insert_after(body: list[Line], idx: int, lines: list[Line], eol: str) -> None:
    """Insert `lines` after body[idx]; a last line without newline keeps the file's missing one."""
    if not body[idx].eol:
        body[idx].eol = eol
        lines[-1].eol = ""
    body[idx + 1:idx + 1] = lines


def _insert_notes_section(doc: Doc, block: list[Line], eol: str) -> None:
    body = doc.body
    for title, marker in (("implementation plan", "<!-- SECTION:PLAN:END -->"),
                          ("definition of done", "<!-- DOD:END -->"),
                          ("acceptance criteria", "<!-- AC:END -->")):
        end = _section_end(body, title, marker)
        if end is not None:
            follow = end + 1 < len(body) and body[end + 1].text.strip() != ""
            _insert_after(body, end, [Line("", eol), *block, *([Line("", eol)] if follow
                                                                   else [])], eol)
            return
    for title in ("comments", "final summary"):
        h = _section_start(body, title)
        if h is not None:
            prev_blank = h == 0 or not body[h - 1].text.strip()
            body[h:h] = [*([] if prev_blank else [Line("", eol)]), *block, Line("", eol)]
            return
    if not any(ln.text.strip() for ln in body):
        # an empty body: the CLI writes one blank line after the frontmatter, then the section
        had_newline = bool(body[-1].eol) if body else bool(doc.close_fence.eol)
        if not doc.close_fence.eol:
            doc.close_fence.eol = doc.fm_eol
        doc.body = [Line("", eol), *block]
        if not had_newline:
            doc.body[-1].eol = ""
        return
    last = _last_nonblank(body, 0, len(body))
    _insert_after(body, last, [Line("", eol), *block], eol)
