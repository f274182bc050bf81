"""The audit's seals: what `begin` armed, every push-log entry as it was written, and each
closeout's report as it was printed (SPEC "Evidence the run cannot make").

Rows are only ever inserted: nothing here updates or deletes, so a ledger on PostgreSQL can be
written by a role that may only INSERT and SELECT (docs/audit-trust.md). Like the audit runs
(jobs/ledger/audits.py) the tables are additive and created on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

_metadata = sa.MetaData()
audit_arms = sa.Table(
    "audit_arms", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # The run directory's real path: how every later command finds its arm.
    sa.Column("run_dir", sa.Text, nullable=False, index=True),
    sa.Column("kind", sa.String(8), nullable=False),  # begin | add
    sa.Column("extends", sa.Integer),  # the row an `add` extends
    sa.Column("armed_at", sa.DateTime, nullable=False),
    sa.Column("machine", sa.String(255)),
    sa.Column("before_sha256", sa.String(64), nullable=False),
    sa.Column("charter_sha256", sa.String(64)),
    sa.Column("transport_sha256", sa.String(64), nullable=False),
    # The fingerprint itself (setting → digest, JSON): closeout names what changed.
    sa.Column("transport", sa.Text, nullable=False),
)
audit_pushes = sa.Table(
    "audit_pushes", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_dir", sa.Text, nullable=False, index=True),
    sa.Column("recorded_at", sa.DateTime, nullable=False),
    # The push-log line exactly as it is appended to the file (without its newline).
    sa.Column("line", sa.Text, nullable=False),
)
audit_reports = sa.Table(
    "audit_reports", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_dir", sa.Text, nullable=False, index=True),
    sa.Column("audit_run_id", sa.Integer),  # audit_runs.id
    sa.Column("arm_id", sa.Integer),  # audit_arms.id the closeout checked against
    sa.Column("recorded_at", sa.DateTime, nullable=False),
    sa.Column("exit_code", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("json", sa.Text, nullable=False),
)


@dataclass(frozen=True)
class ArmRow:
    id: int
    run_dir: str
    kind: str
    extends: int | None
    armed_at: datetime
    machine: str | None
    before_sha256: str
    charter_sha256: str | None
    transport_sha256: str
    transport: str


@dataclass(frozen=True)
class PushRow:
    id: int
    run_dir: str
    recorded_at: datetime
    line: str


@dataclass(frozen=True)
class ReportRow:
    id: int
    run_dir: str
    audit_run_id: int | None
    arm_id: int | None
    recorded_at: datetime
    exit_code: int
    text: str
    json: str


def ensure_seal_tables(engine: sa.Engine) -> None:
    try:
        _metadata.create_all(engine)
    except sa.exc.SQLAlchemyError:
        # Two processes creating them at once: the other's tables are the ones we wanted.
        if not sa.inspect(engine).has_table(audit_reports.name):
            raise


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC)


def insert_arm(conn: sa.Connection, *, run_dir: str, kind: str, extends: int | None,
               armed_at: datetime, machine: str | None, before_sha256: str,
               charter_sha256: str | None, transport_sha256: str, transport: str) -> int:
    key = conn.execute(audit_arms.insert().values(
        run_dir=run_dir, kind=kind, extends=extends, armed_at=_naive(armed_at), machine=machine,
        before_sha256=before_sha256, charter_sha256=charter_sha256,
        transport_sha256=transport_sha256, transport=transport)).inserted_primary_key
    assert key is not None
    return int(key[0])


def arms_of(conn: sa.Connection, run_dir: str) -> list[ArmRow]:
    """Every arm row of one run directory, oldest first."""
    rows = conn.execute(sa.select(audit_arms).where(audit_arms.c.run_dir == run_dir)
                        .order_by(audit_arms.c.id))
    return [ArmRow(id=r.id, run_dir=r.run_dir, kind=r.kind, extends=r.extends,
                   armed_at=_aware(r.armed_at), machine=r.machine,
                   before_sha256=r.before_sha256, charter_sha256=r.charter_sha256,
                   transport_sha256=r.transport_sha256, transport=r.transport)
            for r in rows]


def insert_pushes(conn: sa.Connection, run_dir: str, lines: list[str],
                  recorded_at: datetime) -> None:
    if lines:
        conn.execute(audit_pushes.insert(), [
            {"run_dir": run_dir, "recorded_at": _naive(recorded_at), "line": line}
            for line in lines])


def pushes_of(conn: sa.Connection, run_dir: str) -> list[PushRow]:
    rows = conn.execute(sa.select(audit_pushes).where(audit_pushes.c.run_dir == run_dir)
                        .order_by(audit_pushes.c.id))
    return [PushRow(id=r.id, run_dir=r.run_dir, recorded_at=_aware(r.recorded_at), line=r.line)
            for r in rows]


def insert_report(conn: sa.Connection, *, run_dir: str, audit_run_id: int | None,
                  arm_id: int | None, recorded_at: datetime, exit_code: int, text: str,
                  json_text: str) -> int:
    key = conn.execute(audit_reports.insert().values(
        run_dir=run_dir, audit_run_id=audit_run_id, arm_id=arm_id,
        recorded_at=_naive(recorded_at), exit_code=exit_code, text=text,
        json=json_text)).inserted_primary_key
    assert key is not None
    return int(key[0])


def last_report(conn: sa.Connection, run_dir: str) -> ReportRow | None:
    row = conn.execute(sa.select(audit_reports).where(audit_reports.c.run_dir == run_dir)
                       .order_by(audit_reports.c.id.desc()).limit(1)).first()
    if row is None:
        return None
    return ReportRow(id=row.id, run_dir=row.run_dir, audit_run_id=row.audit_run_id,
                     arm_id=row.arm_id, recorded_at=_aware(row.recorded_at),
                     exit_code=row.exit_code, text=row.text, json=row.json)
