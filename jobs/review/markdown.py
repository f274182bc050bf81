"""The review as Markdown, to paste into an incident document.

Text from tasks, output and commits is escaped (`md`): control characters are shown as escapes
(`visible`), HTML's `<`, `>` and `&` become entities
and Markdown's own punctuation is backslashed, so neither a tag nor a link can be smuggled in;
output goes in fenced blocks whose fence is longer than any backtick run inside.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, tzinfo

from jobs.ledger.audits import AuditFinding
from jobs.review.links import Site
from jobs.review.model import SEVERITY, AuditView, Failure, Review, finding_change
from jobs.review.visible import visible

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def md(text: object) -> str:
    value = visible(" ".join(str(text).splitlines()))
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", value)


def fenced(text: str) -> str:
    text = visible(text, block=True)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _when(moment: datetime, tz: tzinfo) -> str:
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def _name(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1] or repo


def _sha(sha: str | None, site: Site | None) -> str:
    if not sha:
        return "–"
    short = f"`{sha[:12]}`" if re.fullmatch(r"[0-9a-fA-F]+", sha) else md(sha[:12])
    if site is None or set(sha) == {"0"}:
        return short
    return f"[{short}]({site.commit(sha)})"


def _counts(counts: Counter[str], order: tuple[str, ...] = SEVERITY) -> str:
    return ", ".join(f"{counts[v]} {v}" for v in order if counts.get(v)) or "none"


def render_markdown(review: Review, generated_at: datetime) -> str:
    tz = review.zone
    out = ["# loop-jobs incident review", "",
           f"Window {_when(review.since, tz)} – {_when(review.until, tz)}"
           + "".join(f" · {md(k)} {md(v)}" for k, v in review.filters)
           + f" · generated {_when(generated_at, tz)}", ""]
    t = review.timeline
    audits = Counter(a.run.verdict for a in review.audits)
    out += ["## Summary", "",
            f"- verify attempts: {sum(t.totals.values())} ({_counts(t.totals)})",
            f"- audit runs: {len(review.audits)} "
            f"({_counts(audits, ('fail', 'could_not_check', 'pass'))})",
            ""]
    out += _timeline(review)
    out += ["", f"## Failing attempts ({len(review.failures) + review.omitted_failures})", ""]
    if not review.failures:
        out.append("No failing attempt in this window.")
    for f in review.failures:
        out += _failure(f, tz)
    out += ["", f"## Audit runs ({len(review.audits)})", ""]
    if not review.audits:
        out.append("No audit run recorded in this window.")
    for view in review.audits:
        out += _audit(view, tz)
    if review.unshown:
        out += ["", "## Not shown", ""] + [f"- {md(line)}" for line in review.unshown]
    return "\n".join(out) + "\n"


def _timeline(review: Review) -> list[str]:
    tl = review.timeline
    unit = "day" if tl.step_days == 1 else "week"
    out = ["## Timeline of verify attempts", ""]
    if not tl.rows:
        return [*out, "No verify attempts in this window."]
    # One character per day: a compact strip that pastes into any document.
    marks = {"pass": "✓", "fail": "✗", "timeout": "T", "error": "E", "drift": "D",
             "interrupted": "I", "other": "o"}
    out += [f"One column per {unit} from {tl.columns[0].isoformat()}: "
            + ", ".join(f"{m} {v}" for v, m in marks.items()) + ", · none.", "",
            "| repository | task | " + unit + "s | counts |", "|---|---|---|---|"]
    for row in tl.rows:
        strip = "".join(marks[w] if (w := row.worst(i)) else "·" for i in range(len(tl.columns)))
        task = row.task or "(repository)"
        if row.title:
            task += f" — {row.title}"
        out.append(f"| {md(_name(row.repo))} | {md(task)} | `{strip}` | "
                   f"{_counts(row.totals)} |")
    return out


def _failure(f: Failure, tz: tzinfo) -> list[str]:
    a = f.attempt
    title = f" — {f.title}" if f.title else ""
    commit = (_sha(a.commit_sha, f.site) if a.commit_sha
              else "no verdict commit in the ledger"
              + (f" (edit {md(a.edit_state)})" if a.edit_state not in (None, "none") else ""))
    out = [f"### {md(a.verdict)}: {md(_name(a.repo))} {md(a.task_id or '(repository)')}"
           f"{md(title)}", "",
           f"- when: {_when(a.started_at, tz)}" + (f" on {md(a.machine)}" if a.machine else ""),
           f"- summary: {md(f.summary)}",
           f"- repository: {md(a.repo)}",
           f"- verdict commit: {commit}"]
    view = f.output
    if view is None:
        return [*out, ""]
    if view.missing:
        return [*out, f"- output: {md(view.missing)}", ""]
    out += [f"- output file: {md(a.output_path)}", "", "Last lines of output:", "",
            fenced("\n".join(view.tail)), ""]
    return out


def _audit(view: AuditView, tz: tzinfo) -> list[str]:
    run = view.run
    out = [f"### audit {md(run.verdict)} — {_when(run.recorded_at, tz)}"
           f" ({run.findings_total} findings, {run.findings_failing} failing)", "",
           f"- command: {md(run.command)}, exit code {run.exit_code}"
           + (f", machine {md(run.machine)}" if run.machine else ""),
           f"- run directory: {md(run.run_dir or '–')}",
           f"- repositories: {', '.join(md(r) for r in sorted(run.repos)) or '–'}",
           f"- charter sha256: {md(run.charter_sha256 or 'none')}", ""]
    for g in view.groups:
        ref = md(g.ref or "–")
        if g.site is not None and g.ref:
            ref = f"[{ref}]({g.site.ref(g.ref)})"
        out.append(f"- [{md(_name(g.repo))}] {md(g.remote or '–')} {ref}")
        out += [f"  - {_finding(f, g.site)}" for f in g.findings]
    if view.omitted_findings:
        out.append(f"- {view.omitted_findings} further passing finding(s) not shown")
    out.append("")
    return out


def _finding(f: AuditFinding, site: Site | None) -> str:
    change = finding_change(f, lambda sha: _sha(sha, site), md)
    verdict = f"**{md(f.verdict)}**" if f.failing else md(f.verdict)
    return f"{change} {verdict} {md(f.reason)}"
