"""Line-level, lossless edits of Backlog.md task files (bytes in, bytes out).

The Backlog.md CLI rewrites the whole frontmatter on every save (fixed key order, unknown keys
dropped, BOM stripped, CRLF made LF). loop-verify must change only what its verdict needs, so these
functions never re-serialise YAML: they find the lines of one key (or one body section) and replace
just those lines. Everything else — other keys and their order and quoting, comments, the body,
CRLF or LF, a BOM, a missing final newline — comes back byte for byte.

Choices made where the CLI gives no lead:

* New lines take the line ending of their neighbours (the frontmatter's for frontmatter lines, the
  body's for body lines), so a CRLF file stays CRLF.
* Label and status values are written the way the CLI's YAML writer (js-yaml 3 through
  gray-matter) writes them: plain when that reads back as the same text, else single-quoted
  (``'verify:2026-11-01'``, ``'yes'``, ``'@x'``), double-quoted only for unprintable characters.
  Together with block style, two-space ``- `` items and ``labels: []`` for an empty list, an edit
  of a CLI-written file is byte-identical to ``backlog task edit``.
* Block-style label lists are edited in place: removed items lose their line, added items get a
  new line after the last item with the same indent and marker as the existing items; the other
  items keep their own quoting.
* Flow-style label lists (``labels: [a, "b"]``) stay flow style: the item is removed from, or
  appended to, the bracket with the list's own separator, other items keep their exact text. That
  is the smallest change to the line a person wrote; the CLI would turn the list into block style
  on its next save anyway. Removing the last item gives ``labels: []`` in both styles, as the CLI.
* A list too unusual to edit line by line (multi-line items, a flow list over several lines, a
  scalar ``labels:``) raises `TaskEditError` rather than risk a wrong edit.
* Every edit is checked before it is returned: the result is parsed again and must read as
  exactly the intended change (same other keys, intended labels/status/notes). If not, the edit
  raises `TaskEditError`; nothing half-right is ever written.
"""


from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jobs.backlog.document import (
    KEY_PATTERN,
    Doc,
    Line,
    check_edit,
    fm_dict,
    frontmatter_of,
    insert_position,
    key_prefix,
    key_spans,
    parse_doc,
)
from jobs.backlog.frontmatter import FrontmatterYAMLError, is_null, load_yaml
from jobs.backlog.notes import append_notes, defang_note, normalize_note
from jobs.backlog.task import TaskEditError
from jobs.backlog.yaml_quote import yaml_scalar

__all__ = ["CLI_DATE_FORMAT", "TaskEditError", "add_label", "append_notes", "defang_note",
           "format_like", "normalize_note", "remove_label", "set_status", "set_updated_date",
           "yaml_scalar"]

# --------------------------------------------------------------------------- labels


@dataclass
class _LabelBlock:
    """Where and how the labels list is written."""

    start: int  # the `labels:` line
    end: int  # one past the last line of the list
    style: str  # "block", "flow", "empty" (labels: [] / labels: / null)
    items: list[tuple[int, str]]  # block: (line index, value); flow: (-1, value)
    flow_raw: list[str]  # flow: each item's exact text
    flow_sep: str
    flow_open: str  # text up to and including "[" and inner leading space
    flow_close: str  # inner trailing space, "]" and anything after


_FLOW_LINE_RE = re.compile(
    rf"^({KEY_PATTERN}[ \t]*\[[ \t]*)(?P<inner>.*?)(?P<tail>[ \t]*\][ \t]*(?:#.*)?)$")
_BLOCK_ITEM_RE = re.compile(r"^([ \t]*)-([ \t]+)(\S.*)?$")


def _split_flow(inner: str) -> tuple[list[str], str] | None:
    """Split the inside of a one-line flow sequence into raw item texts and the separator used."""
    if not inner.strip():
        return [], ", "
    items: list[str] = []
    seps: list[str] = []
    buf: list[str] = []
    i = 0
    n = len(inner)
    while i < n:
        c = inner[i]
        if c in "'\"" and not "".join(buf).strip():
            q = c
            j = i + 1
            while j < n:
                if inner[j] == q:
                    if q == "'" and j + 1 < n and inner[j + 1] == "'":
                        j += 2
                        continue
                    break
                if q == '"' and inner[j] == "\\":
                    j += 1
                j += 1
            if j >= n:
                return None
            buf.append(inner[i:j + 1])
            i = j + 1
            continue
        if c in "[]{}":
            return None
        if c == ",":
            raw = "".join(buf)
            items.append(raw.strip())
            k = i + 1
            while k < n and inner[k] in " \t":
                k += 1
            seps.append("," + inner[i + 1:k])
            buf = []
            i = k
            continue
        buf.append(c)
        i += 1
    last = "".join(buf).strip()
    if last:
        items.append(last)
    if any(not it for it in items):
        return None
    return items, (seps[0] if seps else ", ")


