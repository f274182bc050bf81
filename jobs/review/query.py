"""What the review reads from the ledger: runs, attempts and audit runs a filter selects, and the
earlier attempts of the failing tasks (over the whole ledger: "still failing since").

Only the columns the report shows are read (a 30-day window of a big ledger is tens of thousands
of rows): four of every attempt for the timeline, the details of the listed ones alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from jobs.core.text import first_line
from jobs.ledger.audits import (
    AuditRun,
    ensure_attempt_indexes,
    ensure_audit_tables,
    select_audit_runs,
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
PASSES_PER_TASK = 10    # the newest passes listed per task (per clone here; merged in model.py)
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


# (started_at as naive UTC, machine, repo, task id, verdict): one per attempt, for the timeline.
Mark = tuple[datetime, str | None, str, str | None, str]
# (started_at naive UTC, id, machine, repo, task id, label date, verdict): the failing tasks'
# passes and failures before the window's end, for "new or still failing".
HistoryRow = tuple[datetime, int, str | None, str, str | None, str | None, str]


@dataclass
class LedgerData:
    marks: list[Mark]
    failing: list[AttemptRow]       # the newest FAILURE_ROWS failing attempts, newest first
    failing_total: int
    unchecked: list[AttemptRow]     # the newest UNCHECKED_ROWS of the rest, newest first
    unchecked_total: int
    passes: list[PassRow]           # newest first, PASSES_PER_TASK per clone and task
    history: list[HistoryRow]       # oldest first
    runs: list[Run]                 # the runs table's, oldest first
    pieced: list[Run]               # runs known only from their attempts (trigger "")
    task_paths: dict[tuple[str, str | None], str | None]
    audits: list[AuditRun]
    has_machine: bool


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
        for ensure in (ensure_audit_tables, ensure_attempt_indexes):
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

    def clones(self) -> tuple[list[Clone], dict[Clone, str]]:
        """Every clone the attempts name, and the identities the claims recorded."""
        def read() -> tuple[list[Clone], dict[Clone, str]]:
            machine = self._machine()
            query = sa.select(machine, attempts.c.repo).distinct()
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
        marks = sa.select(a.started_at, machine, a.repo, a.task_id, a.verdict).where(*where)
        paths = (sa.select(a.repo, a.task_id, sa.func.max(a.task_path)).where(*where)
                 .group_by(a.repo, a.task_id))
        detail: list[Any] = [a[name] for name in _DETAIL] + [machine]
        if self.has_summary:
            detail.append(a.summary)
        failing_where = [*where, a.verdict.in_(FAILING_VERDICTS)]
        unchecked_where = [*where, a.verdict.in_(UNCHECKED_VERDICTS)]
        newest = (a.started_at.desc(), a.id.desc())
        ranked = (sa.select(a.started_at, machine, a.repo, a.task_id, a.commit_sha,
                            sa.func.row_number().over(partition_by=(a.repo, a.task_id),
                                                      order_by=newest).label("n"))
                  .where(*where, a.verdict == Verdict.PASS).subquery())
        passes = (sa.select(ranked.c.started_at, ranked.c.machine, ranked.c.repo,
                            ranked.c.task_id, ranked.c.commit_sha)
                  .where(ranked.c.n <= PASSES_PER_TASK).order_by(ranked.c.started_at.desc()))
        with self.ledger.engine.connect() as conn:
            # fetchall(): SQLAlchemy's row-by-row iteration costs more than the query itself.
            mark_rows: list[Mark] = [tuple(r) for r in conn.execute(marks).fetchall()]
            task_paths = {(r[0], r[1]): r[2] for r in conn.execute(paths).fetchall()}
            failing = self._details(conn, detail, failing_where, newest, FAILURE_ROWS)
            unchecked = self._details(conn, detail, unchecked_where, newest, UNCHECKED_ROWS)
            totals = [int(conn.execute(sa.select(sa.func.count()).select_from(attempts)
                                       .where(*w)).scalar_one())
                      for w in (failing_where, unchecked_where)]
            pass_rows = [PassRow(r[0].replace(tzinfo=UTC), r[1], r[2], r[3], r[4])
                         for r in conn.execute(passes).fetchall()]
            history = self._history(conn, failing, f)
            recorded, pieced = self._runs(conn, f)
            audits = self._audits(conn, f)
        return LedgerData(mark_rows, failing, totals[0], unchecked, totals[1], pass_rows, history,
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
        keys = {(r.task_id, r.label_date) for r in failing if r.task_id is not None}
        if not keys:
            return []
        a = attempts.c
        tasks = sorted({task for task, _label in keys if task is not None})
        verdicts = (Verdict.PASS, *FAILING_VERDICTS)
        rows: list[HistoryRow] = []
        for start in range(0, len(tasks), 500):  # bound the statement's parameters
            query = (sa.select(a.started_at, a.id, self._machine(), a.repo, a.task_id,
                               a.label_date, a.verdict)
                     .where(a.task_id.in_(tasks[start:start + 500]), a.verdict.in_(verdicts),
                            a.started_at < _naive(f.until)))
            if f.repos is not None:
                query = query.where(a.repo.in_(sorted(f.repos)))
            rows.extend(r for r in conn.execute(query).fetchall()
                        if (r[4], r[5]) in keys)
        rows.sort(key=lambda r: (r[0], r[1]))
        return rows

    def _runs(self, conn: sa.Connection, f: Filters) -> tuple[list[Run], list[Run]]:
        """The runs that started in the window (of the selected machine), and the runs before
        the runs table that only their attempts tell of."""
        window = [runs.c.started_at >= _naive(f.since), runs.c.started_at < _naive(f.until)]
        if f.machine is not None:
            window.append(runs.c.machine == f.machine)
        recorded = [run_from_row(r) for r in conn.execute(
            sa.select(runs).where(*window).order_by(runs.c.started_at, runs.c.run_id))]
        a = attempts.c
        machine = self._machine()
        where: list[Any] = [a.started_at >= _naive(f.since), a.started_at < _naive(f.until),
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
        if not self.has_audits:
            return []
        audit_verdict = f.verdict if f.verdict in ("pass", "fail", "could_not_check") else None
        if f.verdict is not None and audit_verdict is None:
            return []
        # `--repo` keeps the audit runs of the repositories it names (see the command).
        return select_audit_runs(conn, since=_naive(f.since), until=_naive(f.until),
                                 machine=f.machine, verdict=audit_verdict)
