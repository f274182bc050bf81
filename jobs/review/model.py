"""The review's content, judged from ledger rows alone: runs, one group per repository, the
timeline, failures (new or still failing), what was not checked and why, passes, audit runs.

Pure: the renderers (html.py, markdown.py) only lay this out, and the edges (reading output
files, asking git) are passed in as functions.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from jobs.ledger.audits import AuditFinding, AuditRun
from jobs.review.audits import AuditView, audit_view, detail_order
from jobs.review.identity import group_names
from jobs.review.links import Site
from jobs.review.mornings import RunsView, build_runs
from jobs.review.query import AttemptRow, LedgerData, Mark, PassRow
from jobs.review.streaks import Standing, standings

# Colours of the timeline, worst first: a day's cell shows its worst verdict. Every verdict has
# its own; "other" is only for a word this version does not know.
SEVERITY = ("fail", "timeout", "drift", "error", "interrupted", "locked", "skipped", "refused",
            "pass", "other")
NOT_CHECKED = ("refused", "skipped", "locked", "error", "interrupted")
TIMELINE_LIMIT = 3000     # rows of the timeline laid out at all
TIMELINE_OPEN = 200       # of which shown before the rest is collapsed
DETAILED_FAILURES = 100   # failing attempts shown with their output
LISTED_FAILURES = 2000    # further failing attempts listed one line each
UNCHECKED_LISTED = 2000   # reasons listed (each with how often and when)
PASSES_PER_TASK = 5       # passes listed per task (the count says how many there were)

_SEVERE = frozenset(SEVERITY)


@dataclass
class Group:
    """One repository, whichever clones and machines ran it."""

    key: str                       # the page's handle for it (filters): g0, g1, ...
    identity: str
    name: str = ""
    clones: set[tuple[str | None, str]] = field(default_factory=set)
    site: Site | None = None


@dataclass
class TimelineRow:
    group: Group
    task: str | None
    title: str | None = None
    cells: dict[int, dict[str, int]] = field(default_factory=dict)  # column → verdict counts
    totals: Counter[str] = field(default_factory=Counter)
    # Its passes as marks: (started_at text, machine, clone, commit).
    passed: list[tuple[str, str | None, str, str | None]] = field(default_factory=list)

    def worst(self, column: int) -> str | None:
        counts = self.cells.get(column)
        if not counts:
            return None
        return next(v for v in SEVERITY if counts.get(v))


@dataclass
class Timeline:
    columns: list[date]   # the first day of each column
    step_days: int
    rows: list[TimelineRow]
    omitted_rows: int
    totals: Counter[str]


@dataclass
class OutputView:
    """The recipe output of a failing attempt, or why it cannot be shown here."""

    tail: list[str] = field(default_factory=list)
    full: str | None = None
    truncated_bytes: int = 0
    missing: str | None = None  # said instead, when the output cannot be shown


@dataclass
class Failure:
    attempt: AttemptRow
    group: Group
    standing: Standing
    summary: str | None         # the task's own words when the ledger has them
    summary_recorded: bool      # False: rebuilt from the ledger's columns (an older ledger)
    title: str | None = None
    output: OutputView | None = None  # read only for the detailed ones


@dataclass
class Unchecked:
    """Attempts of one task (or repository) not checked for one reason: the reason once, how
    often, when first and last, and on which machines."""

    group: Group
    task: str | None
    verdict: str
    reason: str | None
    count: int
    first: datetime
    last: datetime
    machines: set[str] = field(default_factory=set)
    title: str | None = None


@dataclass
class TaskPasses:
    group: Group
    task: str | None
    title: str | None
    count: int
    newest: list[PassRow]


@dataclass
class Review:
    since: datetime
    until: datetime
    zone: tzinfo
    filters: list[tuple[str, str]]
    machine_column: bool
    groups: list[Group]
    runs: RunsView
    timeline: Timeline
    failures: list[Failure]          # newest first; the first DETAILED_FAILURES carry output
    omitted_failures: int
    unchecked: list[Unchecked]       # the newest reason first
    unchecked_total: int
    passes: list[TaskPasses]
    audits: list[AuditView]          # failing first, then newest first
    unshown: list[str]               # what could not be shown, said as such


@dataclass(frozen=True)
class Edges:
    """What the review asks of the world outside the ledger."""

    identity: Callable[[str | None, str], str]
    site_of: Callable[[str], Site | None]            # a clone path's hosting site
    identity_site: Callable[[str], Site | None]      # an identity's (github.com/o/n)
    audit_site_of: Callable[[AuditRun, AuditFinding], Site | None]
    read_output: Callable[[AttemptRow], OutputView]
    title_of: Callable[[str, str | None], str | None]


class _Groups:
    def __init__(self, edges: Edges) -> None:
        self.edges = edges
        self.by_identity: dict[str, Group] = {}
        self.by_clone: dict[tuple[str | None, str], Group] = {}

    def of(self, machine: str | None, repo: str) -> Group:
        group = self.by_clone.get((machine, repo))
        if group is not None:
            return group
        identity = self.edges.identity(machine, repo)
        group = self.by_identity.get(identity)
        if group is None:
            group = self.by_identity[identity] = Group("", identity)
        group.clones.add((machine, repo))
        self.by_clone[(machine, repo)] = group
        return group

    def finish(self) -> list[Group]:
        names = group_names(self.by_identity)
        ordered = sorted(self.by_identity.values(), key=lambda g: (names[g.identity], g.identity))
        for i, group in enumerate(ordered):
            group.key, group.name = f"g{i}", names[group.identity]
            group.site = self.edges.identity_site(group.identity) or next(
                (s for _m, repo in sorted(group.clones, key=str)
                 if (s := self.edges.site_of(repo)) is not None), None)
        return ordered


def build_review(data: LedgerData, *, since: datetime, until: datetime, now: datetime,
                 zone: tzinfo, filters: list[tuple[str, str]], edges: Edges) -> Review:
    groups = _Groups(edges)
    timeline = build_timeline(data.marks, since, until, zone, groups)
    runs = build_runs(data.runs, data.pieced, since=since, until=until, now=now, zone=zone,
                      columns=timeline.columns, step=timeline.step_days)
    standing = standings(data.history, edges.identity, zone)
    failures = [_failure(r, groups.of(r.machine, r.repo), standing) for r in
                data.failing[:DETAILED_FAILURES + LISTED_FAILURES]]
    unchecked = _unchecked(data.unchecked, groups)
    passes = _passes(timeline)
    views = [audit_view(run, edges.audit_site_of) for run in
             sorted(data.audits, key=detail_order)]
    for view in views:
        view.keys = sorted({groups.of(view.run.machine, repo).identity
                            for repo in view.run.repos})
    ordered = groups.finish()
    _order(timeline, passes)
    for view in views:
        view.keys = sorted(groups.by_identity[i].key for i in view.keys)
    titles = _Titles(edges.title_of, data.task_paths)
    for row in timeline.rows:
        row.title = titles(row.group, row.task)
    for failure in failures[:DETAILED_FAILURES]:
        failure.output = edges.read_output(failure.attempt)
        failure.title = titles(failure.group, failure.attempt.task_id)
    for entry in unchecked:
        entry.title = titles(entry.group, entry.task)
    for task in passes:
        task.title = titles(task.group, task.task)
    unshown = _unshown(data, timeline, failures, len(unchecked))
    return Review(since, until, zone, filters, data.has_machine, ordered, runs, timeline,
                  failures, max(0, data.failing_total - len(failures)), unchecked,
                  data.unchecked_total, passes, views, unshown)


class _Titles:
    """A task's title, from whichever clone of its repository has the task file here."""

    def __init__(self, title_of: Callable[[str, str | None], str | None],
                 task_paths: dict[tuple[str, str | None], str | None]) -> None:
        self.title_of = title_of
        self.task_paths = task_paths
        self.cache: dict[tuple[str, str | None], str | None] = {}

    def __call__(self, group: Group, task: str | None) -> str | None:
        if task is None:
            return None
        key = (group.identity, task)
        if key not in self.cache:
            self.cache[key] = next(
                (t for _m, repo in sorted(group.clones, key=str)
                 if (t := self.title_of(repo, self.task_paths.get((repo, task)))) is not None),
                None)
        return self.cache[key]


