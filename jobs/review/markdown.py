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
from jobs.review.audits import AUDITS_DETAILED, AuditView, finding_change
from jobs.review.links import Site
from jobs.review.model import (
    NOT_CHECKED,
    SEVERITY,
    Failure,
    Group,
    Review,
    Unchecked,
)
from jobs.review.mornings import NoRun, RunEntry
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


def _counts(counts: Counter[str] | dict[str, int], order: tuple[str, ...] = SEVERITY) -> str:
    return ", ".join(f"{counts[v]} {md(v)}" for v in order if counts.get(v)) or "none"


def render_markdown(review: Review, generated_at: datetime) -> str:
    tz = review.zone
    out = ["# loop-jobs incident review", "",
           f"Window {_when(review.since, tz)} – {_when(review.until, tz)}"
           + "".join(f" · {md(k)} {md(v)}" for k, v in review.filters)
           + f" · generated {_when(generated_at, tz)}", ""]
    out += _summary(review)
    out += _runs(review)
    out += _timeline(review)
    out += ["", f"## What failed ({len(review.failures) + review.omitted_failures})", ""]
    if not review.failures:
        out.append("No failing attempt in this window.")
    for f in review.failures:
        if f.output is not None:
            out += _failure(f, tz)
    # Beyond the detailed ones, as the page lists them: one line each.
    listed = [f for f in review.failures if f.output is None]
    if listed:
        out += [f"{len(listed)} older failing attempt(s), one line each:", ""]
        out += [_failure_line(f, tz) for f in listed]
    out += ["", f"## Not checked ({review.unchecked_total})", ""]
    if not review.unchecked:
        out.append("Everything due in this window was checked.")
    else:
        out += ["| verdict | repository / task | reason | when | machine |",
                "|---|---|---|---|---|"]
        out += [_unchecked(e, tz) for e in review.unchecked]
    out += ["", f"## Passes ({review.timeline.totals.get('pass', 0)})", ""]
    if not review.passes:
        out.append("No pass in this window.")
    for t in review.passes:
        out.append(f"- {_repo_task(t.group, t.task, t.title)}: {t.count} pass(es)")
        out += [f"  - {_when(p.started_at, tz)} on {md(p.machine or '–')} "
                f"{_sha(p.commit_sha, t.group.site)}" for p in t.newest]
        if t.count > len(t.newest):
            out.append(f"  - and {t.count - len(t.newest)} earlier pass(es)")
    out += ["", f"## Audit runs ({len(review.audits)})", ""]
    if not review.audits:
        out.append("No audit run recorded in this window.")
    for view in review.audits[:AUDITS_DETAILED]:
        out += _audit(view, tz)
    for view in review.audits[AUDITS_DETAILED:]:
        out.append(f"- audit {md(view.run.verdict)} — {_when(view.run.recorded_at, tz)} "
                   f"({view.run.findings_total} findings, {view.run.findings_failing} failing), "
                   f"run directory {md(view.run.run_dir or '–')}")
    if review.unshown:
        out += ["", "## Not shown", ""] + [f"- {md(line)}" for line in review.unshown]
    return "\n".join(out) + "\n"


def _repo_task(group: Group, task: str | None, title: str | None) -> str:
    label = task or "(repository)"
    if title:
        label += f" — {title}"
    return f"{md(group.name)} {md(label)}"


def _summary(review: Review) -> list[str]:
    runs, t = review.runs, review.timeline.totals
    ran = f"{runs.total} run(s)" + (f" on {', '.join(md(m) for m in runs.machines)}"
                                    if runs.machines else "")
    if runs.last is not None:
        ran += (f"; the last started {_when(runs.last.run.started_at, review.zone)} on "
                f"{md(runs.last.run.machine or '?')}: {_exit(runs.last)}")
    ran += (f"; **{runs.no_run_days} day(s) without a run**" if runs.no_run_days
            else "; a run every day")
    new = sum(1 for f in review.failures if f.standing.new)
    failing = sum(t.get(v, 0) for v in ("fail", "timeout", "drift"))
    audits = Counter(a.run.verdict for a in review.audits)
    return ["## Summary", "",
            f"- did it run: {ran}",
            "- what failed: " + (f"{failing} failing attempt(s): {new} new, "
                                 f"{len(review.failures) - new} still failing"
                                 + (" (of those listed)" if review.omitted_failures else "")
                                 + f" ({_counts(t, ('fail', 'timeout', 'drift'))})"
                                 if failing else "nothing failed"),
            "- not checked: " + (_counts(t, NOT_CHECKED) if any(t.get(v) for v in NOT_CHECKED)
                                 else "everything due was checked"),
            f"- verify attempts: {sum(t.values())} ({_counts(t)})",
            f"- audit runs: {len(review.audits)} "
            f"({_counts(audits, ('fail', 'could_not_check', 'pass'))})", ""]


def _exit(entry: RunEntry) -> str:
    if entry.run.exit_code is not None:
        return f"exit {entry.run.exit_code}"
    return "exit code not recorded" if entry.pieced else "not finished"


