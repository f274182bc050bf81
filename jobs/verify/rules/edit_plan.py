"""The edit plan: which bytes a verdict writes, to which path, committed with which message."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from jobs.backlog import scan as backlog
from jobs.verify.rules import eligibility
from jobs.verify.rules import transition as verdicts


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class EditPlan:
    source: Path              # the task file as it is
    target: Path              # where the edited file goes (backlog/tasks/ for a reopened task)
    before: bytes
    after: bytes
    paths: list[str]          # repository-relative: the source, then the target when it moves
    message: str
    note: str | None = None   # what a failure appends to the task's notes

    @property
    def moves(self) -> bool:
        return self.target != self.source


def unsafe_to_edit(task: eligibility.Classified, config: backlog.BacklogConfig, timeout: float,
                   now: datetime) -> str | None:
    """Why neither verdict could be written into this file safely, or None."""
    assert task.recipe is not None and task.label is not None
    if task.task.path.is_symlink():
        # Replacing it atomically would commit a regular file in the link's place and leave the
        # file it points to unchanged.
        return "cannot edit the task file safely: it is a symbolic link"
    try:
        for verdict in (verdicts.PASS, verdicts.FAIL):
            probe = verdicts.Outcome(verdict, task.recipe, exit_code=1, timeout=timeout)
            verdicts.apply(task.task.raw, probe, task.label, config.reopen_status, now)
    except backlog.TaskEditError as exc:
        return f"cannot edit the task file safely: {exc}"
    return None


def plan(root: Path, task: eligibility.Classified, config: backlog.BacklogConfig,
         outcome: verdicts.Outcome, current: bytes, now: datetime) -> EditPlan | str:
    """The edit for this verdict given the file's current bytes, or why there can be none."""
    assert task.label is not None
    if current != task.task.raw:
        return "the task file changed during the run"
    try:
        after = verdicts.apply(current, outcome, task.label, config.reopen_status, now)
    except backlog.TaskEditError as exc:
        return f"cannot edit the task file safely: {exc}"
    source = target = task.task.path
    if outcome.verdict != verdicts.PASS and task.task.folder == "completed":
        # The Backlog CLI and board ignore completed/: a reopened task must be seen again.
        target = root / "backlog" / "tasks" / source.name
        if target.exists():
            return f"cannot reopen {task.task.id}: {target.relative_to(root)} exists"
    paths = [str(source.relative_to(root))]
    if target != source:
        paths.append(str(target.relative_to(root)))
    return EditPlan(source, target, current, after, paths,
                    verdicts.commit_message(task.task.id, outcome),
                    verdicts.written_note(outcome, now))
