"""The ledger's audit tables: each loop-pi-audit closeout or compare, and its findings.

Additive to the attempts table (jobs/ledger/store.py): its own metadata, created on first use, so a
ledger written by an older loop-verify gains these tables without any migration. loop-pi-audit
writes them; `loop-verify review` reads them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlalchemy as sa

AUDIT_VERDICTS = ("pass", "fail", "could_not_check")
FAILING_FINDINGS = ("UNGRANTED", "NON_FAST_FORWARD", "UNVERIFIED", "TAMPERED")

_metadata = sa.MetaData()
audit_runs = sa.Table(
    "audit_runs", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("recorded_at", sa.DateTime, nullable=False, index=True),
    sa.Column("machine", sa.String(255), index=True),
    sa.Column("command", sa.String(16), nullable=False),
    sa.Column("run_dir", sa.Text),
    # {"/abs/repo": {"origin": "url with user-info redacted"}}: the links, without git.
    sa.Column("repos", sa.Text, nullable=False),
    sa.Column("charter_sha256", sa.String(64)),
    sa.Column("verdict", sa.String(16), nullable=False, index=True),
    sa.Column("exit_code", sa.Integer, nullable=False),
    sa.Column("findings_total", sa.Integer, nullable=False),
    sa.Column("findings_failing", sa.Integer, nullable=False),
)
audit_findings = sa.Table(
    "audit_findings", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("audit_run_id", sa.Integer, sa.ForeignKey("audit_runs.id"), nullable=False,
              index=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("repo", sa.Text, nullable=False),
    sa.Column("remote", sa.Text),
    sa.Column("ref", sa.Text),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("before", sa.String(64)),
    sa.Column("after", sa.String(64)),
    sa.Column("commit", sa.String(64)),
    sa.Column("verdict", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    # A run of passing commits reported as one finding: how many, the oldest and the newest.
    sa.Column("count", sa.Integer, nullable=False, default=1),
    sa.Column("first", sa.String(64)),
    sa.Column("last", sa.String(64)),
)

# The review filters attempts on these besides started_at (indexed in jobs/ledger/store.py).
# Plain SQL that SQLite and PostgreSQL both take; `machine` only once the ledger has that column.
_ATTEMPT_INDEXES = {"task_id": "ix_attempts_task_id", "verdict": "ix_attempts_verdict",
                    "machine": "ix_attempts_machine"}


@dataclass
class AuditFinding:
    repo: str
    remote: str | None
    ref: str | None
    kind: str
    before: str | None
    after: str | None
    commit: str | None
    verdict: str
    reason: str
    count: int = 1
    first: str | None = None
    last: str | None = None

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING_FINDINGS


@dataclass
class AuditRun:
    recorded_at: datetime
    command: str
    verdict: str
    exit_code: int
    repos: dict[str, dict[str, str]]
    machine: str | None = None
    run_dir: str | None = None
    charter_sha256: str | None = None
    findings: list[AuditFinding] = field(default_factory=list)
    findings_total: int = 0
    findings_failing: int = 0
    id: int | None = None


def ensure_audit_tables(engine: sa.Engine) -> None:
    try:
        _metadata.create_all(engine)
    except sa.exc.SQLAlchemyError:
        # Two processes creating them at once: the other's tables are the ones we wanted.
        if not sa.inspect(engine).has_table(audit_findings.name):
            raise


def ensure_attempt_indexes(engine: sa.Engine) -> None:
    columns = {c["name"] for c in sa.inspect(engine).get_columns("attempts")}
    with engine.begin() as conn:
        for column, name in _ATTEMPT_INDEXES.items():
            if column in columns:
                conn.execute(sa.text(f"CREATE INDEX IF NOT EXISTS {name} ON attempts ({column})"))


def insert_audit_run(engine: sa.Engine, run: AuditRun) -> int:
    """One transaction: the run and all its findings, or nothing."""
    recorded = run.recorded_at
    if recorded.tzinfo is not None:
        recorded = recorded.astimezone(UTC).replace(tzinfo=None)
    with engine.begin() as conn:
        result = conn.execute(audit_runs.insert().values(
            recorded_at=recorded, machine=run.machine, command=run.command, run_dir=run.run_dir,
            repos=json.dumps(run.repos, sort_keys=True), charter_sha256=run.charter_sha256,
            verdict=run.verdict, exit_code=run.exit_code,
            findings_total=len(run.findings),
            findings_failing=sum(1 for f in run.findings if f.failing)))
        key = result.inserted_primary_key
        assert key is not None
        run_id = int(key[0])
        if run.findings:
            conn.execute(audit_findings.insert(), [
                {"audit_run_id": run_id, "position": i, "repo": f.repo, "remote": f.remote,
                 "ref": f.ref, "kind": f.kind, "before": f.before, "after": f.after,
                 "commit": f.commit, "verdict": f.verdict, "reason": f.reason,
                 "count": f.count, "first": f.first, "last": f.last}
                for i, f in enumerate(run.findings)])
    run.id = run_id
    return run_id


def select_audit_runs(conn: sa.Connection, *, since: datetime, until: datetime,
                      machine: str | None, verdict: str | None) -> list[AuditRun]:
    """Audit runs recorded in [since, until) (naive UTC), with their findings, oldest first."""
    conditions = [audit_runs.c.recorded_at >= since, audit_runs.c.recorded_at < until]
    if machine is not None:
        conditions.append(audit_runs.c.machine == machine)
    if verdict is not None:
        conditions.append(audit_runs.c.verdict == verdict)
    query = (sa.select(audit_runs).where(*conditions)
             .order_by(audit_runs.c.recorded_at, audit_runs.c.id))
    runs: dict[int, AuditRun] = {}
    for row in conn.execute(query):
        runs[row.id] = AuditRun(
            recorded_at=row.recorded_at.replace(tzinfo=UTC), command=row.command,
            verdict=row.verdict, exit_code=row.exit_code, repos=json.loads(row.repos),
            machine=row.machine, run_dir=row.run_dir, charter_sha256=row.charter_sha256,
            findings_total=row.findings_total, findings_failing=row.findings_failing, id=row.id)
    if not runs:
        return []
    fquery = (sa.select(audit_findings)
              .join(audit_runs, audit_runs.c.id == audit_findings.c.audit_run_id)
              .where(*conditions)
              .order_by(audit_findings.c.audit_run_id, audit_findings.c.position))
    for row in conn.execute(fquery):
        run = runs.get(row.audit_run_id)
        if run is not None:
            run.findings.append(AuditFinding(
                repo=row.repo, remote=row.remote, ref=row.ref, kind=row.kind, before=row.before,
                after=row.after, commit=row.commit, verdict=row.verdict, reason=row.reason,
                count=row._mapping["count"], first=row.first, last=row.last))
    return list(runs.values())