def _failure(r: AttemptRow, group: Group, standing: dict[int, Standing]) -> Failure:
    found = standing.get(r.id) or Standing(True, r.started_at, 1)
    if r.summary:
        return Failure(r, group, found, r.summary, True)
    # A drift writes nothing into its task: its reason says it all.
    rebuilt = exit_summary(r) if r.verdict in ("fail", "timeout") else None
    return Failure(r, group, found, rebuilt, False)


def _unchecked(rows: Sequence[AttemptRow], groups: _Groups) -> list[Unchecked]:
    folded: dict[tuple[str, str | None, str, str | None], Unchecked] = {}
    for r in rows:  # newest first
        group = groups.of(r.machine, r.repo)
        key = (group.identity, r.task_id, r.verdict, r.reason)
        entry = folded.get(key)
        if entry is None:
            entry = folded[key] = Unchecked(group, r.task_id, r.verdict, r.reason, 0,
                                            r.started_at, r.started_at)
        entry.count += 1
        entry.first = min(entry.first, r.started_at)
        if r.machine:
            entry.machines.add(r.machine)
    return list(folded.values())[:UNCHECKED_LISTED]


def _passes(timeline: Timeline) -> list[TaskPasses]:
    """Each task's passes: how many, and the newest PASSES_PER_TASK."""
    out = []
    for row in timeline.rows:
        if not row.passed:
            continue
        newest = sorted(row.passed, key=lambda p: p[0], reverse=True)[:PASSES_PER_TASK]
        out.append(TaskPasses(row.group, row.task, None, len(row.passed), [
            PassRow(datetime.fromisoformat(at).replace(tzinfo=UTC), machine, repo, row.task, sha)
            for at, machine, repo, sha in newest]))
        row.passed = []
    return out


