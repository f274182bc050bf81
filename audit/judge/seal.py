"""The tamper rules (SPEC "Evidence the run cannot make"): the run directory's evidence against
what the ledger sealed. Pure functions of plain data (`audit.model.Seals`, `Arm`, fingerprints);
`audit.evidence.seal.arm` and `audit.evidence.seal.pushes` read what they judge.

Evidence that no longer matches its seal is `TAMPERED` (failing, exit 1), judged before its form:
a before-snapshot edited into something unreadable is tampering, not a malformed file. A
transport setting that differs from the arm is `UNVERIFIED`, naming it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from audit.model import (
    FAILING,
    PASSING,
    TAMPERED,
    UNGRANTED,
    UNVERIFIED,
    Arm,
    Finding,
    Seals,
    sort_findings,
)

BEFORE_NAME = "audit-before.json"


@dataclass(frozen=True)
class SealJudgement:
    findings: tuple[Finding, ...]
    # The arm the evidence is checked against (the newest row of the chain that starts at the
    # directory's first `begin`), and the chain itself, oldest first.
    head: Arm | None
    chain: tuple[Arm, ...]
    # The before-snapshot matches its seal (or the seal could not be read): judge it.
    before_ok: bool
    # Push-log lines the ledger never saw: no evidence.
    unrecorded: frozenset[int]


def _finding(run_dir: str, kind: str, verdict: str, reason: str) -> Finding:
    return Finding(run_dir, "", "", kind, None, None, None, verdict, reason)


def arm_chain(arms: Sequence[Arm]) -> tuple[Arm, ...]:
    """The chain from the first `begin` row to its newest `add`, each extending the one before."""
    begins = [a for a in arms if a.kind == "begin"]
    if not begins:
        return ()
    chain = [begins[0]]
    while True:
        nxt = [a for a in arms if a.kind == "add" and a.extends == chain[-1].id]
        if not nxt:
            return tuple(chain)
        chain.append(max(nxt, key=lambda a: a.id))


def judge_seals(seals: Seals) -> SealJudgement:
    """The arm and the push log against the ledger."""
    where = seals.run_dir
    if seals.problem is not None:
        return SealJudgement((_finding(where, "seal-unchecked", UNVERIFIED,
                                       f"could not check the run's seals: {seals.problem}"),),
                             None, (), True, frozenset())
    chain = arm_chain(seals.arms)
    findings = [_finding(where, "arm-moved", TAMPERED,
                         f"{where} now leads to another directory than {spelling}, which was "
                         f"armed at {arm.armed_at} (ledger row {arm.id}): the directory armed "
                         "under this name is not the one judged")
                for spelling, arm in seals.moved]
    if not chain:
        reason = (f"the ledger {seals.ledger} never saw this run directory armed (no `begin` "
                  "row): its evidence has no seal")
        if seals.armed_in is not None and seals.armed_in != seals.ledger:
            reason += (f"; audit-arm.json says it was armed in {seals.armed_in}: give closeout "
                       "the configuration begin used (--config)")
        findings.append(_finding(where, "arm-missing", TAMPERED, reason))
        return SealJudgement(tuple(findings), None, (), False, frozenset())
    begins = [a for a in seals.arms if a.kind == "begin"]
    if len(begins) > 1:
        findings.append(_finding(where, "arm-repeated", TAMPERED,
                                 f"armed {len(begins)} times (ledger rows "
                                 f"{', '.join(str(a.id) for a in begins)}, at "
                                 f"{', '.join(a.armed_at for a in begins)}): a run directory "
                                 "is armed once; the first arm stands"))
    head = chain[-1]
    before_ok = True
    if seals.before_sha256 is None:
        before_ok = False
        findings.append(_finding(where, "before-changed", TAMPERED,
                                 f"{BEFORE_NAME} is gone; it was sealed at {head.armed_at} "
                                 f"(sha256 {head.before_sha256[:12]}…)"))
    elif seals.before_sha256 != head.before_sha256:
        before_ok = False
        findings.append(_finding(where, "before-changed", TAMPERED,
                                 f"{BEFORE_NAME} changed since it was sealed: sha256 "
                                 f"{seals.before_sha256[:12]}…, sealed {head.before_sha256[:12]}… "
                                 f"at {head.armed_at} (ledger row {head.id})"))
    if seals.expect_before is not None and seals.expect_before.lower() != chain[0].before_sha256:
        findings.append(_finding(where, "before-changed", TAMPERED,
                                 f"--expect-before {seals.expect_before[:12]}… is not the digest "
                                 f"the ledger holds for begin ({chain[0].before_sha256[:12]}…): "
                                 "the arm record was rewritten"))
    unrecorded, missing = cross_check(seals)
    for number in unrecorded:
        findings.append(_finding(where, "push-log-line", UNGRANTED,
                                 f"push-log line {number} was never recorded in the ledger "
                                 f"({seals.log_name}): no evidence (its change is judged as if "
                                 "unlogged)"))
    for row in missing:
        findings.append(_finding(where, "push-log-row", TAMPERED,
                                 f"push recorded in the ledger at {row.recorded_at} (row "
                                 f"{row.id}) is missing from {seals.log_name}: "
                                 f"{_short_line(row.text)}"))
    return SealJudgement(tuple(findings), head, chain, before_ok, frozenset(unrecorded))


def cross_check(seals: Seals) -> tuple[list[int], list[Any]]:
    """File lines without their ledger row (by number), and ledger rows missing from the file.
    Lines the hook marked unsealed need none."""
    rows = Counter(p.text for p in seals.pushes)
    unrecorded: list[int] = []
    for line in seals.log_lines:
        if not line.sealed:
            continue
        if rows[line.text] > 0:
            rows[line.text] -= 1
        else:
            unrecorded.append(line.number)
    missing = []
    for p in seals.pushes:
        if rows[p.text] > 0:
            rows[p.text] -= 1
            missing.append(p)
    return unrecorded, missing


def _short_line(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def charter_findings(run_dir: str, recorded: str | None, head: Arm | None) -> list[Finding]:
    """The charter hash the before-snapshot records against the arm's."""
    if head is None or recorded == head.charter_sha256:
        return []
    return [_finding(run_dir, "charter-changed", TAMPERED,
                     f"the charter hash in {BEFORE_NAME} ({(recorded or 'none')[:12]}) is not "
                     f"the one sealed at begin ({(head.charter_sha256 or 'none')[:12]})")]


