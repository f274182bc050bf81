"""What the review reads from the ledger: runs, attempts and audit runs a filter selects, and the
earlier attempts of the failing tasks (over the whole ledger: "still failing since").

Only the columns the report shows are read (a 30-day window of a big ledger is tens of thousands
of rows): four of every attempt for the timeline, the details of the listed ones alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from jobs.core.text import first_line
from jobs.ledger.audits import (
    AuditFinding,
    AuditRun,
    audit_findings,
    audit_runs,
    ensure_attempt_indexes,
    ensure_audit_tables,
)
from jobs.ledger.model import Run, Verdict
from jobs.ledger.rows import run_from_row, runs
from jobs.ledger.store import Ledger, LedgerError, attempts
from jobs.review.identity import Clone, read_claimed

# Exit 1: what failed. The rest that is not a pass could not be checked (or was not run).
FAILING_VERDICTS = (Verdict.FAIL, Verdict.TIMEOUT, Verdict.DRIFT)
UNCHECKED_VERDICTS = (Verdict.REFUSED, Verdict.SKIPPED, Verdict.LOCKED, Verdict.ERROR,
                      Verdict.INTERRUPTED)
FAILURE_ROWS = 2100     # failing attempts a report lists at most (model.py shows them)
UNCHECKED_ROWS = 20000  # attempts not checked read at most (folded by reason in model.py)
_DETAIL = ("id", "started_at", "repo", "task_id", "task_path", "label_date", "recipe", "verdict",
           "reason", "exit_code", "duration", "output_path", "commit_sha", "edit_state")


@dataclass(frozen=True)
class Filters:
    since: datetime  # aware
    until: datetime  # aware, exclusive
    repos: frozenset[str] | None = None  # the clone paths of the repositories `--repo` chose
    task: str | None = None
    verdict: str | None = None
    machine: str | None = None
    here: frozenset[str] = frozenset()  # clones on this machine: the only titles it can read
    # The window's first and last days whole (in the configured zone): whether a day had a run
    # is asked of the whole day, though only the window's runs are listed.
    days_since: datetime | None = None
    days_until: datetime | None = None


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
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class PassRow:
    started_at: datetime  # aware
    machine: str | None
    repo: str
    task_id: str | None
    commit_sha: str | None


# (started_at, machine, repo, task id, verdict, commit): one per attempt, for the timeline and
# the passes. The time is the database's own text of the naive UTC time ("2026-11-30
# 07:02:11[.000000]" in SQLite and PostgreSQL alike), which sorts as the time does: a hundred
# thousand of them are placed in their columns without making a datetime of each.
Mark = tuple[str, str | None, str, str | None, str, str | None]
# (started_at as the database's text of naive UTC, id, machine, repo, task id, label date,
# verdict): the failing tasks' passes and failures before the window's end, for "new or still
# failing".
HistoryRow = tuple[str, int, str | None, str, str | None, str | None, str]


@dataclass
class LedgerData:
    marks: list[Mark]
    failing: list[AttemptRow]       # the newest FAILURE_ROWS failing attempts, newest first
    failing_total: int
    unchecked: list[AttemptRow]     # the newest UNCHECKED_ROWS of the rest, newest first
    unchecked_total: int
    history: list[HistoryRow]       # oldest first
    runs: list[Run]                 # the runs table's, oldest first (of the window's whole days)
    pieced: list[Run]               # runs known only from their attempts (trigger ""), alike
    task_paths: dict[tuple[str, str | None], str | None]
    audits: list[AuditRun]
    has_machine: bool


def ensure_clone_index(engine: sa.Engine) -> None:
    """Each clone's identity is read from the claims (one row per verification): an index
    holding the three columns answers it without reading the table."""
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE INDEX IF NOT EXISTS ix_claims_clone "
                             "ON claims (repo, machine, identity)"))


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


class LedgerReader:
    """One ledger, opened for one report."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ledger = Ledger(url)
        engine = self.ledger.engine
        # A ledger this user may read but not change is still worth a report: without the audit
        # tables there are no audit runs, without the indexes it is slower.
        for ensure in (ensure_audit_tables, ensure_attempt_indexes, ensure_clone_index):
            try:
                ensure(engine)
            except SQLAlchemyError:
                pass
        inspector = sa.inspect(engine)
        self.has_audits = inspector.has_table("audit_findings")
        columns = {c["name"] for c in inspector.get_columns("attempts")}
        self.has_machine = "machine" in columns
        self.has_summary = "summary" in columns

    def close(self) -> None:
        self.ledger.close()

    def _guarded(self, read: Any) -> Any:
        try:
            return read()
        except SQLAlchemyError as exc:
            raise LedgerError(f"cannot read the ledger {self.ledger.shown_url}: "
                              f"{first_line(exc)}") from None

    def clones(self, since: datetime, until: datetime) -> tuple[list[Clone], dict[Clone, str]]:
        """Every clone the attempts of the window name, and the identities the claims
        recorded."""
        def read() -> tuple[list[Clone], dict[Clone, str]]:
            machine = self._machine()
            a = attempts.c
            query = (sa.select(machine, a.repo).distinct()
                     .where(a.started_at >= _naive(since), a.started_at < _naive(until)))
            with self.ledger.engine.connect() as conn:
                found = [(m, r) for m, r in conn.execute(query).fetchall()]
                return found, read_claimed(conn)
        result: tuple[list[Clone], dict[Clone, str]] = self._guarded(read)
        return result

    def _machine(self) -> Any:
        return attempts.c.machine if self.has_machine else sa.null().label("machine")

    def read(self, f: Filters) -> LedgerData:
        result: LedgerData = self._guarded(lambda: self._read(f))
        return result

    def _read(self, f: Filters) -> LedgerData:
        a = attempts.c
        machine = self._machine()
        where = self._where(f)
        if where is None:
            where = [sa.false()]
        marks = sa.select(sa.cast(a.started_at, sa.String), machine, a.repo, a.task_id,
                          a.verdict, a.commit_sha).where(*where)
        paths = (sa.select(a.repo, a.task_id, sa.func.max(a.task_path))
                 .where(*where, a.repo.in_(sorted(f.here))).group_by(a.repo, a.task_id))
        detail: list[Any] = [a[name] for name in _DETAIL] + [machine]
        if self.has_summary:
            detail.append(a.summary)
        failing_where = [*where, a.verdict.in_(FAILING_VERDICTS)]
        unchecked_where = [*where, a.verdict.in_(UNCHECKED_VERDICTS)]
        newest = (a.started_at.desc(), a.id.desc())
        with self.ledger.engine.connect() as conn:
            # fetchall(): SQLAlchemy's row-by-row iteration costs more than the query itself.
            # Rows unpack as tuples do: no copy of a hundred thousand of them.
            mark_rows: list[Mark] = conn.execute(marks).fetchall()  # type: ignore[assignment]
            task_paths = ({(r[0], r[1]): r[2] for r in conn.execute(paths).fetchall()}
                          if f.here else {})
            failing = self._details(conn, detail, failing_where, newest, FAILURE_ROWS)
            unchecked = self._details(conn, detail, unchecked_where, newest, UNCHECKED_ROWS)
            totals = [int(conn.execute(sa.select(sa.func.count()).select_from(attempts)
                                       .where(*w)).scalar_one())
                      for w in (failing_where, unchecked_where)]
            history = self._history(conn, failing, f)
            recorded, pieced = self._runs(conn, f)
            audits = self._audits(conn, f)
        return LedgerData(mark_rows, failing, totals[0], unchecked, totals[1], history,
                          recorded, pieced, task_paths, audits, self.has_machine)

    def _where(self, f: Filters) -> list[Any] | None:
        a = attempts.c
        where: list[Any] = [a.started_at >= _naive(f.since), a.started_at < _naive(f.until)]
        if f.repos is not None:
            if not f.repos:
                return None
            where.append(a.repo.in_(sorted(f.repos)))
        if f.task is not None:
            where.append(a.task_id == f.task)
        if f.verdict is not None:
            where.append(a.verdict == f.verdict)
        if f.machine is not None:
            if not self.has_machine:
                return None
            where.append(a.machine == f.machine)
        return where

    @staticmethod
    def _details(conn: sa.Connection, cols: list[Any], where: list[Any], order: Any,
                 limit: int) -> list[AttemptRow]:
        query = sa.select(*cols).where(*where).order_by(*order).limit(limit)
        return [AttemptRow(r[0], r[1].replace(tzinfo=UTC), *r[2:])
                for r in conn.execute(query).fetchall()]

    def _history(self, conn: sa.Connection, failing: list[AttemptRow],
                 f: Filters) -> list[HistoryRow]:
        """The passes and failures of the failing tasks before the window's end, whenever they
        were: a streak may have begun long before the window."""
        keys = sorted({(r.task_id, r.label_date) for r in failing
                       if r.task_id is not None and r.label_date is not None})
        a = attempts.c
        verdicts = (Verdict.PASS, *FAILING_VERDICTS)
        rows: list[HistoryRow] = []
        for start in range(0, len(keys), 400):  # bound the statement's parameters
            query = (sa.select(sa.cast(a.started_at, sa.String), a.id, self._machine(), a.repo,
                               a.task_id, a.label_date, a.verdict)
                     .where(sa.tuple_(a.task_id, a.label_date).in_(keys[start:start + 400]),
                            a.verdict.in_(verdicts), a.started_at < _naive(f.until)))
            # Every clone's: the identity (model.py) tells which are the same repository.
            rows.extend(conn.execute(query).fetchall())
        rows.sort(key=lambda r: (r[0], r[1]))
        return rows

    def _runs(self, conn: sa.Connection, f: Filters) -> tuple[list[Run], list[Run]]:
        """The runs that started on the window's days (of the selected machine), and the runs
        before the runs table that only their attempts tell of."""
        since, until = f.days_since or f.since, f.days_until or f.until
        window = [runs.c.started_at >= _naive(since), runs.c.started_at < _naive(until)]
        if f.machine is not None:
            window.append(runs.c.machine == f.machine)
        recorded = [run_from_row(r) for r in conn.execute(
            sa.select(runs).where(*window).order_by(runs.c.started_at, runs.c.run_id))]
        a = attempts.c
        # A run killed before its end (SIGKILL, the OOM killer) never wrote its counts: its
        # attempts tell what it did, never "nothing due".
        unfinished = {r.run_id: r for r in recorded if r.ended_at is None and not r.counts}
        if unfinished:
            ended_none = sa.select(runs.c.run_id).where(*window, runs.c.ended_at.is_(None))
            told = (sa.select(a.run_id, a.verdict, sa.func.count())
                    .where(a.run_id.in_(ended_none.scalar_subquery()))
                    .group_by(a.run_id, a.verdict))
            for run_id, verdict, n in conn.execute(told).fetchall():
                if run_id in unfinished:
                    unfinished[run_id].counts[verdict] = int(n)
        machine = self._machine()
        where: list[Any] = [a.started_at >= _naive(since), a.started_at < _naive(until),
                            a.run_id.not_in(sa.select(runs.c.run_id).scalar_subquery())]
        if f.machine is not None:
            if not self.has_machine:
                return recorded, []
            where.append(a.machine == f.machine)
        query = (sa.select(a.run_id, machine, sa.func.min(a.started_at),
                           sa.func.max(sa.func.coalesce(a.ended_at, a.started_at)), a.verdict,
                           sa.func.count())
                 .where(*where).group_by(a.run_id, machine, a.verdict))
        pieced: dict[tuple[str, str | None], Run] = {}
        for run_id, mach, first, last, verdict, n in conn.execute(query).fetchall():
            run = pieced.get((run_id, mach))
            if run is None:
                run = pieced[(run_id, mach)] = Run(run_id, mach or "", "",
                                                   first.replace(tzinfo=UTC),
                                                   ended_at=last.replace(tzinfo=UTC))
            run.started_at = min(run.started_at, first.replace(tzinfo=UTC))
            run.ended_at = max(run.ended_at or run.started_at, last.replace(tzinfo=UTC))
            run.counts[verdict] = int(n)
        return recorded, sorted(pieced.values(), key=lambda r: (r.started_at, r.run_id))

    def _audits(self, conn: sa.Connection, f: Filters) -> list[AuditRun]:
        """The window's audit runs, without their findings (`add_findings` reads those of the
        runs shown in full)."""
        if not self.has_audits:
            return []
        audit_verdict = f.verdict if f.verdict in ("pass", "fail", "could_not_check") else None
        if f.verdict is not None and audit_verdict is None:
            return []
        r = audit_runs.c
        where = [r.recorded_at >= _naive(f.since), r.recorded_at < _naive(f.until)]
        if f.machine is not None:
            where.append(r.machine == f.machine)
        if audit_verdict is not None:
            where.append(r.verdict == audit_verdict)
        # `--repo` keeps the audit runs of the repositories it names (see the command).
        return [AuditRun(recorded_at=row.recorded_at.replace(tzinfo=UTC), command=row.command,
                         verdict=row.verdict, exit_code=row.exit_code,
                         repos=json.loads(row.repos), machine=row.machine, run_dir=row.run_dir,
                         charter_sha256=row.charter_sha256, findings_total=row.findings_total,
                         findings_failing=row.findings_failing, id=row.id)
                for row in conn.execute(sa.select(audit_runs).where(*where)
                                        .order_by(r.recorded_at, r.id)).fetchall()]

    def add_findings(self, runs: list[AuditRun]) -> None:
        """Read the findings of these audit runs into them."""
        by_id = {run.id: run for run in runs if run.id is not None}
        if not by_id:
            return
        f = audit_findings.c

        def read() -> None:
            query = (sa.select(audit_findings).where(f.audit_run_id.in_(sorted(by_id)))
                     .order_by(f.audit_run_id, f.position))
            with self.ledger.engine.connect() as conn:
                for row in conn.execute(query).fetchall():
                    by_id[row.audit_run_id].findings.append(AuditFinding(
                        repo=row.repo, remote=row.remote, ref=row.ref, kind=row.kind,
                        before=row.before, after=row.after, commit=row.commit,
                        verdict=row.verdict, reason=row.reason, count=row._mapping["count"],
                        first=row.first, last=row.last))

        self._guarded(read)