def _unshown(data: LedgerData, timeline: Timeline, failures: list[Failure],
             unchecked_listed: int) -> list[str]:
    unshown: list[str] = []
    no_commit = sum(1 for f in failures
                    if f.attempt.verdict in ("fail", "timeout") and not f.attempt.commit_sha)
    if no_commit:
        unshown.append(f"{no_commit} failing attempt(s) have no verdict commit in the ledger")
    rebuilt = sum(1 for f in failures if f.summary and not f.summary_recorded)
    if rebuilt:
        unshown.append(f"{rebuilt} failing attempt(s) were recorded before the ledger kept the "
                       "task's summary: theirs is rebuilt from the ledger's columns")
    elsewhere = sum(1 for f in failures if f.output is not None and f.output.missing
                    and "another machine" in f.output.missing)
    if elsewhere:
        unshown.append(f"the output of {elsewhere} failing attempt(s) is on another machine")
    omitted = data.failing_total - len(failures)
    if omitted > 0:
        unshown.append(f"{omitted} older failing attempt(s) are not listed: narrow the window "
                       "or filter by --repo, --task or --verdict")
    if data.unchecked_total > len(data.unchecked):
        unshown.append(f"{data.unchecked_total - len(data.unchecked)} older attempt(s) not "
                       "checked are not listed: narrow the window")
    if timeline.omitted_rows:
        unshown.append(f"{timeline.omitted_rows} timeline row(s) are not laid out: narrow the "
                       "report with --repo or --task")
    if not data.has_machine:
        unshown.append("the ledger records no machine per attempt: output files are looked for "
                       "on this machine")
    return unshown