def transport_changes(sealed: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints taken with the same salt, one phrase per setting."""
    out: list[str] = []
    git_then, git_now = sealed.get("git", {}), now.get("git", {})
    if git_then.get("sha256") != git_now.get("sha256") or git_then.get("path") != git_now.get(
            "path"):
        out.append(f"the git executable {git_then.get('path')} is not the file begin ran "
                   f"(sha256 {str(git_then.get('sha256'))[:12]}…, now "
                   f"{str(git_now.get('sha256'))[:12]}… at {git_now.get('path')})")
    then, current = sealed.get("settings", {}), now.get("settings", {})
    for name in sorted(set(then) | set(current)):
        if name not in current:
            out.append(f"{name}: unset since begin")
        elif name not in then:
            out.append(f"{name}: set since begin")
        elif then[name] != current[name]:
            out.append(f"{name}: changed since begin")
    return out


def transport_findings(run_dir: str, chain: Iterable[Arm],
                       now: Mapping[str, Any] | None) -> tuple[list[Finding], list[str]]:
    """UNVERIFIED for each setting that differs from any arm of the chain; also the names of
    the changed settings."""
    if now is None:
        return [], []
    changed: dict[str, None] = {}
    for arm in chain:
        if arm.transport is None:
            changed[f"the transport fingerprint of ledger row {arm.id} is unreadable"] = None
            continue
        for phrase in transport_changes(arm.transport, now):
            changed[phrase] = None
    findings = [_finding(run_dir, "transport-changed", UNVERIFIED,
                         f"how remotes are reached changed during the run: {phrase}")
                for phrase in changed]
    return findings, list(changed)


def downgrade_unsealed(loose: Sequence[Finding], strict: Sequence[Finding]) -> list[Finding]:
    """`loose` judged with every push-log line, `strict` without the lines the hook wrote
    unsealed: a finding that passes only thanks to those lines is UNVERIFIED. So is a failing
    finding of `strict` that `loose` does not hold at all: a step those lines alone cover (with
    them it makes no finding), or a commit only they cover, inside a run of logged commits
    reported as one finding of its newest."""
    def key(f: Finding) -> tuple[str, str, str, str, str | None, str | None, str | None]:
        return (f.repo, f.remote, f.ref, f.kind, f.commit, f.before, f.after)

    unsealed = ("; but only a push-log line written while the ledger could not be reached "
                "(`\"sealed\": false`) covers it")
    failing_without = {key(f) for f in strict if f.verdict in FAILING}
    out: list[Finding] = []
    for f in loose:
        if f.verdict in PASSING and key(f) in failing_without:
            f = replace(f, verdict=UNVERIFIED, evidence=None, reason=f.reason + unsealed)
        out.append(f)
    judged = {key(f) for f in loose}
    out.extend(replace(f, verdict=UNVERIFIED, evidence=None, reason=f.reason + unsealed)
               for f in strict if f.verdict in FAILING and key(f) not in judged)
    return sort_findings(out)
