"""The page's audit runs: each run's findings per repository, remote and ref."""

from __future__ import annotations

from datetime import tzinfo

from jobs.ledger.audits import AuditFinding
from jobs.review.audits import AUDITS_DETAILED, AuditView, finding_change
from jobs.review.html.common import chip, esc, folded_list, name, sha, when
from jobs.review.links import Site
from jobs.review.model import Review


def audits(review: Review) -> str:
    out = [f'<section id="audits"><h2>Audit runs ({len(review.audits)})</h2>']
    if not review.audits:
        out.append('<p class="note">No audit run recorded in this window.</p>')
    out.extend(_audit(view, review.zone) for view in review.audits[:AUDITS_DETAILED])
    rest = review.audits[AUDITS_DETAILED:]
    if rest:
        out.append(folded_list(f"{len(rest)} more audit run(s), one line each",
                               (_audit_line(view, review.zone) for view in rest)))
    out.append("</section>")
    return "".join(out)


def _audit_line(view: AuditView, tz: tzinfo) -> str:
    run = view.run
    return (f'<tr data-repo="{esc(" ".join(view.keys))}" data-verdicts="{esc(run.verdict)}">'
            f'<td class="when">{when(run.recorded_at, tz)}</td><td>{chip(run.verdict)}</td>'
            f"<td>{run.findings_total} finding(s), {run.findings_failing} failing</td>"
            f"<td>{esc(run.machine or '–')}</td><td><code>{esc(run.run_dir or '–')}</code></td>"
            "</tr>")


def _audit(view: AuditView, tz: tzinfo) -> str:
    run = view.run
    facts = [("recorded", when(run.recorded_at, tz)), ("command", esc(run.command)),
             ("exit code", esc(run.exit_code)),
             ("run directory", f"<code>{esc(run.run_dir or '–')}</code>"),
             ("repositories", "<br>".join(f"<code>{esc(r)}</code>" for r in sorted(run.repos))),
             ("charter sha256", f"<code>{esc(run.charter_sha256 or 'none')}</code>")]
    if run.machine:
        facts.insert(1, ("machine", esc(run.machine)))
    out = [f'<article class="audit {esc(run.verdict)}" data-repo="{esc(" ".join(view.keys))}" '
           f'data-verdicts="{esc(run.verdict)}"><h3>'
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
            out.append(f'<tr class="ref"><th colspan="3">[{esc(name(g.repo))}] '
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
    change = finding_change(f, lambda value: sha(value, site), esc)
    return (f'<tr class="{"commit" if f.kind == "commit" else "refrow"}"><td>{change}</td>'
            f'<td class="{css}">{esc(f.verdict)}</td><td>{esc(f.reason)}</td></tr>')


