"""What the ledger records of one attempt, as plain data: its verdict, the state of its task
edit, and the Attempt itself. No database here: the pure rules read these types too, and the
tables and their conversion live in jobs/ledger/rows.py."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """What one attempt came to. A StrEnum: stored in the ledger and printed as its value."""

    PASS = "pass"                # the recipe exited 0: the verify label is removed
    FAIL = "fail"                # non-zero exit, no justfile, recipe missing: the task reopens
    TIMEOUT = "timeout"          # killed at the time limit: reopens like a failure
    REFUSED = "refused"          # the task's verify label or verify-cmd is not acceptable
    SKIPPED = "skipped"          # the repository (or the rest of it) could not be worked on
    LOCKED = "locked"            # another loop-verify holds the repository
    DRIFT = "drift"              # the recipe changed the work tree
    ERROR = "error"              # an infrastructure fault: the task is left as it was
    INTERRUPTED = "interrupted"  # a stop signal came before the task was verified


# Exit 1: a verification failed.
FAILING = frozenset({Verdict.FAIL, Verdict.TIMEOUT, Verdict.DRIFT})
# Exit 3 (when nothing failed): something could not be checked.
UNCHECKED = frozenset({Verdict.SKIPPED, Verdict.LOCKED, Verdict.ERROR, Verdict.INTERRUPTED})
# A verdict that edits the task.
WRITTEN = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.TIMEOUT})


class EditState(StrEnum):
    """The life of a task edit. A StrEnum: stored in the ledger as its value."""

    NONE = "none"              # the verdict writes nothing (or nothing yet)
    PENDING = "pending"        # written, or about to be, and not yet committed
    COMMITTED = "committed"    # its commit landed
    RESTORED = "restored"      # the commit was refused or undone and the file put back
    ABANDONED = "abandoned"    # the run died before the file was written


@dataclass
class Attempt:
    run_id: str
    started_at: datetime
    repo: str
    verdict: str
    ended_at: datetime | None = None
    task_id: str | None = None
    task_path: str | None = None
    label_date: str | None = None
    recipe: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    duration: float | None = None
    output_path: str | None = None
    commit_sha: str | None = None
    edit_state: EditState = EditState.NONE
    before_sha256: str | None = None
    after_sha256: str | None = None
    edit_paths: list[str] = field(default_factory=list)
    commit_message: str | None = None
    machine: str | None = None
    # The row's identity across retries and the spool; set when first saved.
    uid: str | None = None
    # The machine whose live or finished claim made this attempt a `skipped` one.
    claimed_by: str | None = None
    # A written failure's summary exactly as appended to the task's notes (LF line ends): the
    # review shows the task's own words, which the other columns cannot rebuild.
    summary: str | None = None
    # The repository's identity across clones, as the claims name it (the normalised URL of the
    # branch's remote, else the clone's path): the review groups every clone and machine by it.
    repo_identity: str | None = None
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return _times_to_json(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        values = _times_from_json(data)
        if values.get("edit_state") is not None:
            values["edit_state"] = EditState(values["edit_state"])
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


# Attempts and runs travel as JSON through the spool: their two moments as ISO UTC strings.
_MOMENTS = ("started_at", "ended_at")
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def _times_to_json(out: dict[str, Any]) -> dict[str, Any]:
    for key in _MOMENTS:
        value = out[key]
        out[key] = iso_utc(value) if value is not None else None
    return out


def _times_from_json(data: dict[str, Any]) -> dict[str, Any]:
    values = dict(data)
    for key in _MOMENTS:
        if values.get(key) is not None:
            values[key] = datetime.strptime(values[key], _ISO).replace(tzinfo=UTC)
    return values


def iso_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(_ISO)


def naive_utc(moment: datetime) -> datetime:
    # Stored naive in UTC: SQLite keeps no zone, and every reader here means UTC.
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


# What started a run (SPEC "Runs"): the command line, the LaunchAgent, the systemd timer, or
# `loop-verify serve`.
TRIGGERS = ("manual", "launchd", "systemd", "serve")


@dataclass
class Run:
    """One `loop-verify run` (or one run `serve` started), as the `runs` table records it."""

    run_id: str
    machine: str
    trigger: str
    started_at: datetime
    config: str | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    # verdict -> number of attempts with it in this run (only the verdicts that occurred)
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return _times_to_json(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        values = _times_from_json(data)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})
