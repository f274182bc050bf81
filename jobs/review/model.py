"""The review's content, judged from ledger rows alone: timeline, failures and audit runs.

Pure: the renderers (html.py, markdown.py) only lay this out, and the edges (reading output
files, asking git for remotes) are passed in as functions.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from jobs.ledger.audits import AuditFinding, AuditRun
from jobs.review.links import Site
from jobs.review.query import AttemptRow, LedgerData, Mark

# Colours of the timeline, worst first: a day's cell shows its worst verdict.
SEVERITY = ("fail", "timeout", "error", "drift", "interrupted", "pass", "other")
TIMELINE_LIMIT = 3000     # rows of the timeline laid out at all
TIMELINE_OPEN = 200       # of which shown before the rest is collapsed
DETAILED_FAILURES = 100   # failing attempts shown with their output
LISTED_FAILURES = 2000    # further failing attempts listed one line each
FINDINGS_PER_RUN = 200    # findings shown per audit run (failing ones first)


_SEVERE = frozenset(SEVERITY)


@dataclass
class TimelineRow:
    repo: str
    task: str | None
    title: str | None = None
    cells: dict[int, dict[str, int]] = field(default_factory=dict)  # column → verdict counts
    totals: Counter[str] = field(default_factory=Counter)

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
    summary: str
    site: Site | None
    title: str | None = None
    output: OutputView | None = None  # read only for the detailed ones


@dataclass
class RefGroup:
    """One ref of an audited repository and its findings: the ref's own, then its commits."""

    repo: str
    remote: str | None
    ref: str | None
    findings: list[AuditFinding]
    site: Site | None

    @property
    def failing(self) -> bool:
        return any(f.failing for f in self.findings)


@dataclass
class AuditView:
    run: AuditRun
    groups: list[RefGroup]
    omitted_findings: int


@dataclass
class Review:
    since: datetime
    until: datetime
    zone: tzinfo
    filters: list[tuple[str, str]]
    machine_column: bool
    timeline: Timeline
    failures: list[Failure]          # newest first; the first DETAILED_FAILURES carry output
    omitted_failures: int
    audits: list[AuditView]          # failing first, then newest first
    unshown: list[str]               # what could not be shown, said as such


def build_review(data: LedgerData, *, since: datetime, until: datetime, zone: tzinfo,
                 filters: list[tuple[str, str]], site_of: Callable[[str], Site | None],
                 audit_site_of: Callable[[AuditRun, AuditFinding], Site | None],
                 read_output: Callable[[AttemptRow], OutputView],
                 title_of: Callable[[str, str | None], str | None]) -> Review:
    timeline = build_timeline(data.marks, since, until, zone)
    for row in timeline.rows:
        row.title = title_of(row.repo, data.task_paths.get((row.repo, row.task)))
    failures = [Failure(r, exit_summary(r), site_of(r.repo)) for r in
                data.failing[:DETAILED_FAILURES + LISTED_FAILURES]]
    for failure in failures[:DETAILED_FAILURES]:
        failure.output = read_output(failure.attempt)
        failure.title = title_of(failure.attempt.repo, failure.attempt.task_path)
    views = [audit_view(run, audit_site_of) for run in
             sorted(data.audits, key=lambda a: (a.verdict == "pass", -a.recorded_at.timestamp()))]
    unshown: list[str] = []
    no_commit = sum(1 for f in failures
                    if f.attempt.verdict in ("fail", "timeout") and not f.attempt.commit_sha)
    if no_commit:
        unshown.append(f"{no_commit} failing attempt(s) have no verdict commit in the ledger")
    elsewhere = sum(1 for f in failures if f.output is not None and f.output.missing
                    and "another machine" in f.output.missing)
    if elsewhere:
        unshown.append(f"the output of {elsewhere} failing attempt(s) is on another machine")
    omitted = data.failing_total - len(failures)
    if omitted > 0:
        unshown.append(f"{omitted} older failing attempt(s) are not listed: narrow the window "
                       "or filter by --repo, --task or --verdict")
    if timeline.omitted_rows:
        unshown.append(f"{timeline.omitted_rows} timeline row(s) are not laid out: narrow the "
                       "report with --repo or --task")
    if not data.has_machine:
        unshown.append("the ledger records no machine per attempt: output files are looked for "
                       "on this machine")
    return Review(since, until, zone, filters, data.has_machine, timeline, failures,
                  max(0, omitted), views, unshown)