def _scalar_value(raw: str) -> str | None:
    """The text value of one YAML scalar as written, or None if it is not a plain text scalar."""
    try:
        v = load_yaml("- " + raw)
    except FrontmatterYAMLError:
        return None
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
        return v[0]
    return None


def _find_labels(doc: Doc) -> _LabelBlock | None:
    spans = key_spans(doc.fm)
    if "labels" not in spans:
        return None
    start, end = spans["labels"]
    head = doc.fm[start].text
    prefix = key_prefix(head, "labels")
    value = head[len(prefix):].strip()
    if value.startswith("#"):
        value = ""
    if value.startswith("["):
        m = _FLOW_LINE_RE.match(head)
        if m is None or end - start != 1:
            raise TaskEditError("labels: a flow list over several lines cannot be edited safely")
        split = _split_flow(m.group("inner"))
        if split is None:
            raise TaskEditError("labels: this flow list cannot be edited safely")
        raw, sep = split
        values: list[tuple[int, str]] = []
        for r in raw:
            v = _scalar_value(r)
            if v is None:
                raise TaskEditError(f"labels: item {r!r} is not a plain text value")
            values.append((-1, v))
        style = "flow" if raw else "empty"
        return _LabelBlock(start, end, style, values, raw, sep, m.group(1), m.group("tail"))
    if value and not is_null(value):
        raise TaskEditError("labels is not a list")
    items: list[tuple[int, str]] = []
    indent: str | None = None
    for i in range(start + 1, end):
        t = doc.fm[i].text
        if not t.strip() or t.lstrip().startswith("#"):
            continue
        m = _BLOCK_ITEM_RE.match(t)
        if m is None or m.group(3) is None or (indent is not None and m.group(1) != indent):
            raise TaskEditError(f"labels: line {i + 2} cannot be edited safely")
        indent = m.group(1)
        v = _scalar_value(m.group(3))
        if v is None:
            raise TaskEditError(f"labels: line {i + 2} is not a one-line text item")
        items.append((i, v))
    return _LabelBlock(start, end, "block" if items else "empty", items, [], "", "", "")


def _labels_of(fm: dict[str, Any]) -> list[str]:
    v = fm.get("labels")
    if is_null(v):
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TaskEditError("labels is not a list of text values")
    return list(v)




def remove_label(data: bytes, label: str) -> bytes:
    """Remove every label equal to `label` (case-insensitive, as the CLI). No-op when absent."""
    doc = parse_doc(data)
    before = fm_dict(doc)
    labels = _labels_of(before)
    want = label.lower()
    if not any(lab.lower() == want for lab in labels):
        return data
    block = _find_labels(doc)
    if block is None:  # pragma: no cover - fm_dict checked that the lines name every key
        raise TaskEditError("labels: the key's line was not found")
    eol = doc.fm[block.start].eol
    keep = [(i, v) for i, v in block.items if v.lower() != want]
    if not keep:
        prefix = key_prefix(doc.fm[block.start].text, "labels")
        doc.fm[block.start:block.end] = [Line(f"{prefix} []", eol)]
    elif block.style == "flow":
        raw = [r for r, (_, v) in zip(block.flow_raw, block.items, strict=True)
               if v.lower() != want]
        doc.fm[block.start] = Line(block.flow_open + block.flow_sep.join(raw) + block.flow_close,
                                    eol)
    else:
        drop = {i for i, v in block.items if v.lower() == want}
        doc.fm = [line for i, line in enumerate(doc.fm) if i not in drop]
    out = doc.render()
    check_edit(before, frontmatter_of(out),
           {"labels": [v for v in labels if v.lower() != want]})
    return out


def add_label(data: bytes, label: str) -> bytes:
    """Append `label` to the labels list unless present (case-insensitive, as the CLI)."""
    if not label or "," in label or label != label.strip():
        raise TaskEditError(f"label {label!r} is not one the CLI could store")
    doc = parse_doc(data)
    before = fm_dict(doc)
    labels = _labels_of(before)
    if any(lab.lower() == label.lower() for lab in labels):
        return data
    eol = doc.fm_eol
    block = _find_labels(doc)
    if block is None:
        spans = key_spans(doc.fm)
        at = insert_position(spans, len(doc.fm), "labels")
        doc.fm[at:at] = [Line("labels:", eol), Line("  - " + yaml_scalar(label), eol)]
    elif block.style == "flow":
        raw = [*block.flow_raw, yaml_scalar(label, flow=True)]
        doc.fm[block.start] = Line(block.flow_open + block.flow_sep.join(raw) + block.flow_close,
                                    doc.fm[block.start].eol)
    elif block.style == "empty":
        line_eol = doc.fm[block.start].eol
        prefix = key_prefix(doc.fm[block.start].text, "labels")
        doc.fm[block.start:block.end] = [Line(prefix, line_eol),
                                         Line("  - " + yaml_scalar(label), line_eol)]
    else:
        last = block.items[-1][0]
        m = _BLOCK_ITEM_RE.match(doc.fm[last].text)
        if m is None:  # pragma: no cover - _find_labels matched this line
            raise TaskEditError(f"labels: line {last + 2} cannot be edited safely")
        doc.fm.insert(last + 1, Line(f"{m.group(1)}-{m.group(2)}{yaml_scalar(label)}",
                                      doc.fm[last].eol or eol))
    out = doc.render()
    check_edit(before, frontmatter_of(out), {"labels": [*labels, label]})
    return out




