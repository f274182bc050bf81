"""Property tests: any sequence of edits on any task file shape reads back as intended, and leaves
every byte outside the edited lines alone.

Files vary in line endings (LF/CRLF), BOM, final newline, label sets and their quoting (plain,
single, double; block or flow; empty or missing list), whether `updated_date` exists, and the
body layout (empty, description only, marked notes, legacy notes before a custom section, plan +
final summary, comments). Edits are random sequences of remove_label/add_label/set_status/
append_notes/set_updated_date.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.backlog.document import join_lines, split_lines
from jobs.backlog.edit import (
    add_label,
    append_notes,
    normalize_note,
    remove_label,
    set_status,
    set_updated_date,
    yaml_scalar,
)
from jobs.backlog.scan import (
    parse_task,
)

LABEL_CHARS = "abcXYZ019-_:@#'\" .ü/&!*?%"
label_text = st.text(alphabet=LABEL_CHARS, min_size=1, max_size=10).filter(
    lambda s: s == s.strip() and "," not in s)
note_text = st.text(alphabet="abc XY1\n\t`*'\"#:-.ü", max_size=40).filter(
    lambda s: not any(line.lstrip().startswith(("## ", "<!--")) for line in s.split("\n")))
STATUSES = ["To Do", "In Progress", "Done", "Verified", "yes", "@owner", "a: b", "it's"]


def quoted(value: str, style: str, flow: bool) -> str:
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "double":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return yaml_scalar(value, flow=flow)


BODIES = {
    "empty": ["", ""],
    "description": ["", "## Description", "", "<!-- SECTION:DESCRIPTION:BEGIN -->", "Why.",
                    "<!-- SECTION:DESCRIPTION:END -->"],
    "notes": ["", "## Description", "", "<!-- SECTION:DESCRIPTION:BEGIN -->", "Why.",
              "<!-- SECTION:DESCRIPTION:END -->", "", "## Implementation Notes", "",
              "<!-- SECTION:NOTES:BEGIN -->", "verify-cmd: just verify-x",
              "<!-- SECTION:NOTES:END -->"],
    "legacy": ["", "## Implementation Notes", "", "verify-cmd: just verify-x", "",
               "## My Custom Section", "", "kept"],
    "plan": ["", "## Implementation Plan", "", "<!-- SECTION:PLAN:BEGIN -->", "1. a",
             "<!-- SECTION:PLAN:END -->", "", "## Final Summary", "",
             "<!-- SECTION:FINAL_SUMMARY:BEGIN -->", "done", "<!-- SECTION:FINAL_SUMMARY:END -->"],
    "comments": ["", "## Comments", "", "<!-- COMMENTS:BEGIN -->", "author: bot", "---", "hi",
                 "---", "<!-- COMMENTS:END -->"],
}
# A legacy notes section runs to the next heading the CLI knows: it swallows a custom one.
INITIAL_NOTES = {"notes": "verify-cmd: just verify-x",
                 "legacy": "verify-cmd: just verify-x\n\n## My Custom Section\n\nkept"}
KNOWN_TITLES = ("Description|Acceptance Criteria|Definition of Done|Implementation Plan|Comments|"
                "Final Summary|Notes")


@dataclass
class Shape:
    eol: str
    bom: bool
    final_newline: bool
    labels: list[str]
    label_style: str  # block, flow, empty, missing
    quoting: list[str]
    status: str
    has_updated: bool
    body: str
    data: bytes = field(default=b"")


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    labels = draw(st.lists(label_text, max_size=5, unique_by=str.lower))
    style = draw(st.sampled_from(["block", "flow"])) if labels else draw(
        st.sampled_from(["empty", "missing", "null"]))
    quoting = [draw(st.sampled_from(["cli", "single", "double"])) for _ in labels]
    shape = Shape(
        eol=draw(st.sampled_from(["\n", "\r\n"])),
        bom=draw(st.booleans()),
        final_newline=draw(st.booleans()),
        labels=labels,
        label_style=style,
        quoting=quoting,
        status=draw(st.sampled_from(STATUSES)),
        has_updated=draw(st.booleans()),
        body=draw(st.sampled_from(sorted(BODIES))),
    )
    fm = ["---", "id: TASK-1", "title: A task", f"status: {yaml_scalar(shape.status)}",
          "assignee: []", "created_date: '2026-11-01 08:00'"]
    if shape.has_updated:
        fm.append("updated_date: '2026-11-02 09:00'")
    items = [quoted(v, q, style == "flow") for v, q in zip(labels, quoting, strict=True)]
    if style == "block":
        fm += ["labels:", *[f"  - {i}" for i in items]]
    elif style == "flow":
        fm.append("labels: [" + ", ".join(items) + "]")
    elif style == "empty":
        fm.append("labels: []")
    elif style == "null":
        fm.append("labels:")
    fm += ["dependencies: []", "ordinal: 1000", "---"]
    text = shape.eol.join(fm + BODIES[shape.body])
    if shape.final_newline:
        text += shape.eol
    shape.final_newline = text.endswith(shape.eol)  # an empty body ends with one anyway
    shape.data = (("\ufeff" if shape.bom else "") + text).encode()
    return shape


def notes_of(data: bytes) -> str | None:
    text = data.decode().replace("\r\n", "\n")
    m = re.search(r"<!-- SECTION:NOTES:BEGIN -->\n(.*?)<!-- SECTION:NOTES:END -->", text, re.S)
    if m:
        return m.group(1).strip() or None
    m = re.search(rf"^## Implementation Notes\n(.*?)(?=\n+## (?:{KNOWN_TITLES})(?:\s|\Z)|\Z)",
                  text, re.S | re.M)
    return (m.group(1).strip() or None) if m else None


ops = st.lists(st.one_of(
    st.tuples(st.just("remove"), label_text),
    st.tuples(st.just("remove_existing"), st.integers(0, 4)),
    st.tuples(st.just("add"), label_text),
    st.tuples(st.just("status"), st.sampled_from(STATUSES)),
    st.tuples(st.just("notes"), note_text),
    st.tuples(st.just("date"), st.datetimes(min_value=datetime(2000, 1, 1),
                                            max_value=datetime(2099, 1, 1))),
), min_size=1, max_size=6)

EDITED_KEYS = ("labels", "status", "updated_date")


def fm_lines_except_edited(data: bytes) -> list[str]:
    """Frontmatter lines (with endings) of every key the edits must not touch."""
    text = data.decode()
    end = text.index("\n---", 4)
    keep = []
    current = ""
    for line in text[:end + 1].splitlines(keepends=True)[1:]:
        m = re.match(r"([A-Za-z_]+)\s*:", line)
        if m:
            current = m.group(1)
        if current not in EDITED_KEYS:
            keep.append(line)
    return keep


def body_lines(data: bytes) -> list[str]:
    text = data.decode()
    return text[text.index("\n---", 4) + 4:].splitlines(keepends=True)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=shapes(), edits=ops)
def test_edits_read_back_and_touch_nothing_else(shape: Shape,
                                                edits: list[tuple[str, object]]) -> None:
    path_args = ("/r/backlog/tasks/task-1 - A-task.md", "tasks")
    data = shape.data
    labels = list(shape.labels)
    status = shape.status
    notes = INITIAL_NOTES.get(shape.body)
    appended: list[str] = []
    for op, arg in edits:
        if op == "remove" or (op == "remove_existing" and labels):
            label = str(arg) if op == "remove" else labels[int(str(arg)) % len(labels)].upper()
            data = remove_label(data, label)
            assert remove_label(data, label) == data  # idempotent
            labels = [x for x in labels if x.lower() != label.lower()]
        elif op == "add":
            label = str(arg)
            data = add_label(data, label)
            assert add_label(data, label.upper()) == data or label.upper().lower() != label.lower()
            if not any(x.lower() == label.lower() for x in labels):
                labels.append(label)
        elif op == "status":
            status = str(arg)
            data = set_status(data, status)
        elif op == "notes":
            data = append_notes(data, str(arg))
            chunk = normalize_note(str(arg))
            if chunk:
                appended.append(chunk)
                notes = f"{notes}\n\n{chunk}" if notes else chunk
        elif op == "date" and isinstance(arg, datetime):
            data = set_updated_date(data, arg)
        task = parse_task(Path(path_args[0]), data, path_args[1])
        assert list(task.labels) == labels
        assert task.status == status
        assert notes_of(data) == notes

    # the file keeps its shape
    assert data.startswith(b"\xef\xbb\xbf") == shape.bom
    assert data.endswith(shape.eol.encode()) == shape.final_newline
    if shape.eol == "\r\n":
        assert data.count(b"\n") == data.count(b"\r\n")
    else:
        assert b"\r" not in data
    assert (b"updated_date" in data) == shape.has_updated
    # untouched frontmatter keys: the very same lines, in the same order
    assert fm_lines_except_edited(data) == fm_lines_except_edited(shape.data)
    # the body only gains lines (notes, their section and separating blank lines)
    old, new = body_lines(shape.data), body_lines(data)
    if old and not shape.final_newline and new != old:
        old[-1] += shape.eol  # a last line without newline may gain one when lines follow it
        if not new[-1].endswith(shape.eol):
            new[-1] += shape.eol
    allowed = {"", "## Implementation Notes", "<!-- SECTION:NOTES:BEGIN -->",
               "<!-- SECTION:NOTES:END -->"}
    added_text = {line for chunk in appended for line in chunk.split("\n")}
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        # blank lines may move relative to an inserted block; nothing else may disappear
        assert all(not line.strip() for line in old[i1:i2]), (op, old[i1:i2], new[j1:j2])
        for line in new[j1:j2]:
            body = line.rstrip("\r\n")
            assert body in allowed or body in added_text, (op, line)


@given(st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85",
                                 "\u2028", "é"]), max_size=30).map("".join))
@settings(max_examples=examples(600))
def test_only_newline_ends_a_line(text: str) -> None:
    # YAML and the CLI keep \v, \f, \x85 and \u2028 inside a line; "\r" alone is not an end either.
    lines = split_lines(text)
    assert join_lines(lines) == text
    assert all("\n" not in line.text for line in lines)
    assert all(line.eol in ("\n", "\r\n") for line in lines[:-1])
    # a "\r" right before a "\n" belongs to the line ending
    assert all(not line.text.endswith("\r") for line in lines if line.eol == "\n")
    assert len(lines) == text.count("\n") + (0 if text.endswith("\n") or not text else 1)
