"""The ledger's tables, and an Attempt's conversion to and from their rows.

Times are stored naive in UTC; the schema only grows (ADDED_COLUMNS are added to older ledgers
in place by `jobs.ledger.store`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC
from typing import Any

import sqlalchemy as sa

from jobs.ledger.model import Attempt, EditState, Run, Verdict, naive_utc

VERDICTS = tuple(Verdict)
EDIT_STATES = tuple(EditState)

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
    sa.Column("summary", sa.Text),
    sa.Column("repo_identity", sa.Text),
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
# One row per run (SPEC "Runs"), nothing-due runs and runs that could only spool included; the
# attempts of a run share its run_id.
runs = sa.Table(
    "runs", _metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("machine", sa.String(128), nullable=False, index=True),
    sa.Column("config", sa.Text),
    sa.Column("trigger", sa.String(16), nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=False, index=True),
    sa.Column("ended_at", sa.DateTime),
    sa.Column("exit_code", sa.Integer),
    sa.Column("counts", sa.Text, nullable=False, default="{}"),  # JSON: verdict -> count
)
# Columns an older ledger may lack, added in place when it is opened.
ADDED_COLUMNS = ("machine", "uid", "claimed_by", "summary", "repo_identity")


def row_values(attempt: Attempt) -> dict[str, Any]:
    values = {f.name: getattr(attempt, f.name) for f in fields(attempt) if f.name != "id"}
    values["started_at"] = naive_utc(attempt.started_at)
    values["ended_at"] = naive_utc(attempt.ended_at) if attempt.ended_at else None
    values["edit_paths"] = json.dumps(attempt.edit_paths)
    return values


def from_row(row: sa.Row[Any]) -> Attempt:
    data = {k: v for k, v in row._mapping.items() if k in attempts.c}
    data["edit_paths"] = json.loads(data["edit_paths"] or "[]")
    data["edit_state"] = EditState(data["edit_state"])
    data["started_at"] = data["started_at"].replace(tzinfo=UTC)
    if data["ended_at"] is not None:
        data["ended_at"] = data["ended_at"].replace(tzinfo=UTC)
    return Attempt(**data)


def run_values(run: Run) -> dict[str, Any]:
    return {"run_id": run.run_id, "machine": run.machine, "config": run.config,
            "trigger": run.trigger, "started_at": naive_utc(run.started_at),
            "ended_at": naive_utc(run.ended_at) if run.ended_at else None,
            "exit_code": run.exit_code, "counts": json.dumps(run.counts, sort_keys=True)}


def run_from_row(row: sa.Row[Any]) -> Run:
    data = dict(row._mapping)
    return Run(run_id=data["run_id"], machine=data["machine"], config=data["config"],
               trigger=data["trigger"], started_at=data["started_at"].replace(tzinfo=UTC),
               ended_at=(data["ended_at"].replace(tzinfo=UTC) if data["ended_at"] else None),
               exit_code=_integer(data["exit_code"]), counts=_counts(data["counts"]))


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counts(text: object) -> dict[str, int]:
    """A runs row's verdict counts. Another machine of a shared ledger may have written the row
    (SQLite keeps any value in any column): anything but a JSON object of whole numbers is
    taken as no counts rather than ending `review` or `history` over one row."""
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and _integer(v) is not None}
