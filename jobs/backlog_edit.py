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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jobs.backlog import (
    FRONTMATTER_RE,
    FrontmatterYAMLError,
    TaskEditError,
    _fast_frontmatter,
    is_null,
    load_frontmatter,
    load_yaml,
    yaml_has_aliases,
)

NOTES_BEGIN = "<!-- SECTION:NOTES:BEGIN -->"
NOTES_END = "<!-- SECTION:NOTES:END -->"
NOTES_HEADING = "## Implementation Notes"


# --------------------------------------------------------------------------- file anatomy


@dataclass
class _Line:
    text: str  # without its line ending
    eol: str  # "\n", "\r\n" or "" (last line without newline)


def _split_lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        if nl < 0:
            lines.append(_Line(text[pos:], ""))
            break
        if nl > pos and text[nl - 1] == "\r":
            lines.append(_Line(text[pos:nl - 1], "\r\n"))
        else:
            lines.append(_Line(text[pos:nl], "\n"))
        pos = nl + 1
    return lines


def _join(lines: Sequence[_Line]) -> str:
    return "".join(line.text + line.eol for line in lines)


@dataclass
class _Doc:
    bom: str
    open_fence: _Line
    fm: list[_Line]
    close_fence: _Line
    body: list[_Line]

    def render(self) -> bytes:
        text = (self.bom + self.open_fence.text + self.open_fence.eol + _join(self.fm)
                + self.close_fence.text + self.close_fence.eol + _join(self.body))
        return text.encode("utf-8")

    @property
    def fm_eol(self) -> str:
        return self.open_fence.eol or "\n"

    @property
    def body_eol(self) -> str:
        for line in self.body:
            if line.eol:
                return line.eol
        return self.close_fence.eol or self.fm_eol


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskEditError(f"line {line}: not valid UTF-8") from None


def _parse_doc(data: bytes) -> _Doc:
    text = _decode(data)
    m = FRONTMATTER_RE.match(text)
    if m is None:
        raise TaskEditError("no frontmatter (the file must start with a '---' line)")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    open_end = text.index("\n") + 1
    open_fence = _split_lines(text[len(bom):open_end])[0]
    fm_end = m.end(1)
    # the line ending that ends the last frontmatter line belongs to the frontmatter
    sep = "\r\n" if text.startswith("\r\n", fm_end) else "\n"
    fm = _split_lines(text[open_end:fm_end] + sep)
    close_start = fm_end + len(sep)
    close_fence = _Line("---", m.group(2))
    body = _split_lines(text[close_start + 3 + len(m.group(2)):])
    return _Doc(bom, open_fence, fm, close_fence, body)


def _fm_dict(doc: _Doc) -> dict[str, Any]:
    text = _join(doc.fm)
    fast = _fast_frontmatter(text)
    if fast is not None:
        return fast
    if yaml_has_aliases(text):
        # the CLI never writes aliases, and the self-check of an edit compares parsed values,
        # which aliases can make exponentially large
        raise TaskEditError("the frontmatter uses YAML anchors or aliases; not edited")
    try:
        return load_frontmatter(text)
    except FrontmatterYAMLError as exc:
        where = f"line {exc.line}: " if exc.line else ""
        raise TaskEditError(f"{where}{exc.message}") from None


_KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)")


def _key_spans(fm: list[_Line]) -> dict[str, tuple[int, int]]:
    """Top-level key -> [start, end) line range with continuation lines, not trailing blanks."""
    spans: dict[str, tuple[int, int]] = {}
    starts: list[tuple[str, int]] = []
    for i, line in enumerate(fm):
        t = line.text
        if not t or t[0] in " \t#" or t.startswith("- ") or t == "-":
            continue
        m = _KEY_RE.match(t)
        starts.append((m.group(1) if m else "", i))
    for n, (key, start) in enumerate(starts):
        end = starts[n + 1][1] if n + 1 < len(starts) else len(fm)
        while end - 1 > start and not fm[end - 1].text.strip():
            end -= 1
        if key and key not in spans:
            spans[key] = (start, end)
    return spans


# --------------------------------------------------------------------------- js-yaml quoting

_PLAIN_UNSAFE_FIRST = set("-?:,[]{}#&*!|>'\"%@`")
_PLAIN_UNSAFE = set(",[]{}:#")
_DEPRECATED_BOOLEANS = frozenset(
    "y Y yes Yes YES on On ON n N no No NO off Off OFF".split())