def timeline_columns(since: datetime, until: datetime,
                     zone: tzinfo) -> tuple[list[date], int, tuple[datetime, ...]]:
    """The first day of each column, the days per column, and where each column starts in the
    ledger's naive UTC."""
    first = since.astimezone(zone).date()
    last = (until - timedelta(microseconds=1)).astimezone(zone).date()
    span = (last - first).days + 1
    # Days while they fit a screen, then weeks (or more: at most ~100 columns).
    step = 1 if span <= 62 else max(7, -(-span // 100))
    columns = [first + timedelta(days=i) for i in range(0, span, step)]
    starts = tuple(datetime.combine(day, time.min, tzinfo=zone).astimezone(UTC)
                   .replace(tzinfo=None) for day in columns)
    return columns, step, starts


def build_timeline(marks: Sequence[Mark], since: datetime, until: datetime,
                   zone: tzinfo) -> Timeline:
    columns, step, starts = timeline_columns(since, until, zone)
    table: dict[tuple[str, str | None], TimelineRow] = {}
    totals: Counter[str] = Counter()
    for started, repo, task, raw in marks:
        row = table.get((repo, task))
        if row is None:
            row = table[(repo, task)] = TimelineRow(repo, task)
        # A row's column is one bisect away: no time-zone conversion per attempt.
        column = max(0, bisect_right(starts, started) - 1)
        verdict = raw if raw in _SEVERE else "other"
        cell = row.cells.get(column)
        if cell is None:
            cell = row.cells[column] = {}
        cell[verdict] = cell.get(verdict, 0) + 1
    for row in table.values():
        for cell in row.cells.values():
            row.totals.update(cell)
    for row in table.values():
        totals.update(row.totals)
    ordered = sorted(table.values(), key=lambda t: (t.repo, t.task is not None,
                                                    _natural(t.task or "")))
    return Timeline(columns, step, ordered[:TIMELINE_LIMIT],
                    max(0, len(ordered) - TIMELINE_LIMIT), totals)


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    # TASK-2 before TASK-10.
    return tuple((0, int(p)) if p.isdigit() else (1, p)
                 for p in re.split(r"(\d+)", text) if p)


def exit_summary(r: AttemptRow) -> str:
    """The summary's first line as the task notes carry it, rebuilt from the ledger row, and
    the recorded reason after it (a refused commit, say)."""
    recipe = f"`just {r.recipe}`" if r.recipe else "the recipe"
    took = f" after {r.duration:.1f}s" if r.duration is not None else ""
    if r.verdict == "timeout":
        text = f"{recipe} timed out{took}"
    elif r.verdict == "fail" and r.exit_code is not None:
        text = f"{recipe} exited {r.exit_code}{took}"
    elif r.verdict == "fail":
        text = f"{recipe} failed"
    else:
        text = r.verdict
    if r.reason:
        text += f": {r.reason}"
    elif r.verdict not in ("fail", "timeout"):
        text += ": no reason recorded"
    return text


def audit_view(run: AuditRun,
               site_of: Callable[[AuditRun, AuditFinding], Site | None]) -> AuditView:
    groups: dict[tuple[str, str | None, str | None], RefGroup] = {}
    for f in run.findings:
        key = (f.repo, f.remote, f.ref)
        if key not in groups:
            groups[key] = RefGroup(f.repo, f.remote, f.ref, [], site_of(run, f))
        groups[key].findings.append(f)
    ordered = sorted(groups.values(), key=lambda g: not g.failing)
    for g in ordered:
        # The ref's own findings first, then its commits (failing ones first), as closeout does.
        g.findings.sort(key=lambda f: (f.kind == "commit", not f.failing))
    shown, budget = [], FINDINGS_PER_RUN
    for g in ordered:
        if budget <= 0:
            break
        shown.append(RefGroup(g.repo, g.remote, g.ref, g.findings[:budget], g.site))
        budget -= len(shown[-1].findings)
    omitted = len(run.findings) - sum(len(g.findings) for g in shown)
    return AuditView(run, shown, omitted)


def finding_change(f: AuditFinding, sha: Callable[[str | None], str],
                   text: Callable[[str], str]) -> str:
    """What a finding says changed, for either format: `sha` renders a commit (a link, say),
    `text` escapes the kind for the format."""
    if f.kind == "commit" and f.count > 1:
        return f"{f.count} commits {sha(f.first)}..{sha(f.last)}"
    if f.kind == "commit":
        return f"commit {sha(f.commit)}"
    return f"{text(f.kind)} {sha(f.before)}..{sha(f.after)}"
