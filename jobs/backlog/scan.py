"""The whole backlog of a repository, read directly (never through the CLI), fast.

`scan` reads every task in `backlog/tasks` and `backlog/completed` (not drafts, not archive):
every `*.md` there, as the SPEC defines a task file, whatever the task prefix. Files are read with
one open/read/close each (`dir_fd`, O_NOFOLLOW, O_NONBLOCK); the decoded files are joined with
NULs and one `findall` of `frontmatter_fast.bulk()` validates every frontmatter the CLI wrote
(id/title/status first), sending every other file through `task.parse_task` (a big backlog is
first matched with `frontmatter_fast.canonical()`, the CLI's own key order). Tests check `scan`
against per-file `parse_task`. `scan(root, verify_only=True)` (what `list` reads) builds a `Task`
only for tasks with a verify label, yet checks and reports every file as a full scan does.

A file that cannot be read as a task becomes a `TaskFileError` (path, line, reason) and every
other task is still read; so does a file whose reading fails unexpectedly (the reason names the
exception). Ids that name the same task (compared as the CLI does: case-insensitive, numeric parts
as numbers, so TASK-1 == task-01) in more than one file are all reported as errors: the CLI
refuses to edit an ambiguous id, and so do we.

The model and one-file reading live in `jobs.backlog.task`, the YAML reading in
`jobs.backlog.frontmatter`, the edits in `jobs.backlog.edit`; the names most callers need are
re-exported here.
"""

# Annotations are evaluated here (no `from __future__ import annotations`): a NamedTuple
# would otherwise compile each field's annotation text on every start-up.