_IMPLICIT = [
    re.compile(r"^(?:~|null|Null|NULL)$"),
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    re.compile(r"^[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|[0-9][0-9_]*"
               r"|[1-9][0-9_]*(?::[0-5]?[0-9])+)$"),
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
               r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
    re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
               r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?$"),
    re.compile(r"^<<$"),
]


def _printable(ch: str) -> bool:
    o = ord(ch)
    return (0x20 <= o <= 0x7E or o in (0x09, 0x0A, 0x0D, 0x85) or 0xA0 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD and o != 0xFEFF or 0x10000 <= o <= 0x10FFFF)


def yaml_scalar(value: str, *, flow: bool = False) -> str:
    """Render a string the way the CLI's js-yaml 3 dumper renders a short one-line scalar."""
    if value == "":
        return "''"
    if any(not _printable(c) or c in "\r\n" for c in value):
        return _double_quoted(value)
    if value in _DEPRECATED_BOOLEANS:
        return f"'{value}'"
    plain = (value[0] not in _PLAIN_UNSAFE_FIRST and not value[0].isspace()
             and not value[-1].isspace() and not any(c in _PLAIN_UNSAFE for c in value))
    if flow and any(c in ",[]{}" for c in value):
        plain = False
    if plain and not any(p.match(value) for p in _IMPLICIT):
        return value
    return "'" + value.replace("'", "''") + "'"


