"""What the review reads from the ledger: the attempts and audit runs a filter selects.

Only the columns the report shows are read (a 30-day window of a big ledger is tens of thousands
of rows); `machine` is read when the ledger has that column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from jobs.ledger.audits import (
    AuditRun,
    ensure_attempt_indexes,
    ensure_audit_tables,
    select_audit_runs,
)
from jobs.ledger.model import Verdict
from jobs.ledger.store import Ledger, LedgerError, attempts

PROBLEM_VERDICTS = (Verdict.FAIL, Verdict.TIMEOUT, Verdict.ERROR, Verdict.DRIFT,
                    Verdict.INTERRUPTED)
FAILURE_ROWS = 2100  # the failing attempts a report lists at most (model.py shows them)
_COLUMNS = ("id", "started_at", "repo", "task_id", "task_path", "label_date", "recipe", "verdict",
            "reason", "exit_code", "duration", "output_path", "commit_sha", "edit_state")


@dataclass(frozen=True)
class Filters:
    since: datetime  # aware
    until: datetime  # aware, exclusive
    repo_path: str | None = None  # an absolute path, matched exactly
    repo_name: str | None = None  # a repository's folder name, matched as the path's last part
    task: str | None = None
    verdict: str | None = None
    machine: str | None = None


@dataclass(slots=True)
class AttemptRow:
    id: int
    started_at: datetime
    repo: str
    task_id: str | None
    task_path: str | None
    label_date: str | None
    recipe: str | None
    verdict: str
    reason: str | None
    exit_code: int | None
    duration: float | None
    output_path: str | None
    commit_sha: str | None
    edit_state: str | None
    machine: str | None = None


# (started_at as naive UTC, repo, task id, verdict): one per attempt, for the timeline.
Mark = tuple[datetime, str, str | None, str]


@dataclass
class LedgerData:
    marks: list[Mark]
    failing: list[AttemptRow]       # the newest FAILURE_ROWS failing attempts, newest first
    failing_total: int
    task_paths: dict[tuple[str, str | None], str | None]
    audits: list[AuditRun]
    has_machine: bool


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def read_ledger(url: str, filters: Filters) -> LedgerData:
    ledger = Ledger(url)
    try:
        return _read(ledger, filters)
    except SQLAlchemyError as exc:
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise LedgerError(f"cannot read the ledger {url}: {first}") from None
    finally:
        ledger.close()


def _read(ledger: Ledger, f: Filters) -> LedgerData:
    engine = ledger.engine
    # A ledger this user may read but not change is still worth a report: without the audit
    # tables there are no audit runs, without the indexes it is slower.
    try:
        ensure_audit_tables(engine)
    except SQLAlchemyError:
        pass
    has_audits = sa.inspect(engine).has_table("audit_findings")
    try:
        ensure_attempt_indexes(engine)
    except SQLAlchemyError:
        pass
    has_machine = "machine" in {c["name"] for c in sa.inspect(engine).get_columns("attempts")}
    if f.machine is not None and not has_machine:
        return LedgerData([], [], 0, {}, [], has_machine)
    machine: Any = sa.column("machine")
    where = _attempt_filters(f, machine)
    a = attempts.c
    # The timeline needs four columns of every attempt; the rest is read for failures only.
    marks = sa.select(a.started_at, a.repo, a.task_id, a.verdict).where(*where)
    paths = (sa.select(a.repo, a.task_id, sa.func.max(a.task_path)).where(*where)
             .group_by(a.repo, a.task_id))
    cols: list[Any] = [a[name] for name in _COLUMNS] + ([machine] if has_machine else [])
    problem = [*where, a.verdict.in_(PROBLEM_VERDICTS)]
    failing = (sa.select(*cols).where(*problem)
               .order_by(a.started_at.desc(), a.id.desc()).limit(FAILURE_ROWS))
    count = sa.select(sa.func.count()).select_from(attempts).where(*problem)
    with engine.connect() as conn:
        # fetchall(): SQLAlchemy's row-by-row iteration costs more than the query itself here.
        mark_rows = [tuple(r) for r in conn.execute(marks).fetchall()]
        task_paths = {(r[0], r[1]): r[2] for r in conn.execute(paths).fetchall()}
        rows = [AttemptRow(r[0], r[1].replace(tzinfo=UTC), *r[2:])
                for r in conn.execute(failing).fetchall()]
        problems = int(conn.execute(count).scalar_one())
        audit_verdict = f.verdict if f.verdict in ("pass", "fail", "could_not_check") else None
        audits: list[AuditRun] = []
        if has_audits and (f.verdict is None or audit_verdict is not None):
            audits = select_audit_runs(conn, since=_naive(f.since), until=_naive(f.until),
                                       machine=f.machine, verdict=audit_verdict)
    if f.repo_path is not None or f.repo_name is not None:
        audits = [run for run in audits if any(_repo_matches(repo, f) for repo in run.repos)]
    return LedgerData(mark_rows, rows, problems, task_paths, audits, has_machine)


def _attempt_filters(f: Filters, machine: Any) -> list[Any]:
    a = attempts.c
    where: list[Any] = [a.started_at >= _naive(f.since), a.started_at < _naive(f.until)]
    if f.repo_path is not None:
        where.append(a.repo == f.repo_path)
    if f.repo_name is not None:
        where.append(sa.or_(a.repo == f.repo_name,
                            a.repo.endswith("/" + f.repo_name, autoescape=True)))
    if f.task is not None:
        where.append(a.task_id == f.task)
    if f.verdict is not None:
        where.append(a.verdict == f.verdict)
    if f.machine is not None:
        where.append(machine == f.machine)
    return where


def _repo_matches(repo: str, f: Filters) -> bool:
    if f.repo_path is not None:
        return repo == f.repo_path
    return repo == f.repo_name or repo.rstrip("/").rsplit("/", 1)[-1] == f.repo_name
