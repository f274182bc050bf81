"""The audit runs of the review: each run's findings grouped per repository, remote and ref."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from jobs.ledger.audits import AuditFinding, AuditRun
from jobs.review.links import Site

FINDINGS_PER_RUN = 200    # findings shown per audit run (failing ones first)
AUDITS_DETAILED = 50      # audit runs shown with their findings; the rest one line each


def detail_order(run: AuditRun) -> tuple[bool, float]:
    """Failing runs first, then the newest: the order they are shown in, and the first
    AUDITS_DETAILED with their findings."""
    return (run.verdict == "pass", -run.recorded_at.timestamp())


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
    keys: list[str] = field(default_factory=list)  # the repository groups it audited


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
