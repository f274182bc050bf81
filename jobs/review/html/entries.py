"""The page's attempts: failures (new or still failing, in the task's own words), what was not
checked and why, and the passes, folded."""

from __future__ import annotations

from datetime import tzinfo

from jobs.review.html.common import chip, esc, folded_list, group_attr, repo_task, sha, when
from jobs.review.model import Failure, Review, TaskPasses, Unchecked


def _standing(f: Failure, tz: tzinfo) -> str:
    words = f.standing.words(tz)
    css = "v-new" if f.standing.new else "v-still"
    return f'<span class="chip {css}">{esc(words)}</span>'


def failures(review: Review) -> str:
    shown = review.failures
    out = ['<section id="failures"><h2>What failed '
           f"({len(shown) + review.omitted_failures})</h2>",
           '<p class="meta">Failed, timed out or drifted, newest first; each says whether it is '
           "new or still failing since an earlier attempt of the same task and label.</p>"]
    if not shown:
        out.append('<p class="note">No failing attempt in this window.</p>')
    detailed = [f for f in shown if f.output is not None]
    listed = [f for f in shown if f.output is None]
    out.extend(_failure(f, review.zone) for f in detailed)
    if listed:
        out.append(folded_list(f"{len(listed)} older failing attempt(s)",
                               (_failure_line(f, review.zone) for f in listed)))
    out.append("</section>")
    return "".join(out)


def _failure_line(f: Failure, tz: tzinfo) -> str:
    a = f.attempt
    return (f'<tr{group_attr(f.group)} data-verdicts="{esc(a.verdict)}">'
            f'<td class="when">{when(a.started_at, tz)}</td><td>{chip(a.verdict)}</td>'
            f"<td>{repo_task(f.group, a.task_id, None)}</td><td>{_standing(f, tz)}</td>"
            f"<td>{esc(a.machine or '–')}</td>"
            f"<td>{esc(_first_line(f))}</td>"
            f"<td>{sha(a.commit_sha, f.group.site, title=False)}</td></tr>")


def _first_line(f: Failure) -> str:
    if f.summary:
        return f.summary.splitlines()[0]
    return f.attempt.reason or ""


def _failure(f: Failure, tz: tzinfo) -> str:
    a = f.attempt
    commit = (sha(a.commit_sha, f.group.site) if a.commit_sha else
              '<span class="note">no verdict commit in the ledger'
              + (f" (edit {esc(a.edit_state)})" if a.edit_state not in (None, "none") else "")
              + "</span>")
    rows = [("when", when(a.started_at, tz)), ("machine", esc(a.machine or "–")),
            ("clone", f"<code>{esc(a.repo)}</code>"),
            ("repository", f"<code>{esc(f.group.identity)}</code>"),
            ("verify date", esc(a.label_date or "–")), ("verdict commit", commit)]
    if a.reason:
        rows.insert(0, ("reason", f'<p class="reason">{esc(a.reason)}</p>'))
    out = [f'<article class="failure {esc(a.verdict)}"{group_attr(f.group)} '
           f'data-verdicts="{esc(a.verdict)}"><h3>{chip(a.verdict)} '
           f"{repo_task(f.group, a.task_id, f.title)} {_standing(f, tz)}</h3>"]
    if f.summary is not None:
        said = ("summary, as the task carries it" if f.summary_recorded else
                "summary, rebuilt from the ledger (recorded before it kept the task's own)")
        out.append(f'<div class="meta">{said}:</div><pre class="summary">{esc(f.summary)}</pre>')
    out.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>")
    view = f.output
    assert view is not None
    if view.missing:
        out.append(f'<p class="note">{esc(view.missing)}</p>')
    else:
        if not f.summary_recorded:
            out.append("<div>last lines of output:</div><pre>" + esc("\n".join(view.tail))
                       + "</pre>")
        cut = (f", its last {len((view.full or '').encode())} bytes "
               f"({view.truncated_bytes} earlier bytes not shown)" if view.truncated_bytes else "")
        out.append(f"<details><summary>full output{esc(cut)}</summary><pre>"
                   f"{esc(view.full or '')}</pre></details>")
        out.append(f'<p class="meta">output file <code>{esc(a.output_path)}</code></p>')
    out.append("</article>")
    return "".join(out)


def unchecked(review: Review) -> str:
    entries = review.unchecked
    out = [f'<section id="unchecked"><h2>Not checked ({review.unchecked_total})</h2>',
           '<p class="meta">Refused, skipped, locked, errors and interruptions, each with the '
           "reason the run gave; the same reason for the same task is one line, with how often "
           "and when.</p>"]
    if not entries:
        out.append('<p class="note">Everything due in this window was checked.</p></section>')
        return "".join(out)
    head = ("<thead><tr><th>verdict</th><th>repository / task</th><th>reason</th>"
            "<th>when</th><th>machine</th></tr></thead>")
    out.append(f'<div class="scroll"><table class="list unchecked">{head}<tbody>'
               + "".join(_unchecked_row(e, review.zone) for e in entries)
               + "</tbody></table></div></section>")
    return "".join(out)


def _unchecked_row(e: Unchecked, tz: tzinfo) -> str:
    reason = (f'<p class="reason">{esc(e.reason)}</p>' if e.reason
              else '<span class="note">no reason recorded</span>')
    times = when(e.last, tz)
    if e.count > 1:
        times = (f"{e.count}×, {when(e.first, tz)} – {when(e.last, tz)}")
    return (f'<tr class="unchecked"{group_attr(e.group)} data-verdicts="{esc(e.verdict)}">'
            f"<td>{chip(e.verdict)}</td><td>{repo_task(e.group, e.task, e.title)}</td>"
            f'<td>{reason}</td><td class="when">{times}</td>'
            f"<td>{esc(', '.join(sorted(e.machines)) or '–')}</td></tr>")


def passes(review: Review) -> str:
    out = [f'<section id="passes"><h2>Passes ({review.timeline.totals.get("pass", 0)})</h2>']
    if not review.passes:
        out.append('<p class="note">No pass in this window.</p></section>')
        return "".join(out)
    out.extend(_task_passes(t, review.zone) for t in review.passes)
    out.append("</section>")
    return "".join(out)


def _task_passes(t: TaskPasses, tz: tzinfo) -> str:
    newest = t.newest[0].started_at if t.newest else None
    items = "".join(f"<li>{when(p.started_at, tz)} · {esc(p.machine or '–')} · "
                    f"{sha(p.commit_sha, t.group.site, title=False)}</li>" for p in t.newest)
    more = t.count - len(t.newest)
    if more > 0:
        items += f'<li class="note">and {more} earlier pass(es)</li>'
    return (f'<details class="passes"{group_attr(t.group)} data-verdicts="pass"><summary>'
            f"{repo_task(t.group, t.task, t.title)}: {t.count} pass(es)"
            + (f", the last {when(newest, tz)}" if newest else "")
            + f"</summary><ul>{items}</ul></details>")
