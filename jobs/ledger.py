"""The run ledger: every attempt, and every task edit between being written and being committed.

It lives in SQLite under `state_dir` by default; any SQLAlchemy URL (PostgreSQL for several
machines) works the same way, which is why this is SQLAlchemy Core and not sqlite3.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from jobs.errors import LoopError

VERDICTS = ("pass", "fail", "timeout", "refused", "skipped", "locked", "drift", "error",
            "interrupted")
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
)


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
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("started_at", "ended_at"):
            value = out[key]
            out[key] = iso_utc(value) if value is not None else None
        return out


def iso_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _naive_utc(moment: datetime) -> datetime:
    # Stored naive in UTC: SQLite keeps no zone, and every reader here means UTC.
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _row_values(attempt: Attempt) -> dict[str, Any]:
    values = {f.name: getattr(attempt, f.name) for f in fields(attempt) if f.name != "id"}
    values["started_at"] = _naive_utc(attempt.started_at)
    values["ended_at"] = _naive_utc(attempt.ended_at) if attempt.ended_at else None
    values["edit_paths"] = json.dumps(attempt.edit_paths)
    return values


def _from_row(row: sa.Row[Any]) -> Attempt:
    data = dict(row._mapping)
    data["edit_paths"] = json.loads(data["edit_paths"] or "[]")
    data["started_at"] = data["started_at"].replace(tzinfo=UTC)
    if data["ended_at"] is not None:
        data["ended_at"] = data["ended_at"].replace(tzinfo=UTC)
    return Attempt(**data)


def _first_line(exc: BaseException) -> str:
    # Driver messages run over several lines (and SQLAlchemy adds a link): keep the one that says
    # what went wrong.
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


class LedgerError(LoopError):
    """The ledger cannot be opened or written: nothing may be edited without it."""

    exit_code = 3


class Ledger:
    def __init__(self, url: str) -> None:
        self.url = url
        try:
            if url.startswith("sqlite:///"):
                Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            # Two runs may share one SQLite file: wait for the other's write instead of failing.
            connect_args = {"timeout": 30} if url.startswith("sqlite") else {}
            self.engine = sa.create_engine(url, connect_args=connect_args)
            try:
                _metadata.create_all(self.engine)
            except SQLAlchemyError:
                # Two runs opening a new ledger at once: the other one's CREATE TABLE came
                # between our check and ours. Its table is the one we wanted.
                if not sa.inspect(self.engine).has_table(attempts.name):
                    raise
        except (SQLAlchemyError, OSError) as exc:
            raise LedgerError(f"cannot open the ledger {url}: {_first_line(exc)}") from None

    def close(self) -> None:
        self.engine.dispose()

    def record(self, attempt: Attempt) -> Attempt:
        try:
            with self.engine.begin() as conn:
                result = conn.execute(attempts.insert().values(**_row_values(attempt)))
                key = result.inserted_primary_key
                assert key is not None
                attempt.id = int(key[0])
        except SQLAlchemyError as exc:
            raise LedgerError(f"cannot write the ledger {self.url}: {_first_line(exc)}") from None
        return attempt

    def update(self, attempt: Attempt) -> None:
        assert attempt.id is not None
        try:
            with self.engine.begin() as conn:
                conn.execute(attempts.update().where(attempts.c.id == attempt.id)
                             .values(**_row_values(attempt)))
        except SQLAlchemyError as exc:
            raise LedgerError(f"cannot write the ledger {self.url}: {_first_line(exc)}") from None

    def pending(self, repo: str) -> list[Attempt]:
        """Edits written (or about to be) whose commit was never confirmed, oldest first."""
        query = (sa.select(attempts)
                 .where(attempts.c.repo == repo, attempts.c.edit_state == "pending")
                 .order_by(attempts.c.id))
        return list(self._select(query))

    def history(self, *, since: date | None = None,
                repo: str | None = None) -> list[Attempt]:
        query = sa.select(attempts).order_by(attempts.c.started_at, attempts.c.id)
        if since is not None:
            query = query.where(attempts.c.started_at >= datetime.combine(since, time.min))
        if repo is not None:
            query = query.where(attempts.c.repo == repo)
        return list(self._select(query))

    def _select(self, query: sa.Select[Any]) -> Iterator[Attempt]:
        try:
            with self.engine.connect() as conn:
                rows: Sequence[sa.Row[Any]] = conn.execute(query).fetchall()
        except SQLAlchemyError as exc:
            raise LedgerError(f"cannot read the ledger {self.url}: {_first_line(exc)}") from None
        for row in rows:
            yield _from_row(row)
