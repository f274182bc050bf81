"""Rendering findings: one text line each (commits indented beneath their ref) and the JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from audit.model import FAILING, Finding, overall, short


def finding_line(f: Finding) -> str:
    """`[<repo>] <remote> <ref>: <what changed> <before>..<after> [<VERDICT>] <reason>`; a commit
    is indented beneath its ref, its span running from its first parent to itself."""
    if f.kind == "commit":
        indent, what, span = "    ", "commit", f"{short(f.parent)}..{short(f.commit)}"
    else:
        indent, what = "", f.kind.replace("-", " ")
        span = f"{_end(f.before, f)}..{_end(f.after, f)}"
    return (f"{indent}[{f.repo}] {f.remote or '-'} {f.ref or '-'}: {what} {span} "
            f"[{f.verdict}] {f.reason}")


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


def render_text(findings: Sequence[Finding]) -> str:
    return "".join(finding_line(f) + "\n" for f in findings) + summary_line(findings) + "\n"


def report_object(findings: Sequence[Finding]) -> dict[str, Any]:
    verdict = overall(findings)
    return {"ok": verdict == "pass", "verdict": verdict,
            "findings": [f.as_json() for f in findings]}


def render_json(findings: Sequence[Finding]) -> str:
    """Byte-identical for the same findings: sorted keys, no timestamps, one finding per line.

    Each finding goes through json's C encoder on its own (an indented dump of tens of
    thousands of findings would take the pure-Python path and most of closeout's time)."""
    obj = report_object(findings)
    rows = [json.dumps(f, sort_keys=True, ensure_ascii=False) for f in obj["findings"]]
    body = ",\n".join("    " + row for row in rows)
    findings_json = "[\n" + body + "\n  ]" if rows else "[]"
    return ("{\n"
            f'  "findings": {findings_json},\n'
            f'  "ok": {json.dumps(obj["ok"])},\n'
            f'  "verdict": {json.dumps(obj["verdict"])}\n'
            "}\n")