def _runs(review: Review) -> list[str]:
    view = review.runs
    out = [f"## Runs ({view.total})", "",
           "Newest first; days counted in the configured time zone across the machines shown.", ""]
    if not view.entries:
        return [*out, "No run and no day in this window.", ""]
    out += ["| start | exit code | machine | trigger | duration | verdicts |",
            "|---|---|---|---|---|---|"]
    for e in view.entries:
        if isinstance(e, NoRun):
            out.append(f"| {e.last.isoformat()} | **{md(e.words())}** | | | | |")
            continue
        took = e.duration
        counts = (_counts(e.run.counts, tuple(sorted(e.run.counts))) if e.run.counts
                  else e.no_verdicts)
        out.append(f"| {_when(e.run.started_at, review.zone)} | {_exit(e)} | "
                   f"{md(e.run.machine or '–')} | {md(e.run.trigger or '– (from its attempts)')} | "
                   f"{'–' if took is None else f'{took:.1f}s'} | "
                   f"{counts} |")
    if view.omitted:
        out.append(f"\n{view.omitted} earlier run(s) are not listed (every day without a run "
                   "is): narrow the window.")
    return [*out, ""]


_RUN_MARKS = {"ok": "✓", "failed": "✗", "unchecked": "!", "usage": "U", "unfinished": "…"}


def _timeline(review: Review) -> list[str]:
    tl = review.timeline
    unit = {1: "day", 7: "week"}.get(tl.step_days, f"{tl.step_days} days")
    out = ["## Timeline", ""]
    marks = {"pass": "✓", "fail": "✗", "timeout": "T", "drift": "D", "error": "E",
             "interrupted": "I", "locked": "L", "skipped": "S", "refused": "R", "other": "o"}
    runs = "".join("–" if c.no_run and c.state is None else
                   _RUN_MARKS[c.state] if c.state else "·" for c in review.runs.cells)
    out += [f"One column per {unit} from {tl.columns[0].isoformat()}: "
            + ", ".join(f"{m} {v}" for v, m in marks.items()) + ", · none; in the runs row "
            "✓ ok, ✗ failed, ! not all checked, U usage, … unfinished, – no run.", "",
            f"| repository | task | {unit} | counts |", "|---|---|---|---|",
            f"| runs | | `{runs}` | {_counts(review.runs.states, tuple(review.runs.states))} |"]
    if not tl.rows:
        return [*out, "", "No verify attempts in this window."]
    for row in tl.rows:
        strip = "".join(marks[w] if (w := row.worst(i)) else "·" for i in range(len(tl.columns)))
        task = row.task or "(repository)"
        if row.title:
            task += f" — {row.title}"
        out.append(f"| {md(row.group.name)} | {md(task)} | `{strip}` | {_counts(row.totals)} |")
    return out


def _failure(f: Failure, tz: tzinfo) -> list[str]:
    a = f.attempt
    commit = (_sha(a.commit_sha, f.group.site) if a.commit_sha
              else "no verdict commit in the ledger"
              + (f" (edit {md(a.edit_state)})" if a.edit_state not in (None, "none") else ""))
    out = [f"### {md(a.verdict)}: {_repo_task(f.group, a.task_id, f.title)} — "
           f"{md(f.standing.words(tz))}", "",
           f"- when: {_when(a.started_at, tz)} on {md(a.machine or '–')}",
           f"- clone: {md(a.repo)}", f"- repository: {md(f.group.identity)}",
           f"- verify date: {md(a.label_date or '–')}", f"- verdict commit: {commit}"]
    if a.reason:
        out.append(f"- reason: {md(a.reason)}")
    if f.summary is not None:
        said = ("Summary, as the task carries it" if f.summary_recorded
                else "Summary, rebuilt from the ledger")
        out += ["", f"{said}:", "", fenced(f.summary)]
    view = f.output
    if view is None:
        return [*out, ""]
    if view.missing:
        return [*out, "", f"Output: {md(view.missing)}", ""]
    out += ["", f"Output file: {md(a.output_path)}"]
    if not f.summary_recorded:
        out += ["", "Last lines of output:", "", fenced("\n".join(view.tail))]
    return [*out, ""]


def _failure_line(f: Failure, tz: tzinfo) -> str:
    a = f.attempt
    said = f.summary.splitlines()[0] if f.summary else a.reason or ""
    return (f"- {_when(a.started_at, tz)} {md(a.verdict)} {_repo_task(f.group, a.task_id, None)}"
            f" — {md(f.standing.words(tz))} · {md(a.machine or '–')} · {md(said)} · "
            f"{_sha(a.commit_sha, f.group.site)}")


def _unchecked(e: Unchecked, tz: tzinfo) -> str:
    times = _when(e.last, tz) if e.count == 1 else \
        f"{e.count}×, {_when(e.first, tz)} – {_when(e.last, tz)}"
    return (f"| {md(e.verdict)} | {_repo_task(e.group, e.task, e.title)} | "
            f"{md(e.reason) if e.reason else 'no reason recorded'} | {times} | "
            f"{md(', '.join(sorted(e.machines)) or '–')} |")


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