# --------------------------------------------------------------------------- status, dates


def set_status(data: bytes, status: str) -> bytes:
    """Set `status:` to `status`, written as the CLI writes it."""
    if not status.strip() or "\n" in status or "\r" in status:
        raise TaskEditError(f"status {status!r} is not one line of text")
    doc = parse_doc(data)
    before = fm_dict(doc)
    if before.get("status") == status:
        return data
    spans = key_spans(doc.fm)
    new = Line("status: " + yaml_scalar(status), doc.fm_eol)
    if "status" in spans:
        start, end = spans["status"]
        new.text = key_prefix(doc.fm[start].text, "status") + " " + yaml_scalar(status)
        new.eol = doc.fm[end - 1].eol or ""
        doc.fm[start:end] = [new]
    else:
        at = insert_position(spans, len(doc.fm), "status")
        doc.fm.insert(at, new)
    out = doc.render()
    check_edit(before, frontmatter_of(out), {"status": status})
    return out


_DATE_SHAPES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^\d{4}-\d{2}-\d{2}$"), "%Y-%m-%d"),
    (re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$"), "%Y-%m-%d %H:%M"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$"), "%Y-%m-%dT%H:%M"),
    (re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$"), "%Y-%m-%dT%H:%M:%S"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$"), "%Y-%m-%dT%H:%MZ"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"), "%Y-%m-%dT%H:%M:%SZ"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"), "%Y-%m-%dT%H:%M:%S.{ms}Z"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$"), "%Y-%m-%dT%H:%M:%S+00:00"),
    (re.compile(r"^\d{2}-\d{2}-\d{2}$"), "%d-%m-%y"),
    (re.compile(r"^\d{2}/\d{2}/\d{2}$"), "%d/%m/%y"),
    (re.compile(r"^\d{2}\.\d{2}\.\d{2}$"), "%d.%m.%y"),
]
CLI_DATE_FORMAT = "%Y-%m-%d %H:%M"


def format_like(existing: str, when: datetime) -> str:
    """`when` (UTC) in the shape of `existing`; the CLI's `YYYY-MM-DD HH:MM` if unrecognised."""
    utc = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    for pattern, fmt in _DATE_SHAPES:
        if pattern.match(existing):
            return utc.strftime(fmt.replace("{ms}", f"{utc.microsecond // 1000:03d}"))
    return utc.strftime(CLI_DATE_FORMAT)


_DATE_LINE_RE = re.compile(rf"^({KEY_PATTERN}[ \t]*)(?P<value>.*?)(?P<tail>[ \t]*(?:#.*)?)$")


def set_updated_date(data: bytes, when: datetime, *, insert: bool = False) -> bytes:
    """Set `updated_date` to `when` (a naive value is taken as UTC) in the value's own format.

    Only a file that has the key is changed, unless `insert` is true, in which case the line is
    added after `created_date` as the CLI adds it (``updated_date: 'YYYY-MM-DD HH:MM'``).
    """
    doc = parse_doc(data)
    before = fm_dict(doc)
    spans = key_spans(doc.fm)
    if "updated_date" not in spans:
        if not insert:
            return data
        utc = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        at = insert_position(spans, len(doc.fm), "updated_date")
        new_value = utc.strftime(CLI_DATE_FORMAT)
        doc.fm.insert(at, Line(f"updated_date: '{new_value}'", doc.fm_eol))
        out = doc.render()
        check_edit(before, frontmatter_of(out), {"updated_date": new_value})
        return out
    start, end = spans["updated_date"]
    m = _DATE_LINE_RE.match(doc.fm[start].text)
    if m is None or end - start != 1:
        raise TaskEditError("updated_date is not a one-line value")
    raw = m.group("value")
    quote = raw[0] if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) >= 2 else ""
    inner = raw[1:-1] if quote else raw
    if inner.startswith("#"):  # `updated_date: # comment` has no value
        inner, m_tail = "", raw + m.group("tail")
    else:
        m_tail = m.group("tail")
    value = format_like(inner, when)
    if not quote and not any(p.match(inner) for p, _ in _DATE_SHAPES):
        quote = "'"
    # A bare `updated_date:` has no space after its colon: the value needs one.
    head = m.group(1) if m.group(1)[-1:] in (" ", "\t") else m.group(1) + " "
    doc.fm[start] = Line(head + quote + value + quote + m_tail, doc.fm[start].eol)
    out = doc.render()
    check_edit(before, frontmatter_of(out), {"updated_date": value})
    return out


