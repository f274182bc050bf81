"""The whole backlog of a repository, read directly (never through the CLI), fast.

`scan` reads every task in `backlog/tasks` and `backlog/completed` (not drafts, not archive; the
CLI's case-sensitive glob `<prefix>-*.md`). Files are read with one open/read/close each
(`dir_fd`, O_NOFOLLOW, O_NONBLOCK); the decoded files are joined with NULs and one `finditer` of
`frontmatter_fast.bulk()` validates every frontmatter the CLI wrote (id/title/status first), sending
every other file through `task.parse_task`. Tests check `scan` against per-file `parse_task`.

A file that cannot be read as a task becomes a `TaskFileError` (path, line, reason) and every
other task is still read; so does a file whose reading fails unexpectedly (the reason names the
exception). Ids that name the same task (compared as the CLI does: case-insensitive, numeric parts
as numbers, so TASK-1 == task-01) in more than one file are all reported as errors: the CLI
refuses to edit an ambiguous id, and so do we.

The model and one-file reading live in `jobs.task`, the YAML reading in `jobs.frontmatter`, the
edits in `jobs.backlog_edit`; the names most callers need are re-exported here.
"""

from __future__ import annotations

import os
from operator import itemgetter
from pathlib import Path

from jobs.frontmatter import (
    FRONTMATTER_RE,
    NULLS,
    FrontmatterYAMLError,
    is_null,
    load_frontmatter,
    load_yaml,
    prequote_at_values,
    split_frontmatter,
)
from jobs.frontmatter_fast import FM_NAMES, bulk, fast_fields, fast_frontmatter, has_odd
from jobs.frontmatter_fast import scalar as _scalar
from jobs.task import (
    CHUNK,
    DEFAULT_STATUSES,
    MAX_TASK_BYTES,
    OPEN_FLAGS,
    TASK_FIELDS,
    TASK_FOLDERS,
    VERIFY_LABEL,
    BacklogConfig,
    BacklogError,
    Scan,
    Task,
    TaskEditError,
    TaskFileError,
    TaskParseError,
    line_of,
    parse_task,
    read_config,
    read_file,
    read_task,
    verify_cmd_lines,
)

# `typing` is for the type checker only (which reads any `if TYPE_CHECKING:` as true): importing
# it costs every command's start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_STATUSES", "FRONTMATTER_RE", "MAX_TASK_BYTES", "VERIFY_LABEL", "BacklogConfig",
    "BacklogError", "FrontmatterYAMLError", "Scan", "Task", "TaskEditError", "TaskFileError",
    "TaskParseError", "fast_fields", "fast_frontmatter", "has_verify_label", "id_key", "is_null",
    "load_frontmatter",
    "load_yaml", "parse_task", "prequote_at_values", "read_config", "read_task", "scan",
    "split_frontmatter", "write_task",
]


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


# A task `scan(..., verify_only=True)` read and checked but does not return: (id, folder,
# directory, file name, raw bytes), enough to report it when its id is ambiguous.
_Unlisted = tuple[str, str, Path, str, bytes]


def _parse_many(directory: Path, names: list[str], datas: list[bytes], folder: str,
                errors: list[TaskFileError], verify_only: bool) -> list[Task | _Unlisted]:
    """`parse_task` for many files, with one regular-expression pass over all of them.

    The decoded files are joined with NULs and `bulk()` validates every frontmatter and captures
    the four fields in one `finditer`; a file it does not take (another key order, a folded title,
    a YAML error, ...) goes through `parse_task`, which gives the same result or the error.
    """
    if not datas:
        return []
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
        return _parse_big(big, True, starts, [], directory, names, datas, folder, errors,
                          verify_only)
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
    return _parse_big(big, big.isascii(), starts, pending, directory, names, datas, folder,
                      errors, verify_only)


_BULK_GROUPS = ("id", "title", "tfold", "status", "lblock")


def _new_task(*values: Any) -> Task:
    """Task(*values) without the frozen dataclass's per-field `object.__setattr__` calls (the
    same object: a frozen dataclass keeps its fields in the instance `__dict__` too); a
    5,000-task scan builds one per file."""
    task: Task = object.__new__(Task)
    task.__dict__.update(zip(TASK_FIELDS, values, strict=True))
    return task