def _double_quoted(value: str) -> str:
    out = []
    for c in value:
        o = ord(c)
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif not _printable(c) or o < 0x20:
            out.append(f"\\x{o:02X}" if o <= 0xFF else f"\\u{o:04X}" if o <= 0xFFFF
                       else f"\\U{o:08X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


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


_FLOW_LINE_RE = re.compile(r"^(labels[ \t]*:[ \t]*\[[ \t]*)(.*?)([ \t]*\][ \t]*(?:#.*)?)$")
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


def _find_labels(doc: _Doc) -> _LabelBlock | None:
    spans = _key_spans(doc.fm)
    if "labels" not in spans:
        return None
    start, end = spans["labels"]
    head = doc.fm[start].text
    value = head.split(":", 1)[1].strip()
    if value.startswith("#"):
        value = ""
    if value.startswith("["):
        m = _FLOW_LINE_RE.match(head)
        if m is None or end - start != 1:
            raise TaskEditError("labels: a flow list over several lines cannot be edited safely")
        split = _split_flow(m.group(2))
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
        return _LabelBlock(start, end, style, values, raw, sep, m.group(1), m.group(3))
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


def _check(before: dict[str, Any], after: dict[str, Any], changed: dict[str, Any]) -> None:
    """The edited file must read exactly as intended: the changed keys, nothing else."""
    expected = dict(before)
    for k, v in changed.items():
        if v is _DROP:
            expected.pop(k, None)
        else:
            expected[k] = v
    if set(after) != set(expected) or any(after[k] != expected[k] for k in expected
                                          if expected[k] is not _ANY):
        raise TaskEditError("internal check failed: the edit would change more than intended")


_DROP = object()
_ANY = object()


def remove_label(data: bytes, label: str) -> bytes:
    """Remove every label equal to `label` (case-insensitive, as the CLI). No-op when absent."""
    doc = _parse_doc(data)
    before = _fm_dict(doc)
    labels = _labels_of(before)
    want = label.lower()
    if not any(lab.lower() == want for lab in labels):
        return data
    block = _find_labels(doc)
    assert block is not None  # labels exist, so the key does
    eol = doc.fm[block.start].eol
    keep = [(i, v) for i, v in block.items if v.lower() != want]
    if not keep:
        doc.fm[block.start:block.end] = [_Line("labels: []", eol)]
    elif block.style == "flow":
        raw = [r for r, (_, v) in zip(block.flow_raw, block.items, strict=True)
               if v.lower() != want]
        doc.fm[block.start] = _Line(block.flow_open + block.flow_sep.join(raw) + block.flow_close,
                                    eol)
    else:
        drop = {i for i, v in block.items if v.lower() == want}
        doc.fm = [line for i, line in enumerate(doc.fm) if i not in drop]
    out = doc.render()
    _check(before, _fm_dict(_parse_doc(out)),
           {"labels": [v for v in labels if v.lower() != want]})
    return out


def add_label(data: bytes, label: str) -> bytes:
    """Append `label` to the labels list unless present (case-insensitive, as the CLI)."""
    if not label or "," in label or label != label.strip():
        raise TaskEditError(f"label {label!r} is not one the CLI could store")
    doc = _parse_doc(data)
    before = _fm_dict(doc)
    labels = _labels_of(before)
    if any(lab.lower() == label.lower() for lab in labels):
        return data
    eol = doc.fm_eol
    block = _find_labels(doc)
    if block is None:
        spans = _key_spans(doc.fm)
        at = _insert_position(spans, len(doc.fm), "labels")
        doc.fm[at:at] = [_Line("labels:", eol), _Line("  - " + yaml_scalar(label), eol)]
    elif block.style == "flow":
        raw = [*block.flow_raw, yaml_scalar(label, flow=True)]
        doc.fm[block.start] = _Line(block.flow_open + block.flow_sep.join(raw) + block.flow_close,
                                    doc.fm[block.start].eol)
    elif block.style == "empty":
        line_eol = doc.fm[block.start].eol
        doc.fm[block.start:block.end] = [_Line("labels:", line_eol),
                                         _Line("  - " + yaml_scalar(label), line_eol)]
    else:
        last = block.items[-1][0]
        m = _BLOCK_ITEM_RE.match(doc.fm[last].text)
        assert m is not None
        doc.fm.insert(last + 1, _Line(f"{m.group(1)}-{m.group(2)}{yaml_scalar(label)}",
                                      doc.fm[last].eol or eol))
    out = doc.render()
    _check(before, _fm_dict(_parse_doc(out)), {"labels": [*labels, label]})
    return out


# The CLI's key order; a missing key goes before the first later key present.
_KEY_ORDER = ("id", "title", "status", "assignee", "reporter", "created_date", "updated_date",
              "due_date", "labels", "milestone", "dependencies", "references", "documentation",
              "modified_files", "parent_task_id", "subtasks", "priority", "type", "ordinal",
              "onStatusChange")


def _insert_position(spans: dict[str, tuple[int, int]], n_lines: int, key: str) -> int:
    later = _KEY_ORDER[_KEY_ORDER.index(key) + 1:]
    starts = [spans[k][0] for k in later if k in spans]
    if starts:
        return min(starts)
    earlier = _KEY_ORDER[:_KEY_ORDER.index(key)]
    ends = [spans[k][1] for k in earlier if k in spans]
    return max(ends) if ends else n_lines


# --------------------------------------------------------------------------- status, dates


def set_status(data: bytes, status: str) -> bytes:
    """Set `status:` to `status`, written as the CLI writes it."""
    if not status.strip() or "\n" in status or "\r" in status:
        raise TaskEditError(f"status {status!r} is not one line of text")
    doc = _parse_doc(data)
    before = _fm_dict(doc)
    if before.get("status") == status:
        return data
    spans = _key_spans(doc.fm)
    new = _Line("status: " + yaml_scalar(status), doc.fm_eol)
    if "status" in spans:
        start, end = spans["status"]
        new.eol = doc.fm[end - 1].eol or ""
        doc.fm[start:end] = [new]
    else:
        at = _insert_position(spans, len(doc.fm), "status")
        doc.fm.insert(at, new)
    out = doc.render()
    _check(before, _fm_dict(_parse_doc(out)), {"status": status})
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


_DATE_LINE_RE = re.compile(r"^(updated_date[ \t]*:[ \t]*)(.*?)([ \t]*(?:#.*)?)$")


def set_updated_date(data: bytes, when: datetime, *, insert: bool = False) -> bytes:
    """Set `updated_date` to `when` (a naive value is taken as UTC) in the value's own format.

    Only a file that has the key is changed, unless `insert` is true, in which case the line is
    added after `created_date` as the CLI adds it (``updated_date: 'YYYY-MM-DD HH:MM'``).
    """
    doc = _parse_doc(data)
    before = _fm_dict(doc)
    spans = _key_spans(doc.fm)
    if "updated_date" not in spans:
        if not insert:
            return data
        utc = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        at = _insert_position(spans, len(doc.fm), "updated_date")
        new_value = utc.strftime(CLI_DATE_FORMAT)
        doc.fm.insert(at, _Line(f"updated_date: '{new_value}'", doc.fm_eol))
        out = doc.render()
        _check(before, _fm_dict(_parse_doc(out)), {"updated_date": new_value})
        return out
    start, end = spans["updated_date"]
    m = _DATE_LINE_RE.match(doc.fm[start].text)
    if m is None or end - start != 1:
        raise TaskEditError("updated_date is not a one-line value")
    raw = m.group(2)
    quote = raw[0] if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) >= 2 else ""
    inner = raw[1:-1] if quote else raw
    if inner.startswith("#"):  # `updated_date: # comment` has no value
        inner, m_tail = "", raw + m.group(3)
    else:
        m_tail = m.group(3)
    value = format_like(inner, when)
    if not quote and not any(p.match(inner) for p, _ in _DATE_SHAPES):
        quote = "'"
    doc.fm[start] = _Line(m.group(1) + quote + value + quote + m_tail, doc.fm[start].eol)
    out = doc.render()
    _check(before, _fm_dict(_parse_doc(out)), {"updated_date": value})
    return out


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


