"""One Backlog.md task: the model, the repository's backlog config, and reading one task file.

Task files are `backlog/tasks/*.md` and `backlog/completed/*.md` (SPEC); statuses, the
default status and the task prefix come from `backlog/config.yml`, as the CLI (1.52) reads
them. A file that cannot be read as a task raises `TaskParseError` (path, line, reason).
"""

# Annotations are evaluated here (no `from __future__ import annotations`): a NamedTuple
# would otherwise compile each field's annotation text on every start-up.

import errno
import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

from jobs.backlog.fences import has_fence, mask_fences
from jobs.backlog.frontmatter import (
    NULLS,
    FrontmatterYAMLError,
    is_null,
    load_frontmatter,
    split_frontmatter,
)
from jobs.backlog.frontmatter_fast import fast_config, fast_fields
from jobs.core.errors import InputError, LoopError

VERIFY_LABEL = re.compile(r"^verify:(\d{4}-\d{2}-\d{2})$")
DEFAULT_STATUSES: tuple[str, ...] = ("To Do", "In Progress", "Done")
MAX_TASK_BYTES = 1024 * 1024
TASK_FOLDERS = ("tasks", "completed")


class TaskEditError(LoopError):
    """An edit that cannot be made safely on this file (reported, file left as it was)."""


class BacklogError(InputError):
    """A repository-level problem: no backlog/ folder, a config.yml that cannot be used."""


class TaskParseError(InputError):
    """One task file that cannot be read as a task; `reason` is the message without the path."""

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.reason = message
        super().__init__(path, message, line)


def _canonical(status: str) -> str:
    return re.sub(r"\s+", "", status).lower()


# Records are typed NamedTuples rather than dataclasses: importing `dataclasses` (and `inspect`
# with it) and building each class cost `list` more start-up time than all else it imports.
class BacklogConfig(NamedTuple):
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


class Task(NamedTuple):
    path: Path
    folder: str
    id: str
    title: str
    status: str
    labels: tuple[str, ...]
    verify_labels: tuple[str, ...]
    verify_cmd_lines: tuple[str, ...]
    raw: bytes


class TaskFileError(NamedTuple):
    path: Path
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message}"


class Scan(NamedTuple):
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
        # Like a task file: a link out of the repository (to /dev/zero, say, which would be
        # read until memory runs out), a FIFO or a file over 1 MiB is refused, never read.
        raw = read_file(Path(root), path, path, None, "backlog's config").decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BacklogError(path, "not valid UTF-8") from None
    except TaskParseError as exc:
        raise BacklogError(path, exc.reason) from None
    data = fast_config(raw)
    try:
        if data is None:
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


def line_of(data: bytes, key: str) -> int | None:
    m = re.search(rb"^" + key.encode() + rb"[ \t]*:", data, re.MULTILINE)
    return data[: m.start()].count(b"\n") + 1 if m else None


# A body line starting with `verify-cmd` once leading spaces and one `- ` marker are gone.
_CMD_LINE = re.compile(r"^ *(?:- )?(verify-cmd[^\n]*?)\r*$", re.MULTILINE)
_COMMENT = r"(?s)<!--.*?(?:-->|\Z)"  # rarely needed: compiled on first use (re's cache)
_OPEN_AT_EOL = re.compile(r"<!--(?:(?!-->)[^\n])*+\n")  # a comment still open at its line's end


def verify_cmd_lines(text: str, start: int = 0, end: int | None = None) -> list[str]:
    """The body's `verify-cmd` lines between `start` and `end`, leaving out those inside a fenced
    code block or an HTML comment (`<!-- ... -->`; one never closed runs to the end of the file,
    as in Markdown). The Backlog.md section markers are comments of one line and hide nothing."""
    stop = len(text) if end is None else end
    if has_fence(text, start):
        # A fenced code block is text: neither its `verify-cmd` lines nor a `<!--` in it count.
        text = mask_fences(text, start)
    found = _CMD_LINE.finditer(text, start, stop)
    if text.find("<!--", start, stop) < 0 or _OPEN_AT_EOL.search(text, start, stop) is None:
        # No comment runs past the end of its line: then none can hide a line that starts
        # with `verify-cmd` (a comment that starts a line makes it no such line).
        return [m.group(1) for m in found]
    body = text[start:stop]
    hidden = [(start + c.start(), start + c.end()) for c in re.finditer(_COMMENT, body)]
    return [m.group(1) for m in found
            if not any(lo <= m.start() < hi for lo, hi in hidden)]


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
    fast = fast_fields(fm_text)
    if fast is not None:
        task_id, title, status, labels_raw = fast
    else:
        try:
            fm = load_frontmatter(fm_text)
        except FrontmatterYAMLError as exc:
            raise TaskParseError(path, exc.message, exc.line) from None
        task_id, title, status, labels_raw = (
            fm.get("id"), fm.get("title"), fm.get("status"), fm.get("labels"))
    if type(task_id) is not str or task_id in NULLS or not task_id.strip():
        raise TaskParseError(path, "missing id", line_of(data, "id"))
    if type(title) is not str or title in NULLS:
        if not is_null(title):
            raise TaskParseError(path, "title is not a text value", line_of(data, "title"))
        title = ""
    if type(status) is not str or status in NULLS:
        if not is_null(status):
            raise TaskParseError(path, "status is not a text value", line_of(data, "status"))
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
                                   "and drop it on its next save)", line_of(data, "labels"))
    cmd_lines: list[str] = []
    if text.find("verify-cmd", span[2]) >= 0:
        cmd_lines = verify_cmd_lines(text, span[2])
    verify = tuple([lab for lab in labels if lab.startswith("verify:")]) if labels else ()
    return Task(path, folder, task_id.strip(), title, status, labels, verify,
                tuple(cmd_lines), data)


CHUNK = 16384  # most task files take one read; a 64 KiB buffer per read costs more
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read_file(root: Path, path: Path, name: str | Path, dir_fd: int | None,
              what: str = "a task file") -> bytes:
    """The bytes of a small regular file; a symbolic link only when it stays inside `root`.

    O_NOFOLLOW makes the open itself refuse a link (ELOOP) and O_NONBLOCK keeps a FIFO from
    hanging the scan, so the common case costs one open, one read and one close; a directory
    fails the read (EISDIR) and an empty read is checked with fstat before it is called empty.
    """
    try:
        fd = os.open(name, OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise TaskParseError(path, f"cannot read: {exc.strerror}") from None
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise TaskParseError(path, "broken symbolic link") from None
        if not target.is_relative_to(Path(root).resolve()):
            raise TaskParseError(path, "symbolic link to outside the repository") from None
        return read_file(root, path, target, None, what)
    try:
        data = os.read(fd, CHUNK)
        if len(data) == CHUNK:  # a big file: read on, up to the limit
            chunks = [data]
            total = len(data)
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_TASK_BYTES:
                    raise TaskParseError(path, f"too large (over the {MAX_TASK_BYTES}-byte "
                                               f"limit for {what})")
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
    return parse_task(path, read_file(Path(root), path, path, None), folder)