def _parse_big(big: str, ascii_only: bool, starts: dict[int, int], pending: list[int],
               directory: Path, names: list[str], datas: list[bytes], folder: str,
               errors: list[TaskFileError], verify_only: bool) -> list[Task | _Unlisted]:
    out: list[Task | _Unlisted] = []
    done: set[int] = set()
    keys_of = FM_NAMES.findall
    scalar = _scalar
    nulls = NULLS
    pattern = bulk()
    fm_group = pattern.groupindex["fm"]
    fields = tuple(pattern.groupindex[g] for g in _BULK_GROUPS)
    # pathlib's own fast child constructor (used by iterdir) when this Python has it
    child = getattr(directory, "_make_child_relpath", directory.joinpath)
    for m in pattern.finditer(big):
        idx = starts.get(m.start())
        if idx is None:  # pragma: no cover - every match starts at a file's NUL
            continue
        fm_start, fm_end = m.span(fm_group)
        if not ascii_only and has_odd(big[fm_start:fm_end]):
            continue
        keys = keys_of(big, fm_start - 1, fm_end)
        if len(set(keys)) != len(keys):
            continue  # a repeated key: parse_task reports it
        raw_id, raw_title, tfold, raw_status, lblock = m.group(*fields)
        task_id = scalar(raw_id).strip()
        if not task_id or task_id in nulls:
            continue
        if verify_only and (not lblock or "verify:" not in lblock.lower()):
            # No label can read as verify: in any case (the raw text of a label holds the
            # label's own letters, so lower() finds every one that could).
            out.append((task_id, folder, directory, names[idx], datas[idx]))
            done.add(idx)
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
            cmd_lines = tuple(verify_cmd_lines(big, body, end))
        verify = tuple([lab for lab in labels if lab.startswith("verify:")]) if labels else ()
        out.append(_new_task(child(names[idx]), folder, task_id, title, status, labels, verify,
                             cmd_lines, datas[idx]))
        done.add(idx)
    for i in pending + [i for i in starts.values() if i not in done]:
        path = child(names[i])
        try:
            out.append(parse_task(path, datas[i], folder))
        except TaskParseError as exc:
            errors.append(TaskFileError(path, exc.line, exc.reason))
        except Exception as exc:
            # A reader fault on one file is that file's problem alone, never the scan's.
            errors.append(TaskFileError(path, None, f"cannot be read: unexpected "
                                        f"{type(exc).__name__}: {exc}"))
    return out


def has_verify_label(task: Task) -> bool:
    """Whether a label reads as `verify:` in any case (what `list` shows, even to refuse it)."""
    return any(label.lower().startswith("verify:") for label in task.labels)


def _task_names(dir_fd: int, prefix: str) -> list[str]:
    """Names matching the CLI's case-sensitive glob `<prefix>-*.md` (in directory order: the
    scan sorts its results by id)."""
    start = f"{prefix}-"
    return [n for n in os.listdir(dir_fd) if n.startswith(start) and n.endswith(".md")
            and len(n) >= len(start) + 3]


def scan(root: Path, *, verify_only: bool = False) -> Scan:
    """Read every task in backlog/tasks and backlog/completed (not drafts, not archive).

    `verify_only`: return only the tasks `has_verify_label` takes (all that `list` shows); every
    other task is still read and checked, its errors reported and its id counted for ambiguity,
    but costs no `Task`.
    """
    root = Path(root).absolute()
    config = read_config(root)
    prefix = config.task_prefix.lower()
    entries: list[Task | _Unlisted] = []
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
        names: list[str] = []
        datas: list[bytes] = []
        try:
            for name in _task_names(dir_fd, prefix):
                # The common case inline: a small regular file read in one go. Anything else
                # (a link, a directory, an empty or big file, an error) gets `read_file`.
                try:
                    fd = os.open(name, OPEN_FLAGS, dir_fd=dir_fd)
                except OSError:
                    data = b""
                else:
                    try:
                        data = os.read(fd, CHUNK)
                    except OSError:
                        data = b""
                    finally:
                        os.close(fd)
                if not data or len(data) == CHUNK:
                    path = directory / name
                    try:
                        data = read_file(root, path, name, dir_fd)
                    except TaskParseError as exc:
                        errors.append(TaskFileError(path, exc.line, exc.reason))
                        continue
                datas.append(data)
                names.append(name)
        finally:
            os.close(dir_fd)
        entries.extend(_parse_many(directory, names, datas, folder, errors, verify_only))
    keyed = [(id_key(e[0] if isinstance(e, tuple) else e.id), e) for e in entries]
    count: dict[object, int] = {}
    for key, _ in keyed:
        count[key] = count.get(key, 0) + 1
    kept: list[tuple[tuple[int, tuple[int, ...], str, str], Task]] = []
    for key, entry in keyed:
        if count[key] > 1:
            others = ", ".join(str(_path(e).relative_to(root)) for k, e in keyed
                               if k == key and e is not entry)
            task_id = entry[0] if isinstance(entry, tuple) else entry.id
            errors.append(TaskFileError(_path(entry), line_of(_raw(entry), "id"),
                                        f"ambiguous id {task_id}: also in {others}"))
            continue
        if isinstance(entry, tuple) or (verify_only and not has_verify_label(entry)):
            continue
        if type(key) is tuple:
            kept.append(((0, key[1], entry.id, entry.folder), entry))
        else:
            kept.append(((1, (), entry.id, entry.folder), entry))
    kept.sort(key=itemgetter(0))
    errors.sort(key=lambda e: str(e.path))
    return Scan(root=root, config=config, tasks=tuple(t for _, t in kept), errors=tuple(errors))


def _path(entry: Task | _Unlisted) -> Path:
    return entry[2] / entry[3] if isinstance(entry, tuple) else entry.path


def _raw(entry: Task | _Unlisted) -> bytes:
    return entry[4] if isinstance(entry, tuple) else entry.raw


def write_task(path: Path, data: bytes) -> None:
    """Replace the task file atomically (temporary sibling, fsync, rename)."""
    from jobs.fsutil import atomic_write

    atomic_write(Path(path), data)
