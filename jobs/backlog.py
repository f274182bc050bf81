"""Backlog.md task files, read directly (never through the CLI) and edited losslessly.

Reading follows the Backlog.md CLI (1.52): `backlog/config.yml` gives the statuses, the default
status and the task prefix; task files are `backlog/tasks/<prefix>-*.md` and
`backlog/completed/<prefix>-*.md` (case-sensitive glob, as the CLI's), YAML frontmatter between
`---` lines (a BOM and CRLF allowed), bare `@name` assignee/reporter values pre-quoted as the CLI
does. Values are read as text (PyYAML's C base loader), which is how js-yaml reads the labels the
CLI writes (`yes`, `123` and a bare date stay text) and avoids YAML 1.1 type guessing.

A file that cannot be read as a task becomes a `TaskFileError` (path, line, reason) and every
other task is still read. Ids that name the same task (compared as the CLI does: case-insensitive,
numeric parts as numbers, so TASK-1 == task-01) in more than one file are all reported as errors:
the CLI refuses to edit an ambiguous id, and so do we.

The edits live in `jobs.backlog_edit` and are re-exported here; see its docstring for how each
keeps the file byte-for-byte outside the lines it must change.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from jobs import backlog_edit as _edit
from jobs.backlog_edit import (
    FRONTMATTER_RE,
    FrontmatterYAMLError,
    TaskEditError,
    is_null,
    load_frontmatter,
)
from jobs.errors import InputError
from jobs.fsutil import atomic_write

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


def _text(value: object) -> str | None:
    if is_null(value):
        return ""
    return value if isinstance(value, str) else None


def _line_of(data: bytes, key: str) -> int | None:
    m = re.search(rb"^" + key.encode() + rb"[ \t]*:", data, re.MULTILINE)
    return data[: m.start()].count(b"\n") + 1 if m else None


def parse_task(path: Path, data: bytes, folder: str) -> Task:
    """Read one task file's bytes; raises `TaskParseError` naming the path and line."""
    if not data:
        raise TaskParseError(path, "empty file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskParseError(path, "not valid UTF-8", line) from None
    m = FRONTMATTER_RE.match(text)
    if m is None:
        raise TaskParseError(path, "no frontmatter (the file must start with a '---' line "
                                   "and have a closing '---' line)", 1)
    try:
        fm: dict[str, Any] = load_frontmatter(m.group(1))
    except FrontmatterYAMLError as exc:
        raise TaskParseError(path, exc.message, exc.line) from None
    task_id = fm.get("id")
    if is_null(task_id) or not isinstance(task_id, str) or not task_id.strip():
        raise TaskParseError(path, "missing id", _line_of(data, "id"))
    title = _text(fm.get("title"))
    status = _text(fm.get("status"))
    if title is None:
        raise TaskParseError(path, "title is not a text value", _line_of(data, "title"))
    if status is None:
        raise TaskParseError(path, "status is not a text value", _line_of(data, "status"))
    labels_raw = fm.get("labels")
    if is_null(labels_raw):
        labels: tuple[str, ...] = ()
    elif isinstance(labels_raw, list) and all(isinstance(x, str) for x in labels_raw):
        labels = tuple(labels_raw)
    else:
        kind = "a list of text values" if isinstance(labels_raw, list) else "a list"
        raise TaskParseError(path, f"labels is not {kind} (the CLI would read it as no labels "
                                   "and drop it on its next save)", _line_of(data, "labels"))
    body = text[m.end():]
    cmd_lines: list[str] = []
    if "verify-cmd" in body:
        for raw_line in body.split("\n"):
            s = raw_line.rstrip("\r").lstrip(" ")
            if s.startswith("- "):
                s = s[2:]
            if s.startswith("verify-cmd"):
                cmd_lines.append(s)
    return Task(
        path=path,
        folder=folder,
        id=task_id.strip(),
        title=title,
        status=status,
        labels=labels,
        verify_labels=tuple(lab for lab in labels if lab.startswith("verify:")),
        verify_cmd_lines=tuple(cmd_lines),
        raw=data,
    )


def read_task(root: Path, path: Path, folder: str) -> Task:
    """Read and parse one task file, refusing anything that is not a small regular file in root."""
    root = Path(root)
    path = Path(path)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise TaskParseError(path, f"cannot read: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise TaskParseError(path, "broken symbolic link") from None
        real_root = root.resolve()
        if not target.is_relative_to(real_root):
            raise TaskParseError(path, "symbolic link to outside the repository")
        st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise TaskParseError(path, "not a regular file")
    if st.st_size > MAX_TASK_BYTES:
        raise TaskParseError(path, f"too large ({st.st_size} bytes; limit {MAX_TASK_BYTES})")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TASK_BYTES + 1)
    except OSError as exc:
        raise TaskParseError(path, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_TASK_BYTES:
        raise TaskParseError(path, f"too large (over {MAX_TASK_BYTES} bytes)")
    return parse_task(path, data, folder)


# --------------------------------------------------------------------------- the whole backlog

_ID_RE = re.compile(r"^([A-Za-z]+)-(\d+(?:\.\d+)*)$")


def id_key(task_id: str) -> tuple[str, tuple[int, ...]] | str:
    """Identity of a task id as the CLI compares them: TASK-1, task-1 and TASK-01 are one task."""
    m = _ID_RE.match(task_id.strip())
    if m is None:
        return task_id.strip().upper()
    return m.group(1).upper(), tuple(int(p) for p in m.group(2).split("."))


def _sort_key(task: Task) -> tuple[int, tuple[int, ...], str, str]:
    k = id_key(task.id)
    nums = k[1] if isinstance(k, tuple) else ()
    return (0 if isinstance(k, tuple) else 1, nums, task.id, task.folder)


def _task_files(folder: Path, prefix: str) -> list[str]:
    """Names matching the CLI's case-sensitive glob `<prefix>-*.md` (a missing folder is empty)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return []
    start = f"{prefix}-"
    return sorted(n for n in names if n.startswith(start) and n.endswith(".md")
                  and len(n) >= len(start) + 3)


def scan(root: Path) -> Scan:
    """Read every task in backlog/tasks and backlog/completed (not drafts, not archive)."""
    root = Path(root).absolute()
    config = read_config(root)
    prefix = config.task_prefix.lower()
    tasks: list[Task] = []
    errors: list[TaskFileError] = []
    for folder in TASK_FOLDERS:
        directory = root / "backlog" / folder
        for name in _task_files(directory, prefix):
            path = directory / name
            try:
                tasks.append(read_task(root, path, folder))
            except TaskParseError as exc:
                errors.append(TaskFileError(path, exc.line, exc.reason))
    by_id: dict[object, list[Task]] = {}
    for task in tasks:
        by_id.setdefault(id_key(task.id), []).append(task)
    kept: list[Task] = []
    for task in tasks:
        same = by_id[id_key(task.id)]
        if len(same) == 1:
            kept.append(task)
            continue
        others = ", ".join(str(t.path.relative_to(root)) for t in same if t is not task)
        errors.append(TaskFileError(task.path, _line_of(task.raw, "id"),
                                    f"ambiguous id {task.id}: also in {others}"))
    kept.sort(key=_sort_key)
    errors.sort(key=lambda e: str(e.path))
    return Scan(root=root, config=config, tasks=tuple(kept), errors=tuple(errors))


# --------------------------------------------------------------------------- edits


def remove_label(data: bytes, label: str) -> bytes:
    return _edit.remove_label(data, label)


def add_label(data: bytes, label: str) -> bytes:
    return _edit.add_label(data, label)


def set_status(data: bytes, status: str) -> bytes:
    return _edit.set_status(data, status)


def set_updated_date(data: bytes, when: datetime, *, insert: bool = False) -> bytes:
    return _edit.set_updated_date(data, when, insert=insert)


def append_notes(data: bytes, text: str) -> bytes:
    return _edit.append_notes(data, text)


for _fn in (remove_label, add_label, set_status, set_updated_date, append_notes):
    _fn.__doc__ = getattr(_edit, _fn.__name__).__doc__


def write_task(path: Path, data: bytes) -> None:
    """Replace the task file atomically (temporary sibling, fsync, rename)."""
    atomic_write(Path(path), data)

