"""Did it run: the runs of the window, and every day of it on which no run happened.

Days are counted in the configured time zone, across the machines the report covers (`--machine`
narrows them). A day after the moment the report was made cannot have had its run yet and is not
counted; the report's own day, when the window ends before that day does, is "no run yet".
A day the window cuts (a --since or --until at a time of day) is judged whole: a run that started
on it outside the window's hours is not listed, but the day had its run.
Pure: plain data in, plain data out.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from jobs.ledger.model import Run

RUNS_LISTED = 1000   # runs listed at most, newest first (every day without a run is listed)
RUNS_OPEN = 20       # of which shown before the rest is folded

FAILING = frozenset({"fail", "timeout", "drift"})
UNCHECKED = frozenset({"skipped", "locked", "error", "interrupted"})
# A run's state, worst first: what its exit code says (or, pieced from attempts, would have).
STATES = ("failed", "usage", "unchecked", "unfinished", "ok")
EXIT_STATES = {0: "ok", 1: "failed", 2: "usage", 3: "unchecked"}
STATE_WORDS = {"failed": "something failed", "usage": "bad usage or configuration",
               "unchecked": "something could not be checked", "unfinished": "did not finish",
               "ok": "all passed or nothing due"}


@dataclass(frozen=True)
class RunEntry:
    run: Run
    pieced: bool  # no row in the runs table: told by its attempts (before runs were recorded)

    @property
    def state(self) -> str:
        if self.run.exit_code is not None:
            return EXIT_STATES.get(self.run.exit_code, "failed")
        if not self.pieced:
            return "unfinished"
        verdicts = set(self.run.counts)
        return "failed" if verdicts & FAILING else "unchecked" if verdicts & UNCHECKED else "ok"

    @property
    def no_verdicts(self) -> str:
        """What a run without a verdict did: nothing was due, unless it never finished (killed
        before its first verdict was recorded), when nobody knows."""
        return "nothing recorded" if self.state == "unfinished" else "nothing due"

    @property
    def duration(self) -> float | None:
        if self.run.ended_at is None:
            return None
        return (self.run.ended_at - self.run.started_at).total_seconds()


@dataclass(frozen=True)
class NoRun:
    """Consecutive days without a run."""

    first: date
    last: date
    so_far: bool = False  # the last day is the report's own and not over

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def words(self) -> str:
        span = (self.first.isoformat() if self.first == self.last
                else f"{self.first.isoformat()} – {self.last.isoformat()} ({self.days} days)")
        return f"no run {span}" + (" (yet)" if self.so_far else "")


@dataclass(frozen=True)
class RunCell:
    """One column of the day grid: its days' runs, or that there was none."""

    first: date
    runs: int
    state: str | None        # the worst state of its runs; None when none ran
    no_run: int              # its days without a run
    title: str


@dataclass
class RunsView:
    cells: list[RunCell]
    entries: list[RunEntry | NoRun]   # newest first: RUNS_LISTED runs and every day without
    omitted: int                      # older runs not listed
    total: int                        # runs in the window
    no_run_days: int
    states: dict[str, int]
    machines: list[str]
    last: RunEntry | None


def _day(moment: datetime, zone: tzinfo) -> date:
    return moment.astimezone(zone).date()


def build_runs(recorded: Sequence[Run], pieced: Sequence[Run], *, since: datetime,
               until: datetime, now: datetime, zone: tzinfo, columns: Sequence[date],
               step: int) -> RunsView:
    every = sorted([RunEntry(r, False) for r in recorded] + [RunEntry(r, True) for r in pieced],
                   key=lambda e: (e.run.started_at, e.run.run_id))
    # The runs may cover the window's first and last days whole: a run on one of those days
    # outside the window's hours is not listed, but that day had its run.
    entries = [e for e in every if since <= e.run.started_at < until]
    first = _day(since, zone)
    last = _day(until - timedelta(microseconds=1), zone)
    today = _day(now, zone)
    # A day after today is still to come: no run is missing from it yet.
    counted_last = min(last, today)
    by_day: dict[date, list[RunEntry]] = {}
    for entry in entries:
        by_day.setdefault(_day(entry.run.started_at, zone), []).append(entry)
    run_days = sorted({d for e in every if first <= (d := _day(e.run.started_at, zone))
                       <= counted_last})
    gaps = _gaps(run_days, first, counted_last, so_far=counted_last == today)
    cells = [_cell(columns[i], step, by_day, run_days, first, counted_last, last)
             for i in range(len(columns))]

    def newest_first(item: RunEntry | NoRun) -> tuple[int, int, float]:
        # Newest day first; within a day (only runs share one) the latest run first.
        if isinstance(item, NoRun):
            return (-item.last.toordinal(), 0, 0.0)
        return (-_day(item.run.started_at, zone).toordinal(), 1, -item.run.started_at.timestamp())

    newest = entries[-RUNS_LISTED:] if RUNS_LISTED else []
    listed: list[RunEntry | NoRun] = sorted([*newest, *gaps], key=newest_first)
    states: dict[str, int] = {}
    for entry in entries:
        states[entry.state] = states.get(entry.state, 0) + 1
    return RunsView(cells, listed, len(entries) - len(newest), len(entries),
                    sum(g.days for g in gaps), states, sorted({e.run.machine for e in entries}),
                    entries[-1] if entries else None)


def _gaps(days: list[date], first: date, last: date, *, so_far: bool) -> list[NoRun]:
    """The spans of [first, last] that `days` (sorted, in range) leave out."""
    if last < first:
        return []
    out: list[NoRun] = []
    cursor = first
    for day in days:
        if day > cursor:
            out.append(NoRun(cursor, day - timedelta(days=1)))
        cursor = day + timedelta(days=1)
    if cursor <= last:
        out.append(NoRun(cursor, last, so_far=so_far))
    return out


def _cell(start: date, step: int, by_day: dict[date, list[RunEntry]], run_days: list[date],
          first: date, counted_last: date, last: date) -> RunCell:
    end = min(start + timedelta(days=step - 1), last)
    runs = ([e for d, es in by_day.items() if start <= d <= end for e in es] if step > 1
            else by_day.get(start, []))
    # Its days that count (not before the window, not yet to come) and had no run.
    lo, hi = max(start, first), min(end, counted_last)
    ran = set(run_days[bisect_left(run_days, lo):bisect_right(run_days, hi)])
    span_days = (hi - lo).days + 1 if hi >= lo else 0
    none = tuple(lo + timedelta(days=i) for i in range(min(span_days, 31))
                 if lo + timedelta(days=i) not in ran)
    missing = span_days - len(ran)
    state = next((s for s in STATES if any(e.state == s for e in runs)), None)
    span = start.isoformat() if end == start else f"{start.isoformat()} – {end.isoformat()}"
    said = [f"{len(runs)} run(s)"] if runs else []
    if not runs and lo <= hi and not missing:
        said.append("its run(s) started outside the window's hours")
    if state is not None:
        said.append(f"worst: {STATE_WORDS[state]}")
    if missing and step == 1:
        said.append("no run")
    elif missing and len(none) == missing:
        said.append("no run on " + ", ".join(d.isoformat() for d in none))
    elif missing:
        said.append(f"{missing} days without a run")
    return RunCell(start, len(runs), state, missing, f"{span}: " + "; ".join(said))
