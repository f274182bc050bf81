"""The anatomy of a task file for line-level edits: fences, frontmatter lines, body lines.

An edit finds the lines of one key (or one body section) and replaces just those; everything else
comes back byte for byte. Every edit is checked before it is returned (`check_edit`): the result
is parsed again and must read as exactly the intended change, else `TaskEditError`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobs.backlog.frontmatter import (
    FRONTMATTER_RE,
    FrontmatterYAMLError,
    load_frontmatter,
    yaml_has_aliases,
)
from jobs.backlog.frontmatter_fast import fast_frontmatter
from jobs.backlog.task import TaskEditError


@dataclass(slots=True)
class Line:
    text: str  # without its line ending
    eol: str  # "\n", "\r\n" or "" (last line without newline)


def split_lines(text: str) -> list[Line]:
    # str.splitlines would also split at \v, \f, \x1c-\x1e, \x85 and \u2028/9, which YAML
    # and the CLI keep inside a line: only "\n" (with its "\r", if any) ends a line here.
    parts = text.split("\n")
    last = parts.pop()  # what follows the last "\n": "" when the text ends with one
    lines = [Line(part[:-1], "\r\n") if part.endswith("\r") else Line(part, "\n")
             for part in parts]
    if last:
        lines.append(Line(last, ""))
    return lines


def join_lines(lines: Sequence[Line]) -> str:
    return "".join(line.text + line.eol for line in lines)


class Doc:
    """A task file as fences, frontmatter lines and body lines. The body is split into lines
    only when an edit looks at it: most edits change the frontmatter alone."""

    def __init__(self, bom: str, open_fence: Line, fm: list[Line], close_fence: Line,
                 body_text: str) -> None:
        self.bom = bom
        self.open_fence = open_fence
        self.fm = fm
        self.close_fence = close_fence
        self._body_text = body_text
        self._body: list[Line] | None = None

    @property
    def body(self) -> list[Line]:
        if self._body is None:
            self._body = split_lines(self._body_text)
        return self._body

    @body.setter
    def body(self, lines: list[Line]) -> None:
        self._body = lines

    def render(self) -> bytes:
        body = self._body_text if self._body is None else join_lines(self._body)
        text = (self.bom + self.open_fence.text + self.open_fence.eol + join_lines(self.fm)
                + self.close_fence.text + self.close_fence.eol + body)
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


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskEditError(f"line {line}: not valid UTF-8") from None


def _frontmatter(text: str) -> tuple[re.Match[str], int, str]:
    """The fences' match, where the frontmatter lines start, and the line ending that ends the
    last of them (it belongs to the frontmatter)."""
    m = FRONTMATTER_RE.match(text)
    if m is None:
        raise TaskEditError("no frontmatter (the file must start with a '---' line)")
    sep = "\r\n" if text.startswith("\r\n", m.end(1)) else "\n"
    return m, text.index("\n") + 1, sep


def parse_doc(data: bytes) -> Doc:
    text = decode(data)
    m, open_end, sep = _frontmatter(text)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    open_fence = split_lines(text[len(bom):open_end])[0]
    fm_end = m.end(1)
    fm = split_lines(text[open_end:fm_end] + sep)
    close_fence = Line("---" + m.group(2), m.group(3))
    return Doc(bom, open_fence, fm, close_fence, text[m.end():])


def frontmatter_of(data: bytes) -> dict[str, Any]:
    """`fm_dict(parse_doc(data))` without splitting the file into lines: an edit's self-check
    reads back only the frontmatter of what it wrote."""
    text = decode(data)
    m, open_end, sep = _frontmatter(text)
    return _fm_of_text(text[open_end:m.end(1)] + sep)


def fm_dict(doc: Doc) -> dict[str, Any]:
    """The frontmatter as the reader sees it; `TaskEditError` when it cannot be edited by lines.

    The edits work on top-level `key:` lines (plain or quoted keys). A frontmatter that holds
    its keys some other way (a flow mapping `{...}`, a complex `? key`) is valid and read, but
    not edited: the line view and the YAML view would not name the same keys.

    The result is shared (callers only read it): a chain of edits parses each intermediate
    frontmatter once, where each edit's self-check and the next edit would each parse it.
    """
    return _fm_of_text(join_lines(doc.fm))


@functools.lru_cache(maxsize=32)
def _fm_of_text(text: str) -> dict[str, Any]:
    fast = fast_frontmatter(text)
    if fast is not None:
        return fast
    if yaml_has_aliases(text):
        # the CLI never writes aliases, and the self-check of an edit compares parsed values,
        # which aliases can make exponentially large
        raise TaskEditError("the frontmatter uses YAML anchors or aliases; not edited")
    try:
        data = load_frontmatter(text)
    except FrontmatterYAMLError as exc:
        where = f"line {exc.line}: " if exc.line else ""
        raise TaskEditError(f"{where}{exc.message}") from None
    lines = set(key_spans(split_lines(text)))
    if lines != set(data):
        raise TaskEditError("the frontmatter does not write its keys as one `key:` line each "
                            "(a flow mapping or a complex `?` key); not edited")
    return data


# A top-level key as the edits find it: a plain scalar, 'single-quoted' or "double-quoted" (no
# escapes). `fm_dict` checks that these lines name exactly the keys YAML reads.
_PLAIN_REST = r"(?:[^:#\r\n]|(?<![ \t])#|:(?![ \t]|$))*?"
KEY_PATTERN = (rf"(?:((?:[^\s#'\"?{{}}\[\]&*!|>%@`,:-]|[-:?](?![ \t]|$)){_PLAIN_REST})"
               r"""|'((?:[^']|'')*)'|"([^"\\]*)")[ \t]*:""")