import os
import re
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from jobs.backlog.frontmatter import (
    FRONTMATTER_RE,
    NULLS,
    FrontmatterYAMLError,
    is_null,
    load_frontmatter,
    load_yaml,
    prequote_at_values,
    split_frontmatter,
)
from jobs.backlog.frontmatter_fast import (
    FM_NAMES,
    bulk,
    canonical,
    fast_fields,
    fast_frontmatter,
    has_odd,
)
from jobs.backlog.frontmatter_fast import scalar as _scalar
from jobs.backlog.task import (
    CHUNK,
    DEFAULT_STATUSES,
    MAX_TASK_BYTES,
    OPEN_FLAGS,
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

__all__ = [
    "DEFAULT_STATUSES", "FRONTMATTER_RE", "MAX_TASK_BYTES", "VERIFY_LABEL", "BacklogConfig",
    "BacklogError", "FrontmatterYAMLError", "Scan", "Task", "TaskEditError", "TaskFileError",
    "TaskParseError", "fast_fields", "fast_frontmatter", "has_verify_label", "id_key", "is_null",
    "load_frontmatter", "load_yaml", "may_clash", "parse_task", "prequote_at_values",
    "read_config", "read_task", "scan", "split_frontmatter", "write_task",
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


class _Unlisted(NamedTuple):
    """A task `scan(..., verify_only=True)` read and checked but does not return: enough to
    report it when its id is ambiguous."""

    id: str
    folder: str
    directory: Path
    name: str
    raw: bytes


def _parse_many(directory: Path, names: list[str], datas: list[bytes], folder: str,
                errors: list[TaskFileError], verify_only: bool) -> list[Task | _Unlisted]:
    """`parse_task` for many files, with one regular-expression pass over all of them.

    Each file's head (`_head`: up to the line that closes its frontmatter) is decoded, the heads
    are joined with NULs, and `bulk()` validates every frontmatter and captures the four fields
    in one `findall`; a file it does not take (another key order, a folded title, a YAML error,
    ...) goes through `parse_task`, which gives the same result or the error. Every file is
    still checked whole: one that is not UTF-8 or holds a NUL goes to `parse_task` too.
    """
    if not datas:
        return []
    heads = [data if len(data) < _CUT_FROM else _head(data) for data in datas]
    whole = b"".join(datas)
    if whole.isascii() and b"\x00" not in whole and all(datas):
        # All ASCII, so bytes are characters: the heads decode at once.
        big = b"\x00".join([b"", *heads]).decode("ascii")
        return _parse_big(big, True, list(range(len(datas))), [], directory, names, datas,
                          heads, folder, errors, verify_only)
    texts: list[str] = []
    members: list[int] = []  # the files in `big`, in order
    pending: list[int] = []
    for i, data in enumerate(datas):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pending.append(i)
            continue
        if "\x00" in text or not text:
            pending.append(i)
            continue
        members.append(i)
        texts.append(heads[i].decode("utf-8"))
    big = "\x00" + "\x00".join(texts)
    return _parse_big(big, big.isascii(), members, pending, directory, names, datas, heads,
                      folder, errors, verify_only)


# Files at least this long are cut to their head: matching a body costs the patterns about as
# much as finding where it starts when it is a few hundred bytes long.
_CUT_FROM = 1024


def _head(data: bytes) -> bytes:
    """The file up to the end of the first line that starts with `---` after its first (the
    line that closes a frontmatter), or all of it. The patterns need no more: what follows is
    the body, which only a task with a verify label has searched (for verify-cmd lines)."""
    close = data.find(b"\n---", 3)
    if close < 0:
        return data
    end = data.find(b"\n", close + 4)
    return data if end < 0 else data[:end + 1]


# From this many files on, a scan first tries the CLI's own key order (CANONICAL_PATTERN): it
# costs ~1 ms more to compile than the general pattern and saves the ~3 us per file of looking
# for a repeated key.
_CANONICAL_FROM = 500


def _parse_big(big: str, ascii_only: bool, members: list[int], pending: list[int],
               directory: Path, names: list[str], datas: list[bytes], heads: list[bytes],
               folder: str, errors: list[TaskFileError],
               verify_only: bool) -> list[Task | _Unlisted]:
    """The tasks and unlisted tasks of the files `members` holds (their heads joined in `big`,
    no NUL inside one), in file order, then those `parse_task` reads."""
    keys_of = FM_NAMES.findall
    scalar = _scalar
    nulls = NULLS
    # pathlib's own fast child constructor (used by iterdir) when this Python has it
    child = getattr(directory, "_make_child_relpath", directory.joinpath)
    slots: list[Task | _Unlisted | None] = [None] * len(datas)  # in file order
    failed: list[int] = []
    # (the pattern, whether a key may repeat in what it takes); each compiled only when a file
    # is left for it: the general pattern costs ~2 ms, and the canonical one takes every file
    # the CLI wrote
    passes = [(bulk, True)]
    if len(members) >= _CANONICAL_FROM:
        passes.insert(0, (canonical, False))
    todo = members
    for compiled, may_repeat in passes:
        if not todo:
            break
        pattern = compiled()
        if todo is not members:  # the files the first pass did not take
            big = "\x00" + "\x00".join([heads[i].decode("utf-8") for i in todo])
            ascii_only = big.isascii()
        found = pattern.findall(big)  # one match per file in `big`, in order
        if len(found) != len(todo):
            found, todo, failed = [], [], failed + todo  # pragma: no cover - cannot happen
        retry: list[int] = []
        for idx, (fm, raw_id, raw_title, tfold, raw_status, lblock, body) in zip(
                todo, found, strict=True):
            if not fm:
                retry.append(idx)
                continue
            if not ascii_only and has_odd(fm):
                failed.append(idx)
                continue
            if may_repeat:
                keys = keys_of(fm)
                if len(set(keys)) != len(keys):
                    failed.append(idx)  # a repeated key: parse_task reports it
                    continue
            task_id = scalar(raw_id).strip()
            if not task_id or task_id in nulls:
                failed.append(idx)
                continue
            if verify_only and (not lblock or "verify:" not in lblock.lower()):
                # No label can read as verify: in any case (the raw text of a label holds the
                # label's own letters, so lower() finds every one that could).
                slots[idx] = _Unlisted(task_id, folder, directory, names[idx], datas[idx])
                continue
            if raw_title:
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
            body += datas[idx][len(heads[idx]):].decode("utf-8")  # checked whole: no error
            cmd_lines = tuple(verify_cmd_lines(body)) if "verify-cmd" in body else ()
            verify = tuple([lab for lab in labels if lab.startswith("verify:")]) if labels else ()
            slots[idx] = Task(child(names[idx]), folder, task_id, title, status, labels, verify,
                              cmd_lines, datas[idx])
        todo = retry
    out = [entry for entry in slots if entry is not None]
    for i in pending + sorted(failed + todo):
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


def _task_names(dir_fd: int) -> list[str]:
    """Names matching the SPEC's `*.md`, whatever the task prefix (in directory order: the scan
    sorts its results by id). A hidden name matches no `*.md`: our own temporary files are."""
    return [n for n in os.listdir(dir_fd) if n.endswith(".md") and not n.startswith(".")]


def scan(root: Path, *, verify_only: bool = False) -> Scan:
    """Read every task in backlog/tasks and backlog/completed (not drafts, not archive).

    `verify_only`: return only the tasks `has_verify_label` takes (all that `list` shows); every
    other task is still read and checked, its errors reported and its id counted for ambiguity,
    but costs no `Task`.
    """
    root = Path(root).absolute()
    config = read_config(root)
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
            for name in _task_names(dir_fd):
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
    ids = [entry.id for entry in entries]
    keys: list[object] | None = None
    clashing: dict[object, list[Task | _Unlisted]] = {}  # key -> every entry it names
    if may_clash(ids):  # compare them all as the CLI does
        keys = [id_key(i) for i in ids]
        named: dict[object, list[Task | _Unlisted]] = {}
        for key, entry in zip(keys, entries, strict=True):
            named.setdefault(key, []).append(entry)
        clashing = {key: same for key, same in named.items() if len(same) > 1}
    kept: list[tuple[tuple[int, tuple[int, ...], str, str], Task]] = []
    for n, entry in enumerate(entries):
        if keys is not None and keys[n] in clashing:
            others = ", ".join(str(_path(e).relative_to(root)) for e in clashing[keys[n]]
                               if e is not entry)
            errors.append(TaskFileError(_path(entry), line_of(entry.raw, "id"),
                                        f"ambiguous id {ids[n]}: also in {others}"))
            continue
        if isinstance(entry, _Unlisted) or (verify_only and not entry.verify_labels
                                             and not has_verify_label(entry)):
            continue
        key = keys[n] if keys is not None else id_key(entry.id)
        if type(key) is tuple:
            kept.append(((0, key[1], entry.id, entry.folder), entry))
        else:
            kept.append(((1, (), entry.id, entry.folder), entry))
    kept.sort(key=itemgetter(0))
    errors.sort(key=lambda e: str(e.path))
    return Scan(root=root, config=config, tasks=tuple(t for _, t in kept), errors=tuple(errors))


# Zeros that lead a number in an id (TASK-007, zero_padded_ids in the CLI's config).
_LEADING_ZEROS = re.compile(r"(?<=[-.])0+(?=[0-9])")


def may_clash(ids: list[str]) -> bool:
    """Whether two of these ids might name one task (False: `id_key` tells them all apart).

    `id_key` tells ids apart by their upper-case text, or by their prefix and numbers; numbers
    are equal when their digits are, once leading zeros are gone. So ids whose upper-case texts
    all differ with leading zeros dropped are all different tasks, and a scan need not key them.
    """
    if len(set(map(str.upper, ids))) != len(ids):
        return True
    joined = "\n".join(ids)
    if _LEADING_ZEROS.search(joined) is None:
        return False
    return len(set(_LEADING_ZEROS.sub("", joined.upper()).split("\n"))) != len(ids)


def _path(entry: Task | _Unlisted) -> Path:
    return entry.directory / entry.name if isinstance(entry, _Unlisted) else entry.path


def write_task(path: Path, data: bytes) -> None:
    """Replace the task file atomically (temporary sibling, fsync, rename)."""
    from jobs.core.fs import atomic_write

    atomic_write(Path(path), data)
