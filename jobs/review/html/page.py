"""The review as one self-contained HTML page: inline CSS, one small inline script (the filters),
no request of any kind.

Every piece of text goes through `esc` (html.escape, quotes included): task titles, ids, output
and reasons come from repositories and recipes, and a `<script>` in any of them is text; a
control character or bidirectional override in them is shown as an escape (`visible`).
The Content-Security-Policy allows no request and only the page's own script, by its hash: a
script that came in through the ledger would not run even if it escaped being escaped.
The page reads fully with scripts off: the filter bar is hidden until the script shows it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections import Counter
from datetime import datetime, tzinfo
from importlib import resources

from jobs.review.html.audit import audits
from jobs.review.html.common import chip, chips, esc, folded_list, group_attr, when
from jobs.review.html.entries import failures, passes, unchecked
from jobs.review.model import NOT_CHECKED, SEVERITY, TIMELINE_OPEN, Review, Timeline, TimelineRow
from jobs.review.mornings import STATE_WORDS, STATES, NoRun, RunEntry, RunsView

_ASSETS = resources.files("jobs.review.html")
CSS = (_ASSETS.joinpath("review.css").read_text(encoding="utf-8")
       + "".join(f".v-{v},.tl td.v-{v}{{background:var(--{v})}}" for v in SEVERITY)
       + ".v-could_not_check{background:var(--timeout)}"
       + "".join(f".s-{s},.tl td.s-{s}{{background:var(--{s})}}" for s in STATES) + "\n")
SCRIPT = _ASSETS.joinpath("filters.js").read_text(encoding="utf-8")
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'"
EXIT_WORDS = {0: "0 ok", 1: "1 failed", 2: "2 usage", 3: "3 not all checked"}


def render_html(review: Review, generated_at: datetime) -> str:
    tz = review.zone
    window = f"{when(review.since, tz)} – {when(review.until, tz)}"
    parts = [
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>loop-jobs review {esc(window)}</title><style>{CSS}</style></head><body>",
        "<header><h1>loop-jobs incident review</h1>",
        f'<p class="meta">{esc(window)} ({esc(_zone_name(review))})'
        + "".join(f" · {esc(k)} <code>{esc(v)}</code>" for k, v in review.filters)
        + f" · generated {when(generated_at, tz)}</p></header>",
        _filter_bar(review),
        _summary(review),
        _runs(review.runs, tz),
        _timeline(review, tz),
        failures(review),
        unchecked(review),
        passes(review),
        audits(review),
        _unshown(review),
        f"<script>{SCRIPT}</script>",
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _zone_name(review: Review) -> str:
    return str(getattr(review.zone, "key", None) or review.since.astimezone(review.zone).tzname())


def _filter_bar(review: Review) -> str:
    # An audit run's verdict is offered too: a failing audit may be the one thing to look at.
    audited = {a.run.verdict for a in review.audits}
    verdicts = [v for v in SEVERITY if review.timeline.totals.get(v) or v in audited]
    verdicts += [v for v in ("could_not_check",) if v in audited]
    options = "".join(f'<option value="{v}">{v}</option>' for v in verdicts)
    repos = "".join(f'<option value="{esc(g.key)}">{esc(g.name)}</option>'
                    for g in review.groups)
    return ('<nav id="filters" hidden aria-label="filters">'
            '<label>verdict <select id="filter-verdict"><option value="">all</option>'
            f"{options}</select></label>"
            '<label>repository <select id="filter-repo"><option value="">all</option>'
            f"{repos}</select></label>"
            '<span id="filter-said" class="note"></span></nav>')


def _summary(review: Review) -> str:
    runs = review.runs
    t = review.timeline.totals
    last = runs.last
    ran = (f"{runs.total} run(s)" + (f" on {', '.join(esc(m) for m in runs.machines)}"
                                     if runs.machines else ""))
    if last is not None:
        ran += (f"; the last started {when(last.run.started_at, review.zone)} on "
                f"{esc(last.run.machine or '?')}: {esc(_exit(last))}")
    missing = (f'<span class="bad">{runs.no_run_days} day(s) without a run</span>'
               if runs.no_run_days else '<span class="good">a run every day</span>')
    new = sum(1 for f in review.failures if f.standing.new)
    still = len(review.failures) - new
    failing = sum(t.get(v, 0) for v in ("fail", "timeout", "drift"))
    failed = (f"{failing} failing attempt(s): {new} new, {still} still failing"
              + (" (of those listed)" if review.omitted_failures else "")
              if failing else "nothing failed")
    not_checked = Counter({v: t.get(v, 0) for v in NOT_CHECKED})
    audits_seen = Counter(a.run.verdict for a in review.audits)
    lines = [
        ("did it run", f"{ran} · {missing}"),
        ("what failed", failed + chips(t, ("fail", "timeout", "drift"))),
        ("not checked", (chips(not_checked, NOT_CHECKED) if sum(not_checked.values())
                         else "everything due was checked")),
        ("all attempts", f"{sum(t.values())} attempt(s)" + chips(t)),
        ("audit runs", f"{len(review.audits)}"
         + chips(audits_seen, ("fail", "could_not_check", "pass"))),
    ]
    return ('<section id="summary"><h2>Summary</h2>'
            + "".join(f'<div class="line"><span class="label">{k}</span><span>{v}</span></div>'
                      for k, v in lines) + "</section>")


def _exit(entry: RunEntry) -> str:
    if entry.run.exit_code is not None:
        return "exit " + EXIT_WORDS.get(entry.run.exit_code, str(entry.run.exit_code))
    if entry.pieced:
        return "exit code not recorded"
    return "not finished"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _runs(view: RunsView, tz: tzinfo) -> str:
    out = [f'<section id="runs"><h2>Runs ({view.total})</h2>',
           '<p class="meta">Newest first. Days are counted in the configured time zone, across '
           "the machines shown; a day with no run is marked <b>no run</b>.</p>"]
    if not view.entries:
        out.append('<p class="note">No run and no day in this window.</p></section>')
        return "".join(out)
    head = ("<thead><tr><th>start</th><th>exit code</th><th>machine</th><th>trigger</th>"
            "<th>duration</th><th>verdicts</th></tr></thead>")
    rows = [_run_row(e, tz) for e in view.entries]
    out.append(f'<div class="scroll"><table class="list runs">{head}<tbody>'
               + "".join(rows[:RUNS_OPEN]) + "</tbody></table></div>")
    if len(rows) > RUNS_OPEN:
        out.append(f"<details><summary>{len(rows) - RUNS_OPEN} earlier entries</summary>"
                   f'<div class="scroll"><table class="list runs">{head}<tbody>'
                   + "".join(rows[RUNS_OPEN:]) + "</tbody></table></div></details>")
    if view.omitted:
        out.append(f'<p class="note">{view.omitted} earlier run(s) are not listed (every day '
                   "without a run is): narrow the window.</p>")
    out.append("</section>")
    return "".join(out)


RUNS_OPEN = 20


def _run_row(entry: RunEntry | NoRun, tz: tzinfo) -> str:
    if isinstance(entry, NoRun):
        return (f'<tr class="norun"><td class="when">{esc(entry.last.isoformat())}</td>'
                f'<td colspan="5"><span class="day-norun chip">&nbsp;</span> '
                f"{esc(entry.words())}</td></tr>")
    run = entry.run
    trigger = run.trigger or "–"
    counts = {k: v for k, v in run.counts.items() if v}
    said = (" ".join(f'<span class="chip v-{v if v in SEVERITY else "other"}">{n} {esc(v)}'
                     "</span>" for v, n in sorted(counts.items(), key=_severity))
            or f'<span class="note">{entry.no_verdicts}</span>')
    pieced = (' <span class="note" title="recorded before the ledger kept runs: told by its '
              'attempts">(from its attempts)</span>' if entry.pieced else "")
    return (f'<tr class="run"><td class="when" title="run {esc(run.run_id)}">'
            f"{when(run.started_at, tz)}</td>"
            f'<td><span class="chip s-{entry.state}" title="{esc(STATE_WORDS[entry.state])}">'
            f"{esc(_exit(entry))}</span></td><td>{esc(run.machine or '–')}</td>"
            f"<td>{esc(trigger)}{pieced}</td><td>{_duration(entry.duration)}</td>"
            f'<td><div class="chips">{said}</div></td></tr>')


def _severity(item: tuple[str, int]) -> int:
    return SEVERITY.index(item[0]) if item[0] in SEVERITY else len(SEVERITY)


def _timeline(review: Review, tz: tzinfo) -> str:
    tl = review.timeline
    out = ['<section id="timeline"><h2>Timeline</h2>',
           '<p class="meta">One square per ' + _unit(tl.step_days)
           + ": the runs (striped: no run), then each repository and task, coloured by its worst "
           "verdict; hover for the counts.</p>",
           '<div class="chips">' + "".join(f'<span class="chip v-{v}">{v}</span>'
                                           for v in SEVERITY[:-1]) + "</div>"]
    head = ['<tr><th class="row">repository / task</th>']
    for day in tl.columns:
        # The day of the month; a month's first column in bold (its name on hover).
        first = day.day <= tl.step_days or day == tl.columns[0]
        head.append(f'<th class="day{" month" if first else ""}" title="{day.isoformat()}'
                    f'{day.strftime(" (%B)") if first else ""}">{day.day}</th>')
    head.append("<th>counts</th></tr>")
    header = "<thead>" + "".join(head) + "</thead>"
    runs = _runs_row(review.runs, len(tl.columns))
    rows = [_timeline_rows(tl, r, tl.rows[i - 1] if i else None)
            for i, r in enumerate(tl.rows[:TIMELINE_OPEN])]
    out.append(f'<div class="scroll"><table class="tl">{header}<tbody>{runs}'
               + "".join(rows) + "</tbody></table></div>")
    if not tl.rows:
        out.append('<p class="note">No verify attempts in this window.</p>')
    if len(tl.rows) > TIMELINE_OPEN:
        # The rest with their counts alone: a wall of squares nobody reads would weigh most
        # of a big report (--repo or --task lays any of them out).
        rest = [_folded_row(r) for r in tl.rows[TIMELINE_OPEN:]]
        out.append(folded_list(f"{len(rest)} more row(s), counts only", rest))
    out.append("</section>")
    return "".join(out)


def _unit(step: int) -> str:
    return "day" if step == 1 else "week" if step == 7 else f"{step} days"


def _runs_row(view: RunsView, width: int) -> str:
    cells = []
    for cell in view.cells[:width]:
        css = f"s-{cell.state}" if cell.state else ""
        if cell.no_run:
            css = (css + " norun").strip()
        cells.append(f'<td class="{css}" title="{esc(cell.title)}"></td>' if css else
                     f'<td title="{esc(cell.title)}"></td>')
    states = " ".join(f"{n} {s}" for s, n in view.states.items())
    return (f'<tr class="runs"><th class="row">runs</th>{"".join(cells)}'
            f'<td class="n">{esc(states)}</td></tr>')


_EMPTY = "<td></td>"


@functools.lru_cache(maxsize=4096)
def _cell_html(counts: tuple[tuple[str, int], ...]) -> str:
    # Verdict names here are the fixed SEVERITY words (model.py maps any other to "other").
    present = dict(counts)
    worst = next(v for v in SEVERITY if present.get(v))
    said = ", ".join(f"{n} {v}" for v, n in counts)
    return f'<td class="v-{worst}" title="{said}"></td>'


def _cell(counts: dict[str, int] | None) -> str:
    # Most cells of a big timeline repeat ("1 pass"): each distinct one is rendered once.
    return _cell_html(tuple(sorted(counts.items()))) if counts else _EMPTY


def _timeline_rows(tl: Timeline, row: TimelineRow, prev: TimelineRow | None) -> str:
    out = []
    group = row.group
    if prev is None or prev.group is not group:
        verdicts = " ".join(sorted({v for r in tl.rows if r.group is group for v in r.totals}))
        clones = ", ".join(f"{m}:{p}" if m else p for m, p in sorted(group.clones, key=str))
        out.append(f'<tr class="repo"{group_attr(group)} data-verdicts="{esc(verdicts)}">'
                   f'<th colspan="{len(tl.columns) + 2}" title="{esc(group.identity)} — clones: '
                   f'{esc(clones)}">{esc(group.name)} '
                   f'<span class="meta">{esc(group.identity)}</span></th></tr>')
    label = row.task or "(repository)"
    if row.title:
        label += f" — {row.title}"
    cells = [_cell(row.cells.get(i)) for i in range(len(tl.columns))]
    totals = " ".join(f"{row.totals[v]} {v}" for v in SEVERITY if row.totals.get(v))
    verdicts = " ".join(v for v in SEVERITY if row.totals.get(v))
    out.append(f'<tr{group_attr(group)} data-verdicts="{verdicts}"><th class="row" '
               f'title="{esc(label)}">{esc(label)}</th>{"".join(cells)}'
               f'<td class="n">{esc(totals)}</td></tr>')
    return "".join(out)


def _folded_row(row: TimelineRow) -> str:
    label = row.task or "(repository)"
    if row.title:
        label += f" — {row.title}"
    verdicts = " ".join(v for v in SEVERITY if row.totals.get(v))
    totals = " ".join(f"{row.totals[v]} {v}" for v in SEVERITY if row.totals.get(v))
    return (f'<tr{group_attr(row.group)} data-verdicts="{verdicts}"><td>{esc(row.group.name)}'
            f"</td><td>{esc(label)}</td><td>{esc(totals)}</td></tr>")


def _unshown(review: Review) -> str:
    if not review.unshown:
        return ""
    return ('<section id="unshown"><h2>Not shown</h2><ul>'
            + "".join(f"<li>{esc(line)}</li>" for line in review.unshown) + "</ul></section>")


__all__ = ["CSP", "chip", "render_html"]
