"""The review as one self-contained HTML page: inline CSS, no script, no request of any kind.

Every piece of text goes through `esc` (html.escape, quotes included): task titles, ids, output
and reasons come from repositories and recipes, and a `<script>` in any of them is text; a
control character or bidirectional override in them is shown as an escape (`visible`).
A Content-Security-Policy of `default-src 'none'` makes the no-request promise the browser's too.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, tzinfo
from html import escape

from jobs.ledger.audits import AuditFinding
from jobs.review.links import Site
from jobs.review.model import (
    SEVERITY,
    TIMELINE_OPEN,
    AuditView,
    Failure,
    Review,
    Timeline,
    TimelineRow,
    finding_change,
)
from jobs.review.visible import visible

CSS = """
:root{--pass:#2e9e4f;--fail:#d1242f;--timeout:#e36209;--error:#8250df;--drift:#bf8700;
--interrupted:#0969da;--other:#8c959f;--empty:#eef1f4;--ink:#1f2328;--mute:#59636e}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
margin:0 auto;max-width:1200px;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px}
.meta{color:var(--mute);margin:0}
code,pre,.sha{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;overflow:auto;
max-height:420px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}
.chip{border-radius:12px;padding:2px 10px;color:#fff;font-weight:600;font-size:13px}
.v-pass{background:var(--pass)}.v-fail{background:var(--fail)}.v-timeout{background:var(--timeout)}
.v-error{background:var(--error)}.v-drift{background:var(--drift)}
.v-interrupted{background:var(--interrupted)}.v-other{background:var(--other)}
.v-could_not_check{background:var(--timeout)}
.scroll{overflow-x:auto}
.row{display:flex;align-items:center;gap:8px}.label{color:var(--mute);width:48px}
table{border-collapse:collapse}
.tl th,.tl td{padding:0;border:1px solid #fff}
.tl th.day{font-weight:400;color:var(--mute);font-size:10px;width:16px;text-align:center}
.tl td{width:16px;height:16px;min-width:16px;background:var(--empty)}
.tl th.row{text-align:left;font-weight:400;padding:0 8px 0 0;white-space:nowrap;max-width:380px;
overflow:hidden;text-overflow:ellipsis}
.tl td.n{padding:0 4px;font-size:12px;color:var(--mute);white-space:nowrap;background:none;
width:auto}
.tl tr.repo th{padding-top:8px;font-weight:600;text-align:left}
.failure,.audit{border:1px solid #d0d7de;border-left:6px solid var(--fail);border-radius:6px;
padding:10px 14px;margin:10px 0}
.failure.timeout{border-left-color:var(--timeout)}.failure.error{border-left-color:var(--error)}
.failure.drift{border-left-color:var(--drift)}.failure.interrupted{border-left-color:var(--interrupted)}
.audit.pass{border-left-color:var(--pass)}.audit.could_not_check{border-left-color:var(--timeout)}
.note{color:var(--mute);font-style:italic}
.findings td,.findings th{text-align:left;padding:2px 8px;border-bottom:1px solid #eaeef2;
vertical-align:top}
.findings tr.commit td:first-child{padding-left:24px}
.bad{color:var(--fail);font-weight:600}.good{color:var(--pass)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
dt{color:var(--mute)}dd{margin:0}
summary{cursor:pointer;color:#0969da}
a{color:#0969da}
"""

# In the timeline a verdict's colour must win over the empty cell's grey (`.tl td`).
CSS += "".join(f".tl td.v-{v}{{background:var(--{v})}}" for v in SEVERITY) + "\n"

CSP = "default-src 'none'; style-src 'unsafe-inline'"


def esc(text: object) -> str:
    return escape(visible(str(text), block=True), quote=True)


def render_html(review: Review, generated_at: datetime) -> str:
    tz = review.zone
    window = f"{_when(review.since, tz)} – {_when(review.until, tz)}"
    parts = [
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>loop-jobs review {esc(window)}</title><style>{CSS}</style></head><body>",
        "<header><h1>loop-jobs incident review</h1>",
        f'<p class="meta">{esc(window)} ({esc(_zone_name(review))})'
        + "".join(f" · {esc(k)} <code>{esc(v)}</code>" for k, v in review.filters)
        + f" · generated {esc(_when(generated_at, tz))}</p></header>",
        _summary(review),
        _timeline(review.timeline, tz),
        _failures(review),
        _audits(review),
        _unshown(review),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _when(moment: datetime, tz: tzinfo) -> str:
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def _zone_name(review: Review) -> str:
    return str(getattr(review.zone, "key", None) or review.since.astimezone(review.zone).tzname())


def _chips(counts: Counter[str], order: Iterable[str] = SEVERITY) -> str:
    return '<div class="chips">' + "".join(
        f'<span class="chip v-{v}">{counts[v]} {v}</span>' for v in order if counts.get(v)
    ) + "</div>"


def _summary(review: Review) -> str:
    t = review.timeline.totals
    audits = Counter(a.run.verdict for a in review.audits)
    return ('<section id="summary"><h2>Summary</h2>'
            f"<p>{sum(t.values())} verify attempt(s), {len(review.audits)} audit run(s).</p>"
            '<div class="row"><span class="label">verify</span>' + _chips(t) + "</div>"
            + ('<div class="row"><span class="label">audit</span>'
               + _chips(audits, ("fail", "could_not_check", "pass")) + "</div>" if audits else "")
            + "</section>")


def _timeline(tl: Timeline, tz: tzinfo) -> str:
    out = ['<section id="timeline"><h2>Timeline of verify attempts</h2>',
           '<p class="meta">One square per ' + ("day" if tl.step_days == 1 else "week")
           + ", coloured by its worst verdict; hover for the counts.</p>",
           '<div class="chips">' + "".join(f'<span class="chip v-{v}">{v}</span>'
                                           for v in SEVERITY) + "</div>"]
    if not tl.rows:
        out.append('<p class="note">No verify attempts in this window.</p></section>')
        return "".join(out)
    head = ['<tr><th class="row">repository / task</th>']
    for day in tl.columns:
        label = day.strftime("%b") if day.day == 1 or day == tl.columns[0] else ""
        head.append(f'<th class="day" title="{day.isoformat()}">{label or day.day}</th>')
    head.append("<th>counts</th></tr>")
    header = "<thead>" + "".join(head) + "</thead>"
    rows = [_timeline_rows(tl, r, prev) for r, prev in
            zip(tl.rows, [None, *tl.rows[:-1]], strict=True)]
    out.append(f'<div class="scroll"><table class="tl">{header}<tbody>'
               + "".join(rows[:TIMELINE_OPEN]) + "</tbody></table></div>")
    if len(rows) > TIMELINE_OPEN:
        out.append(f"<details><summary>{len(rows) - TIMELINE_OPEN} more row(s)</summary>"
                   f'<div class="scroll"><table class="tl">{header}<tbody>'
                   + "".join(rows[TIMELINE_OPEN:]) + "</tbody></table></div></details>")
    out.append("</section>")
    return "".join(out)


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
    if prev is None or prev.repo != row.repo:
        out.append(f'<tr class="repo"><th colspan="{len(tl.columns) + 2}" title="{esc(row.repo)}">'
                   f"{esc(_name(row.repo))}</th></tr>")
    label = row.task or "(repository)"
    if row.title:
        label += f" — {row.title}"
    cells = [_cell(row.cells.get(i)) for i in range(len(tl.columns))]
    totals = " ".join(f"{row.totals[v]} {v}" for v in SEVERITY if row.totals.get(v))
    out.append(f'<tr><th class="row" title="{esc(label)}">{esc(label)}</th>{"".join(cells)}'
               f'<td class="n">{esc(totals)}</td></tr>')
    return "".join(out)


def _name(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1] or repo


def _sha(sha: str | None, site: Site | None, *, what: str = "commit") -> str:
    if not sha:
        return "–"
    text = f'<span class="sha">{esc(sha[:12])}</span>'
    if site is None or set(sha) == {"0"}:
        return f'<span title="{esc(sha)}">{text}</span>'
    return f'<a href="{esc(site.commit(sha))}" title="{esc(what)} {esc(sha)}">{text}</a>'


def _failures(review: Review) -> str:
    shown = review.failures
    out = ['<section id="failures"><h2>Failing attempts '
           f"({len(shown) + review.omitted_failures})</h2>"]
    if not shown:
        out.append('<p class="note">No failing attempt in this window.</p>')
    detailed = [f for f in shown if f.output is not None]
    listed = [f for f in shown if f.output is None]
    out.extend(_failure(f, review.zone) for f in detailed)
    if listed:
        out.append(f"<details><summary>{len(listed)} older failing attempt(s)</summary>"
                   '<table class="findings">'
                   + "".join(f"<tr><td>{esc(_when(f.attempt.started_at, review.zone))}</td>"
                             f'<td><span class="chip v-{esc(f.attempt.verdict)}">'
                             f"{esc(f.attempt.verdict)}</span></td>"
                             f"<td>{esc(_name(f.attempt.repo))}</td>"
                             f"<td>{esc(f.attempt.task_id or '')}</td><td>{esc(f.summary)}</td>"
                             f"<td>{_sha(f.attempt.commit_sha, f.site)}</td></tr>"
                             for f in listed)
                   + "</table></details>")
    out.append("</section>")
    return "".join(out)


def _failure(f: Failure, tz: tzinfo) -> str:
    a = f.attempt
    title = f" — {f.title}" if f.title else ""
    commit = (_sha(a.commit_sha, f.site) if a.commit_sha else
              '<span class="note">no verdict commit in the ledger'
              + (f" (edit {esc(a.edit_state)})" if a.edit_state not in (None, "none") else "")
              + "</span>")
    rows = [("when", esc(_when(a.started_at, tz))), ("repository", f"<code>{esc(a.repo)}</code>"),
            ("verify date", esc(a.label_date or "–")), ("verdict commit", commit)]
    if a.machine:
        rows.insert(2, ("machine", esc(a.machine)))
    out = [f'<article class="failure {esc(a.verdict)}"><h3>'
           f'<span class="chip v-{esc(a.verdict)}">{esc(a.verdict)}</span> '
           f"{esc(_name(a.repo))} {esc(a.task_id or '(repository)')}{esc(title)}</h3>",
           f"<p><code>{esc(f.summary)}</code></p><dl>"
           + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"]
    view = f.output
    assert view is not None
    if view.missing:
        out.append(f'<p class="note">{esc(view.missing)}</p>')
    else:
        out.append("<div>last lines of output:</div><pre>" + esc("\n".join(view.tail)) + "</pre>")
        cut = (f", its last {len((view.full or '').encode())} bytes "
               f"({view.truncated_bytes} earlier bytes not shown)" if view.truncated_bytes else "")
        out.append(f"<details><summary>full output{esc(cut)}</summary><pre>"
                   f"{esc(view.full or '')}</pre></details>")
        out.append(f'<p class="meta">output file <code>{esc(a.output_path)}</code></p>')
    out.append("</article>")
    return "".join(out)


def _audits(review: Review) -> str:
    out = [f'<section id="audits"><h2>Audit runs ({len(review.audits)})</h2>']
    if not review.audits:
        out.append('<p class="note">No audit run recorded in this window.</p>')
    out.extend(_audit(view, review.zone) for view in review.audits)
    out.append("</section>")
    return "".join(out)


def _audit(view: AuditView, tz: tzinfo) -> str:
    run = view.run
    facts = [("recorded", esc(_when(run.recorded_at, tz))), ("command", esc(run.command)),
             ("exit code", esc(run.exit_code)),
             ("run directory", f"<code>{esc(run.run_dir or '–')}</code>"),
             ("repositories", "<br>".join(f"<code>{esc(r)}</code>" for r in sorted(run.repos))),
             ("charter sha256", f"<code>{esc(run.charter_sha256 or 'none')}</code>")]
    if run.machine:
        facts.insert(1, ("machine", esc(run.machine)))
    out = [f'<article class="audit {esc(run.verdict)}"><h3>'
           f'<span class="chip v-{esc(run.verdict)}">{esc(run.verdict)}</span> '
           f"audit: {run.findings_total} finding(s), {run.findings_failing} failing</h3><dl>"
           + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"]
    collapsed = run.verdict == "pass" and bool(view.groups)
    if collapsed:
        # A passing run's findings are evidence on demand; failing runs show theirs open.
        out.append(f"<details><summary>{run.findings_total} passing finding(s)</summary>")
    if view.groups:
        out.append('<table class="findings"><thead><tr><th>change</th><th>verdict</th>'
                   "<th>reason</th></tr></thead><tbody>")
        for g in view.groups:
            ref = g.ref or "–"
            link = (f'<a href="{esc(g.site.ref(g.ref))}">{esc(ref)}</a>'
                    if g.site is not None and g.ref else esc(ref))
            out.append(f'<tr class="ref"><th colspan="3">[{esc(_name(g.repo))}] '
                       f"{esc(g.remote or '–')} {link}</th></tr>")
            out.extend(_finding(f, g.site) for f in g.findings)
        out.append("</tbody></table>")
    if collapsed:
        out.append("</details>")
    if view.omitted_findings:
        out.append(f'<p class="note">{view.omitted_findings} further passing finding(s) of this '
                   "run are not shown; the run directory's audit-report.txt has them all.</p>")
    out.append("</article>")
    return "".join(out)


def _finding(f: AuditFinding, site: Site | None) -> str:
    css = "bad" if f.failing else "good"
    change = finding_change(f, lambda sha: _sha(sha, site), esc)
    return (f'<tr class="{"commit" if f.kind == "commit" else "refrow"}"><td>{change}</td>'
            f'<td class="{css}">{esc(f.verdict)}</td><td>{esc(f.reason)}</td></tr>')


def _unshown(review: Review) -> str:
    if not review.unshown:
        return ""
    return ('<section id="unshown"><h2>Not shown</h2><ul>'
            + "".join(f"<li>{esc(line)}</li>" for line in review.unshown) + "</ul></section>")