KEY_RE = re.compile(rf"^{KEY_PATTERN}(?:[ \t]|$)")


def key_name(m: re.Match[str]) -> str:
    """The key a KEY_RE match names, unquoted."""
    plain, single, double = m.group(1, 2, 3)
    if plain is not None:
        return str(plain)
    if single is not None:
        return str(single).replace("''", "'")
    return str(double)


def key_prefix(text: str, key: str) -> str:
    """The key as this line writes it, with its colon (`'labels':`), so a rewritten line keeps
    the owner's quoting of the key; `key:` when the line has none."""
    m = KEY_RE.match(text)
    if m is None:
        return f"{key}:"
    return text[:m.end()].rstrip(" \t")


def key_spans(fm: list[Line]) -> dict[str, tuple[int, int]]:
    """Top-level key -> [start, end) line range with continuation lines, not trailing blanks."""
    spans: dict[str, tuple[int, int]] = {}
    starts: list[tuple[str, int]] = []
    for i, line in enumerate(fm):
        t = line.text
        if not t or t[0] in " \t#" or t.startswith("- ") or t == "-":
            continue
        m = KEY_RE.match(t)
        starts.append((key_name(m) if m else "", i))
    for n, (key, start) in enumerate(starts):
        end = starts[n + 1][1] if n + 1 < len(starts) else len(fm)
        while end - 1 > start and not fm[end - 1].text.strip():
            end -= 1
        if key and key not in spans:
            spans[key] = (start, end)
    return spans


def check_edit(before: dict[str, Any], after: dict[str, Any], changed: dict[str, Any]) -> None:
    """The edited file must read exactly as intended: the changed keys, nothing else."""
    expected = dict(before)
    for k, v in changed.items():
        if v is DROP:
            expected.pop(k, None)
        else:
            expected[k] = v
    if set(after) != set(expected) or any(after[k] != expected[k] for k in expected
                                          if expected[k] is not ANY):
        raise TaskEditError("internal check failed: the edit would change more than intended")


DROP = object()
ANY = object()

# The CLI's key order; a missing key goes before the first later key present.
KEY_ORDER = ("id", "title", "status", "assignee", "reporter", "created_date", "updated_date",
              "due_date", "labels", "milestone", "dependencies", "references", "documentation",
              "modified_files", "parent_task_id", "subtasks", "priority", "type", "ordinal",
              "onStatusChange")


def insert_position(spans: dict[str, tuple[int, int]], n_lines: int, key: str) -> int:
    later = KEY_ORDER[KEY_ORDER.index(key) + 1:]
    starts = [spans[k][0] for k in later if k in spans]
    if starts:
        return min(starts)
    earlier = KEY_ORDER[:KEY_ORDER.index(key)]
    ends = [spans[k][1] for k in earlier if k in spans]
    return max(ends) if ends else n_lines