def _heading(line: _Line) -> str | None:
    m = _HEADING_RE.match(line.text)
    return m.group(1).lower() if m else None


def _next_heading(body: list[_Line], after: int) -> int:
    for j in range(after + 1, len(body)):
        if _heading(body[j]) is not None:
            return j
    return len(body)


def _last_nonblank(body: list[_Line], lo: int, hi: int) -> int:
    for j in range(hi - 1, lo - 1, -1):
        if body[j].text.strip():
            return j
    return lo


def _section_end(body: list[_Line], title: str, end_marker: str) -> int | None:
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


def _section_start(body: list[_Line], title: str) -> int | None:
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
    doc = _parse_doc(data)
    before = _fm_dict(doc)
    eol = doc.body_eol
    new = [_Line(t, eol) for t in note.split("\n")]
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
        insert = new if last == begin else [_Line("", eol), *new]
        body[last + 1:end] = insert
    elif stray_end or any(NOTES_BEGIN in ln.text or NOTES_END in ln.text for ln in body):
        raise TaskEditError("notes markers are not on lines of their own")
    else:
        h = _section_start(body, "implementation notes")
        if h is not None:
            last = _last_nonblank(body, h, _next_heading(body, h))
            _insert_after(body, last, [_Line("", eol), *new], eol)
        else:
            block = [_Line(NOTES_HEADING, eol), _Line("", eol), _Line(NOTES_BEGIN, eol), *new,
                     _Line(NOTES_END, eol)]
            _insert_notes_section(doc, block, eol)
    out = doc.render()
    _check(before, _fm_dict(_parse_doc(out)), {})
    return out


def _insert_after(body: list[_Line], idx: int, lines: list[_Line], eol: str) -> None:
    """Insert `lines` after body[idx]; a last line without newline keeps the file's missing one."""
    if not body[idx].eol:
        body[idx].eol = eol
        lines[-1].eol = ""
    body[idx + 1:idx + 1] = lines


def _insert_notes_section(doc: _Doc, block: list[_Line], eol: str) -> None:
    body = doc.body
    for title, marker in (("implementation plan", "<!-- SECTION:PLAN:END -->"),
                          ("definition of done", "<!-- DOD:END -->"),
                          ("acceptance criteria", "<!-- AC:END -->")):
        end = _section_end(body, title, marker)
        if end is not None:
            follow = end + 1 < len(body) and body[end + 1].text.strip() != ""
            _insert_after(body, end, [_Line("", eol), *block, *([_Line("", eol)] if follow
                                                                   else [])], eol)
            return
    for title in ("comments", "final summary"):
        h = _section_start(body, title)
        if h is not None:
            prev_blank = h == 0 or not body[h - 1].text.strip()
            body[h:h] = [*([] if prev_blank else [_Line("", eol)]), *block, _Line("", eol)]
            return
    if not any(ln.text.strip() for ln in body):
        # an empty body: the CLI writes one blank line after the frontmatter, then the section
        had_newline = bool(body[-1].eol) if body else bool(doc.close_fence.eol)
        if not doc.close_fence.eol:
            doc.close_fence.eol = doc.fm_eol
        doc.body = [_Line("", eol), *block]
        if not had_newline:
            doc.body[-1].eol = ""
        return
    last = _last_nonblank(body, 0, len(body))
    _insert_after(body, last, [_Line("", eol), *block], eol)
