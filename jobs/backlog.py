"""Backlog.md task files, read directly (never through the CLI) and edited losslessly.

Reading follows the Backlog.md CLI (1.52): `backlog/config.yml` gives the statuses, the default
status and the task prefix; task files are `backlog/tasks/<prefix>-*.md` and
`backlog/completed/<prefix>-*.md` (case-sensitive glob, as the CLI's), YAML frontmatter between
`---` lines (a BOM and CRLF allowed), bare `@name` assignee/reporter values pre-quoted as the CLI
does. Values are read as text (PyYAML's base loader, libyaml when available), which is how js-yaml
reads the labels the CLI writes (`yes`, `123` and a bare date stay text) and avoids YAML 1.1 type
guessing. A repeated key is an error, as in js-yaml.

Speed: the frontmatter the CLI writes uses a small subset of YAML (one `key: value` per line,
plain or quoted scalars, `[]`/one-line flow lists, `- item` block lists, `>-` folded long
values). Regular expressions recognise exactly that subset and give the values the YAML loader
would give; anything else (comments, nested maps, tabs, a `: ` inside a plain value, odd
characters...) falls back to PyYAML, which also words the errors. `scan` goes one step further:
it joins the decoded files with NULs and validates every frontmatter with one `finditer`
(`_BULK`, for files that start with id/title/status as the CLI writes them), sending every other
file through `parse_task`. Tests check the fast readers against PyYAML (corpora, fixtures,
generated text) and `scan` against per-file `parse_task`. Files are read with one open/read/close
each (`dir_fd`, O_NOFOLLOW, O_NONBLOCK). bench/scan.py, 5,000 tasks, whole processes on a
loaded 2-vCPU machine: about 130-140 ms (interpreter and imports ~40 ms of it) against 2.4-2.7 s
for `backlog task list --plain` (about 19x) and 75 ms for `cat` of the same files (about 1.8x).

A file that cannot be read as a task becomes a `TaskFileError` (path, line, reason) and every
other task is still read. Ids that name the same task (compared as the CLI does: case-insensitive,
numeric parts as numbers, so TASK-1 == task-01) in more than one file are all reported as errors:
the CLI refuses to edit an ambiguous id, and so do we.

The edits live in `jobs.backlog_edit` (imported on first use) and are re-exported here; see its
docstring for how each keeps the file byte-for-byte outside the lines it must change.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.errors import InputError, LoopError

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "DEFAULT_STATUSES", "FRONTMATTER_RE", "MAX_TASK_BYTES", "VERIFY_LABEL", "BacklogConfig",
    "BacklogError", "Scan", "Task", "TaskEditError", "TaskFileError", "TaskParseError",
    "add_label", "append_notes", "id_key", "parse_task", "read_config", "read_task",
    "remove_label", "scan", "set_status", "set_updated_date", "write_task",
]

VERIFY_LABEL = re.compile(r"^verify:(\d{4}-\d{2}-\d{2})$")
DEFAULT_STATUSES: tuple[str, ...] = ("To Do", "In Progress", "Done")
MAX_TASK_BYTES = 1024 * 1024
TASK_FOLDERS = ("tasks", "completed")


# Frontmatter as the CLI finds it (optional BOM; the closing fence must end its line).
FRONTMATTER_RE = re.compile(r"^\ufeff?---\r?\n(.*?)\r?\n---(\r?\n|$)", re.DOTALL)

class TaskEditError(LoopError):
    """An edit that cannot be made safely on this file (reported, file left as it was)."""


class FrontmatterYAMLError(Exception):
    """The frontmatter is not the YAML the CLI would read; `line` is 1-based in the file."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# --------------------------------------------------------------------------- YAML reading


_loader_class: Any = None


def _loader() -> Any:
    """PyYAML's base loader (everything as text) refusing repeated keys; built on first use so
    a scan that never needs YAML never imports it."""
    global _loader_class
    if _loader_class is None:
        import yaml

        base: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

        def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
            # js-yaml refuses a repeated key, so the CLI skips such a task; a line editor would
            # also edit one occurrence while a reader sees the other.
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = loader.construct_object(key_node, deep=True)
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                if isinstance(key, str):
                    seen.add(key)
            result: dict[Any, Any] = yaml.constructor.BaseConstructor.construct_mapping(
                loader, node, deep=deep)
            return result

        _loader_class = type("StrictTextLoader", (base,), {})
        _loader_class.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                      construct_mapping)
    return _loader_class


