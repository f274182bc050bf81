"""The `runs` table (SPEC "Runs"): every run records itself when it starts and again when it
ends, so `history --runs`, `review` and `doctor` can tell a morning on which nothing was due
from one on which nothing ran. Kept in the spool like an attempt when the ledger cannot be
reached, and written on a later run (jobs/ledger/replay.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.ledger.model import Run, naive_utc
from jobs.ledger.rows import run_from_row, run_values, runs
from jobs.ledger.store import Ledger, LedgerError, is_transient

log = get_logger("loop-jobs.ledger")

_UPDATE = runs.update().where(runs.c.run_id == sa.bindparam("r_id"))


def _upsert(conn: sa.Connection, run: Run) -> None:
    values = run_values(run)
    if not conn.execute(_UPDATE, {**values, "r_id": run.run_id}).rowcount:
        conn.execute(runs.insert(), values)


def save_run(ledger: Ledger, run: Run) -> bool:
    """Write the run's row (insert, or update it by run id); spooled when the ledger cannot be
    reached. True when it reached the ledger."""
    if not ledger.unreachable:
        try:
            ledger.execute("run", lambda conn: _upsert(conn, run))
            return True
        except SQLAlchemyError as exc:
            log.error("ledger.write_failed", ledger=ledger.shown_url, run_id=run.run_id,
                      error=first_line(exc), spooled=ledger.spool is not None)
            if ledger.spool is None or not is_transient(exc):
                raise LedgerError(f"cannot write the ledger {ledger.shown_url}: "
                                  f"{first_line(exc)}") from None
            ledger.unreachable = True
    if ledger.spool is None:
        raise LedgerError(f"cannot write the ledger {ledger.shown_url}: it is unreachable")
    try:
        ledger.spool.put("run", run.to_json(), durable=True)
    except OSError as exc:
        raise LedgerError(f"cannot write the ledger {ledger.shown_url} nor its spool "
                          f"{ledger.spool.directory}: {exc}") from None
    log.warning("ledger.spooled", ledger=ledger.shown_url, run_id=run.run_id, kind="run")
    return False


def apply_spooled(ledger: Ledger, payload: dict[str, Any]) -> None:
    """Write a run a run spooled (its start, or its end, whichever it spooled last)."""
    run = Run.from_json(payload)
    ledger.execute("spool", lambda conn: _upsert(conn, run))


def read_runs(ledger: Ledger, *, since: datetime | None = None, until: datetime | None = None,
              machine: str | None = None) -> list[Run]:
    """The runs that started in [since, until), oldest first, of one machine or all."""
    query = sa.select(runs).order_by(runs.c.started_at, runs.c.run_id)
    if since is not None:
        query = query.where(runs.c.started_at >= naive_utc(since))
    if until is not None:
        query = query.where(runs.c.started_at < naive_utc(until))
    if machine is not None:
        query = query.where(runs.c.machine == machine)

    def fetch() -> list[Run]:
        with ledger.engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    return ledger.read("runs", fetch)


def last_finished_run(ledger: Ledger, machine: str) -> Run | None:
    """The machine's latest run that ended, or None."""
    query = (sa.select(runs).where(runs.c.machine == machine, runs.c.ended_at.is_not(None))
             .order_by(runs.c.ended_at.desc()).limit(1))

    def fetch() -> Run | None:
        with ledger.engine.connect() as conn:
            row = conn.execute(query).first()
            return run_from_row(row) if row is not None else None

    return ledger.read("runs", fetch)
