"""Rendering findings: one text line each (commits indented beneath their ref) and the JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from audit.model import FAILING, PASSING, Finding, overall, short


def group_commits(findings: Sequence[Finding]) -> list[Finding]:
    """Consecutive commit findings (in report order) with the same passing verdict and the same
    evidence become one finding with `count`, `first` (the oldest) and `last` (the newest, also
    its `commit`); a failing commit is always a finding of its own."""
    out: list[Finding] = []
    run: list[Finding] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            # A finding may stand for a run already (the judge groups a logged push's commits).
            newest, oldest = run[0], run[-1]
            count = sum(f.count for f in run)
            out.append(replace(newest, reason=f"{count} commits {newest.evidence}",
                               parent=oldest.parent, count=count,
                               first=oldest.first or oldest.commit,
                               last=newest.last or newest.commit))
        run.clear()

    for f in findings:
        if run and not _same_run(run[-1], f):
            flush()
        if f.kind == "commit" and f.evidence is not None and f.verdict in PASSING:
            run.append(f)
        else:
            flush()
            out.append(f)
    flush()
    return out


def _same_run(a: Finding, b: Finding) -> bool:
    return (b.kind == "commit" and b.evidence is not None and b.verdict in PASSING
            and (a.repo, a.remote, a.ref, a.before, a.after, a.verdict, a.evidence)
            == (b.repo, b.remote, b.ref, b.before, b.after, b.verdict, b.evidence))


def finding_line(f: Finding) -> str:
    """`[<repo>] <remote> <ref>: <what changed> <before>..<after> [<VERDICT>] <reason>`; a commit
    is indented beneath its ref, its span running from its first parent to itself (a run of
    commits: from the oldest one's parent to the newest)."""
    if f.kind == "commit":
        indent, span = "    ", f"{short(f.parent)}..{short(f.commit)}"
        what = f"{f.count} commits" if f.count > 1 else "commit"
    else:
        indent, what = "", f.kind.replace("-", " ")
        span = f"{_end(f.before, f)}..{_end(f.after, f)}"
    return printable(f"{indent}[{f.repo}] {f.remote or '-'} {f.ref or '-'}: {what} {span} "
                      f"[{f.verdict}] {f.reason}")


def printable(line: str) -> str:
    """The line with every character that is not printable escaped (`\r`, `\x1b`, `\u2028`):
    a subject or path is the run's to write, and raw it could move the cursor, hide text or
    start a line of its own."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in line)


def _end(sha: str | None, f: Finding) -> str:
    # An absent ref is zeros, as in the push log; so is a finding about no ref at all, so that
    # every line keeps the `<short before>..<short after>` shape.
    return short(sha)


def summary_line(findings: Sequence[Finding]) -> str:
    if not findings:
        return "audit: no remote changes"
    failing = sum(1 for f in findings if f.verdict in FAILING)
    # The contract's exact words, even for one: scripts match `audit: N findings, K failing`.
    return f"audit: {len(findings)} findings, {failing} failing"


def render_text(findings: Sequence[Finding], shown: Sequence[Finding] | None = None,
                notes: Sequence[str] = ()) -> str:
    """The text report; `shown` is `group_commits(findings)` when the caller already has it.
    Notes (what the audit could only judge by its net change) come before the summary line,
    which stays last."""
    shown = group_commits(findings) if shown is None else shown
    return _utf8("".join(finding_line(f) + "\n" for f in shown)
                 + "".join(printable(f"note: {n}") + "\n" for n in notes)
                 + summary_line(shown) + "\n")


def _utf8(text: str) -> str:
    """Text that can be written and printed as UTF-8: a lone surrogate (a name git gave us that
    is not UTF-8, such as a ref `x\xff`) becomes `\udcff`, a valid escape inside JSON too."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def render_both(findings: Sequence[Finding], notes: Sequence[str] = ()) -> tuple[str, str]:
    """The text and JSON reports, grouping the commits once."""
    shown = group_commits(findings)
    # The notes are the text report's alone: the JSON keeps the contract's exact shape.
    return render_text(findings, shown, notes), render_json(findings, shown)


def report_object(findings: Sequence[Finding], shown: Sequence[Finding] | None = None
                  ) -> dict[str, Any]:
    verdict = overall(findings)
    shown = group_commits(findings) if shown is None else shown
    return {"ok": verdict == "pass", "verdict": verdict,
            "findings": [f.as_json() for f in shown]}


def render_json(findings: Sequence[Finding], shown: Sequence[Finding] | None = None) -> str:
    """Byte-identical for the same findings: sorted keys, no timestamps, one finding per line.

    Each finding goes through json's C encoder on its own (an indented dump of tens of
    thousands of findings would take the pure-Python path and most of closeout's time)."""
    obj = report_object(findings, shown)
    rows = [_finding_json(f) for f in obj["findings"]]
    body = ",\n".join("    " + row for row in rows)
    findings_json = "[\n" + body + "\n  ]" if rows else "[]"
    return _utf8("{\n"
                 f'  "findings": {findings_json},\n'
                 f'  "ok": {json.dumps(obj["ok"])},\n'
                 f'  "verdict": {json.dumps(obj["verdict"])}\n'
                 "}\n")


_string = json.encoder.encode_basestring


def _finding_json(f: dict[str, Any]) -> str:
    """`json.dumps(f, sort_keys=True, ensure_ascii=False)` for a finding's flat dict of strings,
    None and ints, without building a new encoder per finding (tens of thousands of them)."""
    parts = []
    for key in sorted(f):
        value = f[key]
        if isinstance(value, str):
            text = _string(value)
        elif value is None:
            text = "null"
        else:
            text = json.dumps(value)
        parts.append(f"{_string(key)}: {text}")
    return "{" + ", ".join(parts) + "}"
