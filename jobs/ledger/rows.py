"""The ledger's tables and the Attempt row, with their conversion to and from the database.

Times are stored naive in UTC; the schema only grows (ADDED_COLUMNS are added to older ledgers
in place by `jobs.ledger.store`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from jobs.verify.rules.verdict import Verdict

VERDICTS = tuple(Verdict)
# The life of a task edit: pending (written or about to be), then committed, restored (the commit
# was refused and the file put back) or abandoned (the crash came before the file was written).
EDIT_STATES = ("none", "pending", "committed", "restored", "abandoned")

_metadata = sa.MetaData()
attempts = sa.Table(
    "attempts", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False, index=True),
    sa.Column("started_at", sa.DateTime, nullable=False, index=True),
    sa.Column("ended_at", sa.DateTime),
    sa.Column("repo", sa.Text, nullable=False, index=True),
    sa.Column("task_id", sa.String(128)),
    sa.Column("task_path", sa.Text),
    sa.Column("label_date", sa.String(10)),
    sa.Column("recipe", sa.String(256)),
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("exit_code", sa.Integer),
    sa.Column("duration", sa.Float),
    sa.Column("output_path", sa.Text),
    sa.Column("commit_sha", sa.String(64)),
    sa.Column("edit_state", sa.String(16), nullable=False, default="none"),
    sa.Column("before_sha256", sa.String(64)),
    sa.Column("after_sha256", sa.String(64)),
    sa.Column("edit_paths", sa.Text),
    sa.Column("commit_message", sa.Text),
    # Added for several machines on one ledger (older ledgers get them by ALTER TABLE).
    sa.Column("machine", sa.String(128), index=True),
    sa.Column("uid", sa.String(36), index=True, unique=True),
    sa.Column("claimed_by", sa.String(128)),
)
# One row per due verification claimed by a machine (see jobs.ledger.claims).
claims = sa.Table(
    "claims", _metadata,
    sa.Column("key", sa.String(64), primary_key=True),  # sha256 of identity, task, label date
    sa.Column("identity", sa.Text, nullable=False),
    sa.Column("task_id", sa.String(128), nullable=False),
    sa.Column("label_date", sa.String(10), nullable=False),
    sa.Column("machine", sa.String(128), nullable=False),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("repo", sa.Text),
    sa.Column("claimed_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("verdict", sa.String(16)),
)
# Columns an older ledger may lack, added in place when it is opened.
ADDED_COLUMNS = ("machine", "uid", "claimed_by")


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
    edit_state: str = "none"
    before_sha256: str | None = None
    after_sha256: str | None = None
    edit_paths: list[str] = field(default_factory=list)
    commit_message: str | None = None
    machine: str | None = None
    # The row's identity across retries and the spool; set when first saved.
    uid: str | None = None
    # The machine whose live or finished claim made this attempt a `skipped` one.
    claimed_by: str | None = None
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("started_at", "ended_at"):
            value = out[key]
            out[key] = iso_utc(value) if value is not None else None
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        values = dict(data)
        for key in ("started_at", "ended_at"):
            if values.get(key) is not None:
                values[key] = datetime.strptime(values[key], "%Y-%m-%dT%H:%M:%SZ").replace(
                    tzinfo=UTC)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def iso_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def naive_utc(moment: datetime) -> datetime:
    # Stored naive in UTC: SQLite keeps no zone, and every reader here means UTC.
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def row_values(attempt: Attempt) -> dict[str, Any]:
    values = {f.name: getattr(attempt, f.name) for f in fields(attempt) if f.name != "id"}
    values["started_at"] = naive_utc(attempt.started_at)
    values["ended_at"] = naive_utc(attempt.ended_at) if attempt.ended_at else None
    values["edit_paths"] = json.dumps(attempt.edit_paths)
    return values


def from_row(row: sa.Row[Any]) -> Attempt:
    data = {k: v for k, v in row._mapping.items() if k in attempts.c}
    data["edit_paths"] = json.loads(data["edit_paths"] or "[]")
    data["started_at"] = data["started_at"].replace(tzinfo=UTC)
    if data["ended_at"] is not None:
        data["ended_at"] = data["ended_at"].replace(tzinfo=UTC)
    return Attempt(**data)