_AT_SCALAR_RE = re.compile(r"^((?:assignee|reporter)[ \t]*:[ \t]*)(@[^\r\n]*?)([ \t]*\r?)$")
_AT_FLOW_RE = re.compile(r"^((?:assignee|reporter)[ \t]*:[ \t]*\[)(.*)(\][ \t]*\r?)$")
_AT_ITEM_RE = re.compile(r"^([ \t]*-[ \t]+)(@[^\r\n]*?)([ \t]*\r?)$")


def _dq(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def prequote_at_values(fm: str) -> str:
    """Quote bare `@alice` values of assignee/reporter, which YAML forbids but the CLI accepts.

    Works line by line so YAML error line numbers still point at the file.
    """
    if "@" not in fm:
        return fm
    out: list[str] = []
    in_people = False
    for line in fm.split("\n"):
        if line and not line[0].isspace() and not line.startswith("-"):
            in_people = bool(re.match(r"(assignee|reporter)[ \t]*:", line))
        m = _AT_SCALAR_RE.match(line)
        if m:
            line = m.group(1) + _dq(m.group(2)) + m.group(3)
        else:
            m = _AT_FLOW_RE.match(line)
            if m and "@" in m.group(2):
                items = [i.strip() for i in m.group(2).split(",")]
                items = [_dq(i) if i.startswith("@") else i for i in items]
                line = m.group(1) + ", ".join(items) + m.group(3)
            elif in_people:
                m = _AT_ITEM_RE.match(line)
                if m:
                    line = m.group(1) + _dq(m.group(2)) + m.group(3)
        out.append(line)
    return "\n".join(out)


def load_yaml(text: str, first_line: int = 1) -> Any:
    """Parse YAML text with every scalar as text; errors carry the file line."""
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + first_line if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FrontmatterYAMLError(f"invalid YAML in frontmatter: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise FrontmatterYAMLError(f"invalid YAML in frontmatter: {exc}", None) from None


def yaml_has_aliases(text: str) -> bool:
    """Whether YAML text uses an alias (`*name`): read from the event stream, which never
    expands them. False for text that is not valid YAML (the loader reports that)."""
    import yaml

    try:
        return any(isinstance(event, yaml.AliasEvent)
                   for event in yaml.parse(prequote_at_values(text), Loader=_loader()))
    except yaml.YAMLError:
        return False


def load_frontmatter(fm: str, first_line: int = 2) -> dict[str, Any]:
    """Parse frontmatter text (LF or CRLF) into a mapping of text values.

    `first_line` is the file line number of the frontmatter's first line, for error messages.
    """
    fast = _fast_frontmatter(fm)
    if fast is not None:
        return fast
    data = load_yaml(prequote_at_values(fm), first_line)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterYAMLError("frontmatter is not a YAML mapping", first_line)
    return data


# --------------------------------------------------------------------------- the fast readers
# The simple YAML subset the CLI writes (see the module docstring), as regular expressions.
# Characters that are not plain printable text for YAML: controls and NEL, which YAML 1.1 reads
# as a line break. The non-Latin-1 ones (the Unicode line separators, the BOM, U+FFFE/U+FFFF) are
# refused by a separate check (`_has_odd`) so the big patterns keep Latin-1 classes: a class with
# characters beyond U+00FF costs milliseconds to compile, at every start-up. (Strict UTF-8
# decoding never yields surrogates.)
_BAD = "\\x00-\\x1f\\x7f-\\x9f"
_ODD_CHARS = "\u2028\u2029\ufeff\ufffe\uffff"


def _has_odd(text: str) -> bool:
    return not text.isascii() and any(c in text for c in _ODD_CHARS)


_FIRST = rf"[^{_BAD} \-?:,\[\]{{}}#&*!|>'\"%@`]"
# Possessive repeats (*+): a run of text is never split again on a failed match, so a line
# outside the subset fails in linear time instead of backtracking exponentially.
_PLAIN = rf"{_FIRST}(?:[^{_BAD}:#]++|:(?=[^ \r\n])|(?<! )#)*+"
_FLOW_PLAIN = rf"{_FIRST}(?:[^{_BAD}:#,\[\]{{}}?]++|:(?=[^ \r\n,\[\]{{}}])|(?<! )#)*+"
_SQ = rf"'(?:[^{_BAD}']++|'')*+'"
_DQ = rf'"[^{_BAD}"\\\\]*"'
_FLOW_ITEM = rf"(?:{_SQ}|{_DQ}|{_FLOW_PLAIN})"
_FLOW = rf"\[ *(?:{_FLOW_ITEM}(?: *, *{_FLOW_ITEM})* *)?\]"
_FAST_LINE_PATTERN = (
    rf"^(?:([A-Za-z_][A-Za-z0-9_-]*):(?: +({_SQ}|{_DQ}|{_FLOW}|{_PLAIN}))? *"
    rf"|( *)- ({_SQ}|{_DQ}|{_PLAIN}) *"
    rf"| *)\r?\n")
_fast_line: re.Pattern[str] | None = None  # compiled on first use: only edits need it
_FLOW_ITEMS = re.compile(_FLOW_ITEM)

# The same subset as whole-frontmatter patterns, for the scan's four fields (no Python per line).
_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"
_VALUE = rf"(?:{_SQ}|{_DQ}|{_FLOW}|{_PLAIN})"
_ITEM = rf"(?:{_SQ}|{_DQ}|{_PLAIN})"
_BLANK = r" *\r?\n"
# A folded block (`>-`) as js-yaml writes a long value: lines at one indentation, none blank,
# none starting or ending with a space; YAML joins them with single spaces.
_FOLD_LINE = rf"[^{_BAD} ][^{_BAD}]*+(?<! )\r?\n"
_LINES = (
    rf"{_BLANK}"
    rf"|{_KEY}: +{_VALUE} *\r?\n"
    rf"|(?:assignee|reporter): +@[^{_BAD}]*+\r?\n"  # the CLI quotes these before parsing
    rf"|{_KEY}: +>-\r?\n(?P<fi> +){_FOLD_LINE}(?:(?P=fi){_FOLD_LINE})*+"
    rf"|{_KEY}: *\r?\n(?:(?:{_BLANK})*+(?P<li> *)- "
    rf"(?:{_ITEM} *\r?\n|>-\r?\n(?P<ci>(?P=li) +){_FOLD_LINE}(?:(?P=ci){_FOLD_LINE})*+)"
    rf"(?:(?:{_BLANK})*+(?P=li)- "
    rf"(?:{_ITEM} *\r?\n|>-\r?\n(?P<ci2>(?P=li) +){_FOLD_LINE}(?:(?P=ci2){_FOLD_LINE})*+)"
    rf")*+)?+")
_VALID_PATTERN = rf"(?:{_LINES})*+"
# Many files at once (`_parse_many`): each file's text follows a NUL. Only what the CLI itself
# writes is taken here (LF, no BOM, id/title/status first, plain or single-quoted values, `[]`,
# two-space `- ` lists, `>-` folds); every other file goes through `parse_task`. Keeping this
# grammar small keeps it cheap to compile at start-up and quick to match.
_CLI_SCALAR = rf"(?:{_SQ}|{_PLAIN})"
_CLI_FOLD = rf"(?:  [^{_BAD} ][^{_BAD}]*+(?<! )\n)++"
_CLI_LINE = (rf"{_KEY}: (?:{_CLI_SCALAR}|\[\])\n"
             rf"|{_KEY}:\n(?:  - {_CLI_SCALAR}\n)++"
             rf"|{_KEY}: >-\n{_CLI_FOLD}")
_BULK = re.compile(
    "\\x00---\\n"
    rf"(?P<fm>id: (?P<id>{_CLI_SCALAR})\n"
    rf"title: (?:(?P<title>{_CLI_SCALAR})\n|>-\n(?P<tfold>{_CLI_FOLD}))"
    rf"status: (?P<status>{_CLI_SCALAR})\n"
    rf"(?:labels: \[\]\n|labels:\n(?P<lblock>(?:  - {_CLI_SCALAR}\n)++)"
    rf"|(?!labels:)(?:{_CLI_LINE}))*+)"
    "---(?:\\n|(?=\\x00)|\\Z)")
_FM_NAMES = re.compile(rf"\n({_KEY}):")  # after validation: every key, for repeats


# The value after `key:` (validated already): one line, a folded block, or nothing (a list).
_VALUE_AT_PATTERN = (
    rf"(?: +({_VALUE}) *\r?\n| +>-\r?\n((?: +{_FOLD_LINE})++)| *\r?\n)")
# The CLI always writes these three first, in this order: one match takes them all.
_HEAD_PATTERN = rf"id: +({_VALUE}) *\r?\ntitle: +({_VALUE}) *\r?\nstatus: +({_VALUE}) *\r?\n"
_BLOCK_AT_PATTERN = rf" *\r?\n((?:(?: *| *- {_ITEM} *)\r?\n)*+)"
_per_file_patterns: tuple[re.Pattern[str], ...] = ()


def _per_file() -> tuple[re.Pattern[str], ...]:
    """(valid, head, value-at, block-at), compiled on first use: a scan of CLI-written files
    never needs them, and every pattern compiled costs start-up time."""
    global _per_file_patterns
    if not _per_file_patterns:
        _per_file_patterns = tuple(re.compile(p) for p in (
            _VALID_PATTERN, _HEAD_PATTERN, _VALUE_AT_PATTERN, _BLOCK_AT_PATTERN))
    return _per_file_patterns
_FM_ITEM = re.compile(rf"^ *- ({_ITEM}) *\r?$", re.MULTILINE)


def _value(raw: str) -> str | list[str]:
    first = raw[0]
    if first != "[" and first != "'" and first != '"':
        return raw.rstrip(" ")
    if first == "[":
        inner = raw[1:-1]
        return [_scalar(x) for x in _FLOW_ITEMS.findall(inner)] if inner.strip(" ") else []
    return _scalar(raw)


_FIELD_MARKERS = ("\nid:", "\ntitle:", "\nstatus:", "\nlabels:")


def _fast_fields(fm: str) -> tuple[Any, Any, Any, Any] | None:
    """(id, title, status, labels) as the YAML loader would read them, or None when `fm` is
    outside the simple subset (then the caller asks `load_frontmatter`). Missing keys read as ""."""
    if _has_odd(fm):
        return None
    valid, head_at, value_at, block_at = _per_file()
    text = "\n" + fm + "\n"
    if valid.fullmatch(text, 1) is None:
        return None
    names = _FM_NAMES.findall(text)
    if len(set(names)) != len(names):
        return None  # a repeated key: YAML reports it
    head = head_at.match(text, 1)
    if head is not None:
        values: list[Any] = [_value(v) for v in head.groups()]
        markers: tuple[str, ...] = _FIELD_MARKERS[3:]
    else:
        values = []
        markers = _FIELD_MARKERS
    for marker in markers:
        at = text.find(marker)
        if at < 0:
            values.append("")
            continue
        at += len(marker)
        m = value_at.match(text, at)
        if m is None:  # pragma: no cover - the text was validated above
            return None
        raw, folded = m.group(1, 2)
        if raw:
            values.append(_value(raw))
        elif folded:
            values.append(" ".join([line.strip(" \r") for line in folded.split("\n")[:-1]]))
        else:
            block = block_at.match(text, at)
            if block is None or text[block.end():block.end() + 1] in (" ", "-"):
                return None  # an item this reader does not take apart (a folded one, say)
            values.append([_scalar(x) for x in _FM_ITEM.findall(block.group(1))] or "")
    return values[0], values[1], values[2], values[3]


def split_frontmatter(text: str) -> tuple[int, int, int] | None:
    """(start, end, body start) of the frontmatter, exactly where FRONTMATTER_RE finds it.

    The regex's lazy `.*?` tests every character; a few `str.find` calls do the same job for a
    5,000-file scan at a fraction of the cost.
    """
    start = 1 if text.startswith("\ufeff") else 0
    if text.startswith("---\n", start):
        start += 4
    elif text.startswith("---\r\n", start):
        start += 5
    else:
        return None
    pos = start
    while True:
        nl = text.find("\n---", pos)
        if nl < 0:
            return None
        after = nl + 4
        if after == len(text) or text.startswith("\n", after) or text.startswith("\r\n", after):
            end = nl - 1 if nl > start and text[nl - 1] == "\r" else nl
            body = after if after == len(text) else text.index("\n", after) + 1
            return start, end, body
        pos = nl + 1


def _scalar(raw: str) -> str:
    first = raw[0]
    if first == "'":
        return raw[1:-1].replace("''", "'")
    if first == '"':
        return raw[1:-1]
    return raw.rstrip(" ")


def _fast_frontmatter(fm: str) -> dict[str, Any] | None:
    """The mapping the YAML loader would build, when `fm` is in the simple subset; else None."""
    global _fast_line
    if _has_odd(fm):
        return None
    if _fast_line is None:
        _fast_line = re.compile(_FAST_LINE_PATTERN, re.MULTILINE)
    text = fm + "\n"
    lines = _fast_line.findall(text)
    if len(lines) != text.count("\n"):
        return None  # some line is outside the subset (matches can only start a line)
    out: dict[str, Any] = {}
    bare: list[str] = []
    items: list[str] | None = None
    indent: str | None = None
    for key, raw, ind, item in lines:
        if key:
            if key in out:
                return None  # YAML reports the repeated key
            if not raw:
                items = []
                indent = None
                out[key] = items
                bare.append(key)
            else:
                items = None
                if raw[0] == "[":
                    inner = raw[1:-1]
                    out[key] = ([_scalar(x) for x in _FLOW_ITEMS.findall(inner)]
                                if inner.strip(" ") else [])
                else:
                    out[key] = _scalar(raw)
        elif item:
            if items is None or (indent is not None and ind != indent):
                return None
            indent = ind
            items.append(_scalar(item))
    for key in bare:
        if not out[key]:
            out[key] = ""  # `key:` with nothing after it is an empty text for YAML
    return out


_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def is_null(value: object) -> bool:
    return value is None or (isinstance(value, str) and value in _NULLS)




class BacklogError(InputError):
    """A repository-level problem: no backlog/ folder, a config.yml that cannot be used."""


class TaskParseError(InputError):
    """One task file that cannot be read as a task; `reason` is the message without the path."""

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.reason = message
        super().__init__(path, message, line)


def _canonical(status: str) -> str:
    return re.sub(r"\s+", "", status).lower()


@dataclass(frozen=True)
class BacklogConfig:
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    default_status: str | None = "To Do"
    task_prefix: str = "task"

    @property
    def done_status(self) -> str:
        """The CLI's terminal status: the last configured one."""
        return self.statuses[-1]

    @property
    def reopen_status(self) -> str:
        """`default_status` when it is one of the statuses (as spelled there), else the first."""
        if self.default_status is not None:
            want = _canonical(self.default_status)
            for status in self.statuses:
                if _canonical(status) == want:
                    return status
        return self.statuses[0]

    def is_done(self, status: str) -> bool:
        return status.strip().lower() == self.done_status.strip().lower()


@dataclass(frozen=True)
class Task:
    path: Path
    folder: str
    id: str
    title: str
    status: str
    labels: tuple[str, ...]
    verify_labels: tuple[str, ...]
    verify_cmd_lines: tuple[str, ...]
    raw: bytes


_TASK_FIELDS = ("path", "folder", "id", "title", "status", "labels", "verify_labels",
                "verify_cmd_lines", "raw")


@dataclass(frozen=True)
class TaskFileError:
    path: Path
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Scan:
    root: Path
    config: BacklogConfig
    tasks: tuple[Task, ...]
    errors: tuple[TaskFileError, ...]


# --------------------------------------------------------------------------- config


def _config_text(value: object, path: Path, key: str) -> str | None:
    if is_null(value):
        return None
    if not isinstance(value, str):
        raise BacklogError(path, f"{key} must be a text value")
    return value


def read_config(root: Path) -> BacklogConfig:
    """Read `<root>/backlog/config.yml` (or config.yaml); defaults for missing keys or file."""
    backlog = Path(root) / "backlog"
    if not backlog.is_dir():
        hint = ""
        if (Path(root) / ".backlog").is_dir() or (Path(root) / "backlog.config.yml").exists():
            hint = " (a .backlog/ folder or backlog.config.yml is not supported)"
        raise BacklogError(backlog, f"no backlog/ folder{hint}")
    path = backlog / "config.yml"
    if not path.exists() and (backlog / "config.yaml").exists():
        path = backlog / "config.yaml"
    if not path.exists():
        return BacklogConfig()
    try:
        raw = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BacklogError(path, "not valid UTF-8") from None
    except OSError as exc:
        raise BacklogError(path, f"cannot read: {exc.strerror}") from None
    try:
        data = load_frontmatter(raw, first_line=1)
    except FrontmatterYAMLError as exc:
        raise BacklogError(path, exc.message.replace(" in frontmatter", ""), exc.line) from None
    statuses_raw = data.get("statuses")
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    if not is_null(statuses_raw):
        if (not isinstance(statuses_raw, list) or not statuses_raw
                or not all(isinstance(s, str) and s.strip() for s in statuses_raw)):
            raise BacklogError(path, "statuses must be a non-empty list of status names",
                               _key_line(raw, "statuses"))
        statuses = tuple(statuses_raw)
    default_status = _config_text(data.get("default_status"), path, "default_status")
    prefix = _config_text(data.get("task_prefix"), path, "task_prefix") or "task"
    if not re.fullmatch(r"[A-Za-z]+", prefix):
        raise BacklogError(path, f"task_prefix {prefix!r} must be letters only",
                           _key_line(raw, "task_prefix"))
    return BacklogConfig(statuses=statuses, default_status=default_status, task_prefix=prefix)


def _key_line(text: str, key: str) -> int | None:
    for n, line in enumerate(text.splitlines(), start=1):
        if line.startswith(f"{key}:"):
            return n
    return None


# --------------------------------------------------------------------------- one task


def _line_of(data: bytes, key: str) -> int | None:
    m = re.search(rb"^" + key.encode() + rb"[ \t]*:", data, re.MULTILINE)
    return data[: m.start()].count(b"\n") + 1 if m else None


# A body line starting with `verify-cmd` once leading spaces and one `- ` marker are gone.
_CMD_LINE = re.compile(r"^ *(?:- )?(verify-cmd[^\n]*?)\r*$", re.MULTILINE)


def _verify_cmd_lines(text: str, start: int = 0, end: int | None = None) -> list[str]:
    found: list[str] = _CMD_LINE.findall(text, start, len(text) if end is None else end)
    return found


def parse_task(path: Path, data: bytes, folder: str) -> Task:
    """Read one task file's bytes; raises `TaskParseError` naming the path and line."""
    if not data:
        raise TaskParseError(path, "empty file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskParseError(path, "not valid UTF-8", line) from None
    span = split_frontmatter(text)
    if span is None:
        raise TaskParseError(path, "no frontmatter (the file must start with a '---' line "
                                   "and have a closing '---' line)", 1)
    fm_text = text[span[0]:span[1]]
    fast = _fast_fields(fm_text)
    if fast is not None:
        task_id, title, status, labels_raw = fast
    else:
        try:
            fm = load_frontmatter(fm_text)
        except FrontmatterYAMLError as exc:
            raise TaskParseError(path, exc.message, exc.line) from None
        task_id, title, status, labels_raw = (
            fm.get("id"), fm.get("title"), fm.get("status"), fm.get("labels"))
    if type(task_id) is not str or task_id in _NULLS or not task_id.strip():
        raise TaskParseError(path, "missing id", _line_of(data, "id"))
    if type(title) is not str or title in _NULLS:
        if not is_null(title):
            raise TaskParseError(path, "title is not a text value", _line_of(data, "title"))
        title = ""
    if type(status) is not str or status in _NULLS:
        if not is_null(status):
            raise TaskParseError(path, "status is not a text value", _line_of(data, "status"))
        status = ""
    labels: tuple[str, ...]
    if type(labels_raw) is list and (fast is not None
                                     or all(type(x) is str for x in labels_raw)):
        labels = tuple(labels_raw)
    elif is_null(labels_raw):
        labels = ()
    else:
        kind = "a list of text values" if isinstance(labels_raw, list) else "a list"
        raise TaskParseError(path, f"labels is not {kind} (the CLI would read it as no labels "
                                   "and drop it on its next save)", _line_of(data, "labels"))
    cmd_lines: list[str] = []
    if text.find("verify-cmd", span[2]) >= 0:
        cmd_lines = _verify_cmd_lines(text, span[2])
    verify = tuple([lab for lab in labels if lab.startswith("verify:")]) if labels else ()
    return Task(path, folder, task_id.strip(), title, status, labels, verify,
                tuple(cmd_lines), data)


_CHUNK = 65536
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _read_file(root: Path, path: Path, name: str | Path, dir_fd: int | None) -> bytes:
    """The bytes of a small regular file; a symbolic link only when it stays inside `root`.

    O_NOFOLLOW makes the open itself refuse a link (ELOOP) and O_NONBLOCK keeps a FIFO from
    hanging the scan, so the common case costs one open, one read and one close; a directory
    fails the read (EISDIR) and an empty read is checked with fstat before it is called empty.
    """
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise TaskParseError(path, f"cannot read: {exc.strerror}") from None
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise TaskParseError(path, "broken symbolic link") from None
        if not target.is_relative_to(Path(root).resolve()):
            raise TaskParseError(path, "symbolic link to outside the repository") from None
        return _read_file(root, path, target, None)
    try:
        data = os.read(fd, _CHUNK)
        if len(data) == _CHUNK:  # a big file: read on, up to the limit
            chunks = [data]
            total = len(data)
            while True:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_TASK_BYTES:
                    raise TaskParseError(path, f"too large (over the {MAX_TASK_BYTES}-byte "
                                               "limit for a task file)")
            data = b"".join(chunks)
        elif not data and not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TaskParseError(path, "not a regular file")
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise TaskParseError(path, "not a regular file") from None
        raise TaskParseError(path, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    return data


def read_task(root: Path, path: Path, folder: str) -> Task:
    """Read and parse one task file, refusing anything that is not a small regular file in root
    (a directory, a FIFO, a symbolic link leading outside the repository, over 1 MiB)."""
    path = Path(path)
    return parse_task(path, _read_file(Path(root), path, path, None), folder)


# --------------------------------------------------------------------------- the whole backlog

def id_key(task_id: str) -> tuple[str, tuple[int, ...]] | str:
    """Identity of a task id as the CLI compares them: TASK-1, task-1 and TASK-01 are one task."""
    prefix, dash, number = task_id.partition("-")
    if (dash and number.isascii() and number.isdigit() and prefix.isascii()
            and prefix.isalpha()):
        return prefix.upper(), (int(number),)  # the common case, without the general parse
    text = task_id.strip()
    prefix, dash, number = text.partition("-")
    parts = number.split(".")
    if (dash and prefix.isascii() and prefix.isalpha()
            and all(p.isascii() and p.isdigit() for p in parts)):
        return prefix.upper(), tuple([int(p) for p in parts])
    return text.upper()


def _parse_many(paths: list[Path], datas: list[bytes], folder: str,
                errors: list[TaskFileError]) -> list[Task]:
    """`parse_task` for many files, with one regular-expression pass over all of them.

    The decoded files are joined with NULs and `_BULK` validates every frontmatter and captures
    the four fields in one `finditer`; a file it does not take (another key order, a folded title,
    a YAML error, ...) goes through `parse_task`, which gives the same result or the error.
    """
    texts: list[str] = []
    starts: dict[int, int] = {}
    pending: list[int] = []
    pos = 0
    joined = b"\x00".join(datas)
    if joined.isascii() and joined.count(b"\x00") == len(datas) - 1 and all(datas):
        # all ASCII (so bytes are characters) and no NUL inside a file: decode once
        big = "\x00" + joined.decode("ascii")
        for i, data in enumerate(datas):
            starts[pos] = i
            pos += len(data) + 1
        return _parse_big(big, True, starts, [], paths, datas, folder, errors)
    for i, data in enumerate(datas):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pending.append(i)
            continue
        if "\x00" in text or not text:
            pending.append(i)
            continue
        starts[pos] = i
        texts.append(text)
        pos += len(text) + 1
    big = "\x00" + "\x00".join(texts)
    return _parse_big(big, big.isascii(), starts, pending, paths, datas, folder, errors)


_BULK_FM = _BULK.groupindex["fm"]
_BULK_FIELDS = tuple(_BULK.groupindex[g] for g in ("id", "title", "tfold", "status", "lblock"))


def _new_task(*values: Any) -> Task:
    """Task(*values) without the frozen dataclass's per-field `object.__setattr__` calls (the
    same object: a frozen dataclass keeps its fields in the instance `__dict__` too); a
    5,000-task scan builds one per file."""
    task: Task = object.__new__(Task)
    task.__dict__.update(zip(_TASK_FIELDS, values, strict=True))
    return task


def _parse_big(big: str, ascii_only: bool, starts: dict[int, int], pending: list[int],
               paths: list[Path], datas: list[bytes], folder: str,
               errors: list[TaskFileError]) -> list[Task]:
    out: list[Task] = []
    done: set[int] = set()
    names = _FM_NAMES.findall
    scalar = _scalar
    nulls = _NULLS
    for m in _BULK.finditer(big):
        idx = starts.get(m.start())
        if idx is None:  # pragma: no cover - every match starts at a file's NUL
            continue
        fm_start, fm_end = m.span(_BULK_FM)
        if not ascii_only and _has_odd(big[fm_start:fm_end]):
            continue
        keys = names(big, fm_start - 1, fm_end)
        if len(set(keys)) != len(keys):
            continue  # a repeated key: parse_task reports it
        raw_id, raw_title, tfold, raw_status, lblock = m.group(*_BULK_FIELDS)
        task_id = scalar(raw_id).strip()
        if not task_id or task_id in nulls:
            continue
        if raw_title is not None:
            title = scalar(raw_title)
            if title in nulls:
                title = ""
        else:
            title = " ".join([line.strip(" ") for line in tfold.split("\n")[:-1]])
        status = scalar(raw_status)
        if status in nulls:
            status = ""
        labels: tuple[str, ...] = (
            tuple([scalar(line[4:]) for line in lblock.split("\n")[:-1]]) if lblock else ())
        body = m.end()
        end = big.find("\x00", body)
        if end < 0:
            end = len(big)
        cmd_lines: tuple[str, ...] = ()
        if big.find("verify-cmd", body, end) >= 0:
            cmd_lines = tuple(_verify_cmd_lines(big, body, end))
        verify = tuple([lab for lab in labels if lab.startswith("verify:")]) if labels else ()
        out.append(_new_task(paths[idx], folder, task_id, title, status, labels, verify,
                             cmd_lines, datas[idx]))
        done.add(idx)
    for i in pending + [i for i in starts.values() if i not in done]:
        try:
            out.append(parse_task(paths[i], datas[i], folder))
        except TaskParseError as exc:
            errors.append(TaskFileError(paths[i], exc.line, exc.reason))
    return out


def _task_names(dir_fd: int, prefix: str) -> list[str]:
    """Names matching the CLI's case-sensitive glob `<prefix>-*.md` (in directory order: the
    scan sorts its results by id)."""
    start = f"{prefix}-"
    return [n for n in os.listdir(dir_fd) if n.startswith(start) and n.endswith(".md")
            and len(n) >= len(start) + 3]


def scan(root: Path) -> Scan:
    """Read every task in backlog/tasks and backlog/completed (not drafts, not archive)."""
    root = Path(root).absolute()
    config = read_config(root)
    prefix = config.task_prefix.lower()
    tasks: list[Task] = []
    errors: list[TaskFileError] = []
    for folder in TASK_FOLDERS:
        directory = root / "backlog" / folder
        try:
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            continue  # git keeps no empty folders: a missing tasks/ or completed/ is empty
        except OSError as exc:
            raise BacklogError(directory, f"cannot read the folder: {exc.strerror}") from None
        if directory.is_symlink() and not directory.resolve().is_relative_to(root.resolve()):
            os.close(dir_fd)
            raise BacklogError(directory, "the folder is a symbolic link to outside the repository")
        # pathlib's own fast child constructor (used by iterdir) when this Python has it
        child = getattr(directory, "_make_child_relpath", directory.joinpath)
        paths: list[Path] = []
        datas: list[bytes] = []
        try:
            for name in _task_names(dir_fd, prefix):
                # The common case inline: a small regular file read in one go. Anything else
                # (a link, a directory, an empty or big file, an error) gets `_read_file`.
                try:
                    fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
                except OSError:
                    data = b""
                else:
                    try:
                        data = os.read(fd, _CHUNK)
                    except OSError:
                        data = b""
                    finally:
                        os.close(fd)
                path: Path = child(name)
                if not data or len(data) == _CHUNK:
                    try:
                        data = _read_file(root, path, name, dir_fd)
                    except TaskParseError as exc:
                        errors.append(TaskFileError(path, exc.line, exc.reason))
                        continue
                datas.append(data)
                paths.append(path)
        finally:
            os.close(dir_fd)
        tasks.extend(_parse_many(paths, datas, folder, errors))
    keyed = [(id_key(task.id), task) for task in tasks]
    count: dict[object, int] = {}
    for key, _ in keyed:
        count[key] = count.get(key, 0) + 1
    kept: list[tuple[tuple[int, tuple[int, ...], str, str], Task]] = []
    for key, task in keyed:
        if count[key] == 1:
            if type(key) is tuple:
                kept.append(((0, key[1], task.id, task.folder), task))
            else:
                kept.append(((1, (), task.id, task.folder), task))
            continue
        others = ", ".join(str(t.path.relative_to(root)) for k, t in keyed
                           if k == key and t is not task)
        errors.append(TaskFileError(task.path, _line_of(task.raw, "id"),
                                    f"ambiguous id {task.id}: also in {others}"))
    kept.sort(key=itemgetter(0))
    errors.sort(key=lambda e: str(e.path))
    return Scan(root=root, config=config, tasks=tuple(t for _, t in kept), errors=tuple(errors))


# --------------------------------------------------------------------------- edits


def remove_label(data: bytes, label: str) -> bytes:
    """Remove every label equal to `label` (case-insensitive, as the CLI). No-op when absent."""
    from jobs import backlog_edit

    return backlog_edit.remove_label(data, label)


def add_label(data: bytes, label: str) -> bytes:
    """Append `label` to the labels list unless present (case-insensitive, as the CLI)."""
    from jobs import backlog_edit

    return backlog_edit.add_label(data, label)


def set_status(data: bytes, status: str) -> bytes:
    """Set `status:` to `status`, written as the CLI writes it."""
    from jobs import backlog_edit

    return backlog_edit.set_status(data, status)


def set_updated_date(data: bytes, when: datetime, *, insert: bool = False) -> bytes:
    """Set `updated_date` to `when` in the value's own format (only if the file has the key,
    unless `insert`); see `jobs.backlog_edit.set_updated_date`."""
    from jobs import backlog_edit

    return backlog_edit.set_updated_date(data, when, insert=insert)


def append_notes(data: bytes, text: str) -> bytes:
    """Append `text` to Implementation Notes as `backlog task edit --append-notes` does; see
    `jobs.backlog_edit.append_notes`."""
    from jobs import backlog_edit

    return backlog_edit.append_notes(data, text)


def write_task(path: Path, data: bytes) -> None:
    """Replace the task file atomically (temporary sibling, fsync, rename)."""
    from jobs.fsutil import atomic_write

    atomic_write(Path(path), data)
