"""The push log: one JSON object per pushed ref, appended by record-push and the pre-push hook."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from audit.evidence.git import run_git
from audit.evidence.rundir import PUSH_LOG, run_lock
from audit.model import PushEntry
from jobs.core.errors import InputError
from jobs.core.fs import fsync_dir, read_regular
from jobs.core.urls import redact_url
from jobs.git.run import GitError

FIELDS = ("repo", "remote", "ref", "old", "new", "at", "source")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def is_sha(value: str) -> bool:
    return bool(_SHA.match(value))


def read_push_log(path: Path) -> list[PushEntry]:
    """Every entry of the log, in order. A malformed line fails the whole read: a push log that
    cannot be trusted line by line cannot explain anything."""
    return read_push_log_lines(path)[0]


def read_push_log_lines(path: Path) -> tuple[list[PushEntry], list[str]]:
    """The entries and the lines they were read from (as text, as the ledger seals them), from
    one read of the file: the run can replace it between two reads, and the lines checked
    against their seals must be the very lines whose entries are judged."""
    raws = _raw_lines(path)
    return _parse_lines(path, raws), [raw.decode("utf-8", "surrogateescape") for raw in raws]


def _parse_lines(path: Path, raws: list[bytes]) -> list[PushEntry]:
    fast = _parse_all(raws)
    if fast is not None:
        return fast
    # Something is wrong somewhere: go line by line to say where.
    return [_parse_line(path, number, raw) for number, raw in enumerate(raws, start=1)]


def _parse_all(raws: list[bytes]) -> list[PushEntry] | None:
    """Every line at once (one JSON parse for the whole log), or None when any line is not a
    well-formed entry: 8,000 pushes must not cost 8,000 parser calls."""
    if any(not raw.strip() for raw in raws):
        return None
    try:
        objs = json.loads(b"[" + b",".join(raws) + b"]", object_pairs_hook=_unique)
    except (ValueError, RecursionError):
        return None
    if len(objs) != len(raws):
        return None  # a line holding two values side by side
    entries: list[PushEntry] = []
    for number, obj in enumerate(objs, start=1):
        if not isinstance(obj, dict):
            return None
        values = [obj.get(key) for key in FIELDS]
        strings = [v for v in values if isinstance(v, str) and v and "\0" not in v]
        if len(strings) != len(FIELDS):
            return None
        repo, remote, ref, old, new, at, source = strings
        if not (_SHA.match(old) and _SHA.match(new) and ref.startswith("refs/")):
            return None
        sealed = obj.get("sealed", True)
        if not isinstance(sealed, bool):
            return None
        entries.append(PushEntry(repo, remote, ref, old, new, at, source, number, sealed))
    return entries


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: with a key given twice, json keeps the last
    value and another reader the first, so the line says two things."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return obj


def _parse_line(path: Path, number: int, raw: bytes) -> PushEntry:
    if not raw.strip():
        raise InputError(path, "malformed push-log line: blank line (one JSON object per line)",
                         line=number)
    try:
        obj: Any = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except _Repeated as exc:
        raise InputError(path, f"malformed push-log line: key {exc.key!r} given twice",
                         line=number) from None
    except UnicodeDecodeError:
        raise InputError(path, "malformed push-log line: not UTF-8", line=number) from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed push-log line: {exc.msg} (column {exc.colno})",
                         line=number) from None
    except RecursionError:
        raise InputError(path, "malformed push-log line: nested too deeply",
                         line=number) from None
    except ValueError as exc:  # a number past Python's digit limit, say
        raise InputError(path, f"malformed push-log line: {exc}", line=number) from None
    if not isinstance(obj, dict):
        raise InputError(path, "malformed push-log line: not a JSON object", line=number)
    values: dict[str, str] = {}
    for key in FIELDS:
        if key not in obj:
            raise InputError(path, f"malformed push-log line: missing key {key!r}", line=number)
        value = obj[key]
        if not isinstance(value, str) or not value:
            raise InputError(path, f"malformed push-log line: {key!r} must be a non-empty string",
                             line=number)
        if "\0" in value:
            # No path, ref or remote name holds one; as a path it would crash realpath.
            raise InputError(path, f"malformed push-log line: {key!r} holds a NUL character",
                             line=number)
        values[key] = value
    for key in ("old", "new"):
        if not is_sha(values[key]):
            raise InputError(path, f"malformed push-log line: {key!r} is not a 40-hex SHA "
                             f"({values[key][:50]!r})", line=number)
    if not values["ref"].startswith("refs/"):
        raise InputError(path, f"malformed push-log line: ref {values['ref']!r} is not a full "
                         "ref name", line=number)
    sealed = obj.get("sealed", True)
    if not isinstance(sealed, bool):
        raise InputError(path, "malformed push-log line: 'sealed' must be true or false",
                         line=number)
    return PushEntry(line=number, sealed=sealed, **values)


def _raw_lines(path: Path) -> list[bytes]:
    """The log's lines as bytes, without their newlines; none for a log not written yet."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(path, f"cannot read push log: {exc.strerror or exc}") from None
    raws = data.split(b"\n")
    if raws and raws[-1] == b"":
        raws.pop()  # the empty remainder after the final newline
    return raws


def render_line(entry: dict[str, str | bool]) -> str:
    """One entry as its push-log line (no newline): sorted keys, compact, user-info of URLs
    redacted. The ledger seals exactly this text."""
    safe = {k: redact_url(v) if k in ("remote", "url") and isinstance(v, str) else v
            for k, v in entry.items()}
    # ASCII: a ref name git gave us that is not UTF-8 (a lone surrogate) is stored as its JSON
    # escape, in the file and in the ledger alike.
    return json.dumps(safe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def append_push(run_dir: Path, entry: dict[str, str]) -> None:
    """Append one entry as one line, under the run lock, and make it durable before returning."""
    append_pushes(run_dir, [entry])


def append_pushes(run_dir: Path, entries: list[dict[str, str]]) -> None:
    """Append entries (one line each) in one write under the run lock, then fsync. URLs are
    written with their user-info redacted: a token in a remote URL never reaches the log."""
    append_lines(run_dir, [render_line(dict(e)) for e in entries])


def append_lines(run_dir: Path, lines: list[str]) -> None:
    """Append rendered lines in one write under the run lock, then fsync."""
    line = "".join(text + "\n" for text in lines).encode("utf-8", "surrogateescape")
    if not line:
        return
    with run_lock(run_dir):
        path = run_dir / PUSH_LOG
        created = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(run_dir)


_COMMON_DIRS: dict[str, str] = {}


def repo_identity(path: str) -> str:
    """What makes two paths the same repository: the resolved git common dir (shared by a
    repository and its linked worktrees), else the real path when it is no repository."""
    real = os.path.realpath(path)
    cached = _COMMON_DIRS.get(real)
    if cached is None:
        try:
            out = run_git(real, "rev-parse", "--path-format=absolute", "--git-common-dir",
                          timeout=30)
            cached = "git:" + os.path.realpath(out.strip())
        except GitError:
            cached = "path:" + real
        _COMMON_DIRS[real] = cached
    return cached


def same_repo(a: str, b: str) -> bool:
    """True when `a` and `b` are one repository (a linked worktree counts as its repository);
    another clone of the same remote is another repository."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    return repo_identity(a) == repo_identity(b)
