"""The run directory: where a run's snapshots, push log and reports live, and its lock."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from jobs.core.errors import UsageError
from jobs.core.fs import atomic_write, exclusive_lock

BEFORE = "audit-before.json"
AFTER = "audit-after.json"
PUSH_LOG = "push-log.jsonl"
REPORT_JSON = "audit-report.json"
REPORT_TXT = "audit-report.txt"
LOCK = ".audit.lock"
ENV_VAR = "LOOP_PI_RUN_DIR"


def resolve_run_dir(arg: str | None, env: Mapping[str, str] = os.environ) -> Path:
    """`--run-dir`, else `$LOOP_PI_RUN_DIR`; without either the command cannot know its run."""
    value = arg if arg else env.get(ENV_VAR, "")
    if not value:
        raise UsageError(f"no run directory: pass --run-dir DIR or set ${ENV_VAR}")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"run directory {path} is not a directory")
    return path.absolute()


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run's exclusive lock, waiting for it: every read-modify-write happens under it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(run_dir / LOCK, wait=True):
        yield


def dump_json(obj: object) -> str:
    """The one JSON form of every file this tool writes: sorted keys, indent 2, trailing newline.

    Byte for byte `json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False)`, but an indent
    sends json to its pure-Python encoder, which spent a tenth of a second on a snapshot of
    8,000 tags; here every string goes through the C escaper and only the nesting is Python."""
    out: list[str] = []
    _dump(obj, "", out)
    out.append("\n")
    return "".join(out)


def _dump(obj: object, indent: str, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(_string(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        inner = indent + "  "
        out.append("{")
        first = True
        for key in sorted(obj):
            out.append("\n" + inner if first else ",\n" + inner)
            first = False
            out.append(_string(key) if isinstance(key, str) else json.dumps(str(key)))
            out.append(": ")
            _dump(obj[key], inner, out)
        out.append("\n" + indent + "}")
    elif isinstance(obj, list | tuple):
        if not obj:
            out.append("[]")
            return
        inner = indent + "  "
        out.append("[")
        for i, item in enumerate(obj):
            out.append(("\n" if i == 0 else ",\n") + inner)
            _dump(item, inner, out)
        out.append("\n" + indent + "]")
    else:
        out.append(json.dumps(obj))


_string = json.encoder.encode_basestring


def write_json(path: Path, obj: object) -> bytes:
    """Write `obj` so that a crash leaves either the old file or the whole new one; the bytes
    written (what is sealed: the file itself may be replaced the moment it is written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name git gave us that is not UTF-8 (a ref `x\xff`) holds a lone surrogate: written as
    # its JSON escape `\udcff`, which reads back as the very same string.
    data = dump_json(obj).encode("utf-8", "backslashreplace")
    atomic_write(path, data)
    return data