def timeline_columns(since: datetime, until: datetime,
                     zone: tzinfo) -> tuple[list[date], int, tuple[str, ...]]:
    """The first day of each column, the days per column, and where each column starts as the
    ledger's text of naive UTC times (see query.Mark)."""
    first = since.astimezone(zone).date()
    last = (until - timedelta(microseconds=1)).astimezone(zone).date()
    span = (last - first).days + 1
    # Days while they fit a screen, then weeks (or more: at most ~100 columns).
    step = 1 if span <= 62 else max(7, -(-span // 100))
    columns = [first + timedelta(days=i) for i in range(0, span, step)]
    starts = tuple(datetime.combine(day, time.min, tzinfo=zone).astimezone(UTC)
                   .replace(tzinfo=None).isoformat(sep=" ") for day in columns)
    return columns, step, starts


def build_timeline(marks: Sequence[Mark], since: datetime, until: datetime, zone: tzinfo,
                   groups: _Groups) -> Timeline:
    columns, step, starts = timeline_columns(since, until, zone)
    table: dict[tuple[str, str | None], TimelineRow] = {}
    # A clone's task is one row (of its repository's group): found once, not per attempt.
    rows: dict[tuple[str | None, str, str | None], TimelineRow] = {}
    for started, machine, repo, task, raw, sha in marks:
        row = rows.get((machine, repo, task))
        if row is None:
            group = groups.of(machine, repo)
            row = table.get((group.identity, task))
            if row is None:
                row = table[(group.identity, task)] = TimelineRow(group, task)
            rows[(machine, repo, task)] = row
        # A row's column is one bisect away: no time-zone conversion per attempt.
        column = bisect_right(starts, started) - 1
        cell = row.cells.get(column)
        if cell is None:
            cell = row.cells[column] = {}
        cell[raw] = cell.get(raw, 0) + 1
        if raw == "pass":
            row.passed.append((started, machine, repo, sha))
    totals: Counter[str] = Counter()
    for row in table.values():
        for column, cell in row.cells.items():
            if not _SEVERE.issuperset(cell):
                # A verdict this version does not know is coloured and counted as "other".
                known = {v: n for v, n in cell.items() if v in _SEVERE}
                known["other"] = sum(n for v, n in cell.items() if v not in _SEVERE)
                row.cells[column] = cell = known
            for verdict, n in cell.items():
                row.totals[verdict] += n
        totals.update(row.totals)
    # Ordered and cut to TIMELINE_LIMIT once the groups have their names (_order).
    return Timeline(columns, step, list(table.values()), 0, totals)


def _order(timeline: Timeline, passes: list[TaskPasses]) -> None:
    """Groups by name, tasks in natural order, the repository's own row first."""
    def key(group: Group, task: str | None) -> tuple[int, bool, tuple[tuple[int, int | str], ...]]:
        return (int(group.key[1:]), task is not None, _natural(task or ""))

    rows = sorted(timeline.rows, key=lambda t: key(t.group, t.task))
    timeline.rows, timeline.omitted_rows = rows[:TIMELINE_LIMIT], max(0, len(rows) - TIMELINE_LIMIT)
    passes.sort(key=lambda t: key(t.group, t.task))


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    # TASK-2 before TASK-10.
    return tuple((0, int(p)) if p.isdigit() else (1, p)
                 for p in re.split(r"(\d+)", text) if p)


def exit_summary(r: AttemptRow) -> str:
    """A failure's first line rebuilt from the ledger row, for rows recorded before the ledger
    kept the task's own summary (the reason is shown beside it)."""
    recipe = f"`just {r.recipe}`" if r.recipe else "the recipe"
    took = f" after {r.duration:.1f}s" if r.duration is not None else ""
    if r.verdict == "timeout":
        return f"{recipe} timed out{took}"
    if r.exit_code is not None:
        return f"{recipe} exited {r.exit_code}{took}"
    return f"{recipe} failed"
