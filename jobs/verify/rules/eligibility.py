"""Which tasks are due, waiting, refused or not done: the SPEC's eligibility rules as pure code."""

# Annotations are evaluated here (no `from __future__ import annotations`): a NamedTuple
# would otherwise compile each field's annotation text on every start-up.

import re
from datetime import date, datetime, tzinfo
from functools import lru_cache
from typing import NamedTuple

from jobs.backlog.task import BacklogConfig, Task

DUE, WAITING, REFUSED, NOT_DONE = "due", "waiting", "refused", "not done"

_LABEL = re.compile(r"verify:(\d{4})-(\d{2})-(\d{2})", re.ASCII)
# The only command loop-verify will ever run. Nothing may follow the recipe name.
_COMMAND = re.compile(r"verify-cmd: just (verify-[A-Za-z0-9][A-Za-z0-9_-]*)", re.ASCII)

# Every id the Backlog CLI makes (TASK-12, task-3.1, BACK-7, task-epic-2.1) and nothing that could
# carry a second line.
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)


def today_in(zone: tzinfo) -> date:
    """Today's date in the configured time zone (rule 3's "today")."""
    return datetime.now(zone).date()


# A NamedTuple rather than a dataclass, as in jobs.backlog.task: it keeps `dataclasses` off
# `list`'s path.
class Classified(NamedTuple):
    task: Task
    state: str
    reason: str | None = None
    label: str | None = None
    label_date: date | None = None
    recipe: str | None = None


@lru_cache(maxsize=4096)  # a backlog's labels share a few hundred dates; `list` reads thousands
def label_date(label: str) -> date | None:
    """The calendar date of a well-formed `verify:YYYY-MM-DD` label, else None."""
    m = _LABEL.fullmatch(label)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def recipe_of(line: str) -> str | None:
    """The recipe a `verify-cmd:` line names, when the line is exactly the one allowed form."""
    m = _COMMAND.fullmatch(line.rstrip("\r"))
    return m.group(1) if m else None


def classify(task: Task, config: BacklogConfig, today: date) -> Classified | None:
    """The task's state, or None when it carries no `verify:` label at all."""
    if not task.labels:
        return None  # most tasks: nothing more to look at
    # The Backlog CLI matches labels case-insensitively, so `VERIFY:2026-11-01` is a verify label
    # to its owner: refusing it says so, where ignoring it would never verify anything.
    odd_case = [lb for lb in task.labels
                if lb.lower().startswith("verify:") and not lb.startswith("verify:")]
    if not task.verify_labels and not odd_case:
        return None
    if not config.is_done(task.status):
        only = task.verify_labels[0] if len(task.verify_labels) == 1 else None
        return Classified(task, NOT_DONE, f"status is {task.status!r}, not {config.done_status!r}",
                          label=only, label_date=label_date(only) if only else None)
    if odd_case:
        return Classified(task, REFUSED, f"label {odd_case[0]!r} must be written in lower case "
                          "as verify:YYYY-MM-DD")
    if not _TASK_ID.fullmatch(task.id):
        # The id goes into the commit message and the run's one line per task: a newline in it
        # could forge trailers (`Claude-Session: ...`) or lines of output.
        return Classified(task, REFUSED, f"task id {task.id!r} is not a plain id "
                          "(letters, digits, '.', '_' and '-')")
    if len(task.verify_labels) > 1:
        return Classified(task, REFUSED,
                          f"{len(task.verify_labels)} verify labels: "
                          + ", ".join(repr(lab) for lab in task.verify_labels))
    label = task.verify_labels[0]
    when = label_date(label)
    if when is None:
        return Classified(task, REFUSED, f"bad verify label {label!r}: expected "
                          "verify:YYYY-MM-DD with a real calendar date", label=label)
    if not task.verify_cmd_lines:
        return Classified(task, REFUSED, "no `verify-cmd: just verify-<name>` line",
                          label=label, label_date=when)
    if len(task.verify_cmd_lines) > 1:
        return Classified(task, REFUSED, f"{len(task.verify_cmd_lines)} verify-cmd lines; "
                          "exactly one is allowed", label=label, label_date=when)
    line = task.verify_cmd_lines[0]
    recipe = recipe_of(line)
    if recipe is None:
        return Classified(task, REFUSED, f"malformed verify-cmd {line!r}: only "
                          "`verify-cmd: just verify-<name>` is run", label=label, label_date=when)
    if when > today:
        return Classified(task, WAITING, f"due {when.isoformat()}", label, when, recipe)
    return Classified(task, DUE, None, label, when, recipe)
