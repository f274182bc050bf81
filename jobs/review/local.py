"""What the review reads from this machine's files: a failing attempt's recipe output (size-capped)
and a task's title, each when the file is here."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import yaml

from jobs.core.fs import read_regular
from jobs.review.model import OutputView
from jobs.review.query import AttemptRow

FULL_CAP = 64 * 1024   # bytes of output shown inline: the end of it, where failures are said
TAIL_LINES = 20


def _inside(path: str | Path, folder: str | Path) -> bool:
    """Whether `path`, its links followed, lies in `folder` (its links followed too)."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base and real != base


class OutputReader:
    """Reads a failing attempt's output, but only a file in this machine's `runs` folder (where
    loop-verify writes every output): a ledger row is text anyone who can write the ledger (any
    machine of a shared one) may have set, and the report must not carry ~/.ssh/id_ed25519."""

    def __init__(self, machine: str, machine_column: bool, runs: Path) -> None:
        self.machine = machine
        self.machine_column = machine_column
        self.runs = runs

    def __call__(self, row: AttemptRow) -> OutputView:
        path = row.output_path
        if not path:
            return OutputView(missing="no output file was recorded for this attempt")
        if self.machine_column and row.machine and row.machine != self.machine:
            return OutputView(missing=f"the output file is on another machine ({row.machine}): "
                                      f"{path}")
        if not _inside(path, self.runs):
            return OutputView(missing=f"the output file {path} is not in this machine's state "
                                      f"directory ({self.runs}): not read")
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                start = max(0, size - FULL_CAP)
                fh.seek(start)
                data = fh.read(FULL_CAP)
        except FileNotFoundError:
            where = ("no longer exists on this machine" if row.machine == self.machine
                     else "is not on this machine (another machine's, or removed)")
            return OutputView(missing=f"the output file {path} {where}")
        except OSError as exc:
            return OutputView(missing=f"the output file {path} cannot be read: "
                                      f"{exc.strerror or exc}")
        text = data.decode("utf-8", errors="replace")
        if start:
            # Cut mid-line (maybe mid-character): start at the first whole line.
            text = text.partition("\n")[2]
        lines = text.splitlines()
        return OutputView(tail=lines[-TAIL_LINES:], full=text, truncated_bytes=start)


_TITLE = re.compile(rb"^title:[ \t]*(.*?)[ \t]*\r?$", re.MULTILINE)


@functools.cache
def _is_dir(repo: str) -> bool:
    # Most rows of a shared ledger name clones on other machines: one stat per repository.
    return os.path.isdir(repo)


def task_title(repo: str, task_path: str | None) -> str | None:
    """The `title:` of the task file, where it is now (a reopened task moved to tasks/)."""
    if not task_path:
        return None
    root, name = Path(repo), Path(task_path).name
    if not _is_dir(repo):
        return None
    for candidate in (root / task_path, root / "backlog" / "tasks" / name,
                      root / "backlog" / "completed" / name):
        if not _inside(candidate, root / "backlog"):
            continue  # a ledger row's path is text: only the repository's backlog is read
        try:
            head = read_regular(candidate, 8192)  # the head alone: a task file may be any size
        except OSError:
            continue
        front = head.split(b"\n---", 1)[0] if head.startswith(b"---") else b""
        match = _TITLE.search(front)
        if match is None:
            return None
        raw = match.group(1).decode("utf-8", errors="replace")
        if raw[:1] in ("'", '"'):
            try:
                value = yaml.safe_load(raw)
            except yaml.YAMLError:
                return raw
            return value if isinstance(value, str) else raw
        return raw
    return None
