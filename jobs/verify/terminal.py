"""How attempts and tasks are shown on a terminal: one line each, safe to print anywhere.

Kept apart from the orchestrator so `list` and `history` print without importing it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobs.ledger.model import Attempt


def shown(text: str) -> str:
    """Text that any UTF-8 sink takes: undecodable bytes of a file name (kept by the OS and by
    git's output as surrogates) written as `\\xff`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# Compiled on first use (re's own cache keeps it): `list --json` never needs it. C0 and C1
# controls (U+009B is a terminal's CSI in one character), DEL, the line separators, and the
# bidirectional embeddings, overrides, isolates and marks, which reverse what follows on a line.
_LINE_BREAKING = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"


def one_line(text: str) -> str:
    """Text for one line of output: control characters, line separators and bidirectional
    controls shown escaped.

    Ids, reasons and paths come from task files; none may start a line of its own, and a file
    name that is not UTF-8 must not make printing fail on a strict UTF-8 stdout.
    """
    return re.sub(_LINE_BREAKING, lambda m: repr(m.group())[1:-1], shown(text))


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that puts TASK-5 before TASK-10: digit runs compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part.lower())
                 for part in re.split(r"(\d+)", text) if part)


def repo_names(paths: Iterable[str]) -> dict[str, str]:
    """Each repository path's name in output: its folder name, or the shortest path suffix that
    tells it apart from the others (`a/app` and `b/app` for ~/a/app and ~/b/app)."""
    unique = sorted(set(paths))
    parts = {p: [x for x in p.split(os.sep) if x] or [p] for p in unique}
    names: dict[str, str] = {}
    for path in unique:
        mine = parts[path]
        for n in range(1, len(mine) + 1):
            suffix = mine[-n:]
            if not any(o != path and parts[o][-n:] == suffix for o in unique):
                break
        names[path] = os.sep.join(suffix) if len(suffix) < len(mine) else path
    return names


def repo_name(repo: str, names: Mapping[str, str] | None = None) -> str:
    if names is not None and repo in names:
        return names[repo]
    return os.path.basename(repo) or repo


def format_line(result: Attempt, *, dry_run: bool = False,
                names: Mapping[str, str] | None = None) -> str:
    """One attempt as one line. A reason that spans lines (`just`'s own diagnostics, a hook's
    message) continues on indented lines of its own, each made safe like the first."""
    repo = repo_name(result.repo, names)
    what = f"{repo} {result.task_id}" if result.task_id else repo
    parts = [f"{result.verdict:<8} {what}"]
    if result.recipe:
        parts.append(f"just {result.recipe}")
    if result.duration is not None:
        parts.append(f"{result.duration:.1f}s")
    line = "  ".join(parts)
    more: list[str] = []
    if result.reason:
        first, *more = result.reason.splitlines() or [""]
        line += f": {first}"
    if result.commit_sha:
        line += f" [{result.commit_sha[:10]}]"
    return "\n".join([one_line(line), *(f"    {one_line(m)}" for m in more if m.strip())])


_stdout_gone = False


def emit(text: str) -> bool:
    """Write `text` and a newline to stdout now; False once the reader has gone (`| head`) or
    the terminal closed. Never raises: output that cannot be shown must never stop the work
    or become a verdict."""
    global _stdout_gone
    if _stdout_gone:
        return False
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        _stdout_gone = True
        _silence_stdout()
        return False
    return True


def _silence_stdout() -> None:
    # Python flushes stdout once more at exit, which would fail again with a traceback: point
    # the descriptor at /dev/null so that flush succeeds quietly.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):
        pass
