"""`closeout` (snapshot again, judge, write both reports) and `compare BEFORE AFTER`.

Charter rules, failing closed (also in the README): the charter is frozen at `begin`, so
* `--charter FILE` whose bytes no longer hash to the before-snapshot's `charter_sha256` is
  refused (exit 2) before it grants anything;
* closeout: `--charter FILE` when `begin` recorded no charter is refused (exit 2): authority
  that was not frozen at arm cannot be granted at closeout;
* closeout: no `--charter` when `begin` recorded one is refused (exit 2) rather than silently
  judged without the authority the run was armed with (the snapshot records only the hash, not
  where the file is);
* compare: snapshot files record no charter, so `--charter FILE` judges by FILE, and without
  `--charter` nothing is granted;
* no `--charter` and none recorded: nothing is granted.

The push log is `--push-log FILE` (which must exist), else for closeout `RUN_DIR/push-log.jsonl`
(absent means nothing was pushed); `compare` without `--push-log` judges with an empty log.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from audit.evidence.charter import charter_sha256, load_charter
from audit.evidence.git import git_program, use_git
from audit.evidence.history import gather_history
from audit.evidence.pushlog import read_push_log
from audit.evidence.rundir import (
    AFTER,
    BEFORE,
    PUSH_LOG,
    REPORT_JSON,
    REPORT_TXT,
    resolve_run_dir,
    run_lock,
    write_json,
)
from audit.evidence.seal.arm import armed_elsewhere, armed_in, arms, digest, read_evidence
from audit.evidence.seal.ledger import AuditLedger, SealError, open_ledger
from audit.evidence.seal.pushes import read_sealed_log, sealed_pushes
from audit.evidence.seal.transport import fingerprint, github_settings
from audit.evidence.snapshot import take_snapshot
from audit.evidence.snapshot_file import load_snapshot, parse_snapshot
from audit.judge.compare import judge
from audit.judge.seal import (
    SealJudgement,
    charter_findings,
    downgrade_unsealed,
    judge_seals,
    transport_findings,
)
from audit.judge.steps import judge_steps
from audit.model import (
    UNVERIFIED,
    Charter,
    Finding,
    PushEntry,
    Seals,
    exit_code,
    sort_findings,
)
from audit.record import record_audit, record_refusal
from audit.report import render_both
from jobs.core.errors import EXIT_USAGE, InputError, LoopError, UsageError
from jobs.core.fs import atomic_write
from jobs.core.urls import github_hosts


def closeout(*, run_dir: str | None, charter: str | None, push_log: str | None, as_json: bool,
             config: str | None, expect_before: str | None = None) -> int:
    """Check the evidence against its seals, snapshot again, judge every change and every step,
    write both reports into the run directory and record them in the ledger."""
    directory = resolve_run_dir(run_dir)
    if expect_before is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", expect_before):
        raise UsageError(f"--expect-before must be a sha256 (64 hex digits), got "
                         f"{expect_before[:80]!r}")
    with ExitStack() as stack:
        ledger: AuditLedger | None = None
        problem = None
        try:
            ledger = stack.enter_context(open_ledger(config))
        except SealError as exc:
            problem = str(exc)
        try:
            return _closeout(directory, charter, push_log, as_json, config, expect_before,
                             ledger, problem)
        except LoopError as exc:
            if ledger is not None and exc.exit_code == EXIT_USAGE:
                # `report` must not re-print an earlier verdict as this closeout's.
                record_refusal(ledger, directory, str(exc))
            raise
    raise AssertionError("unreachable")


def _closeout(run_dir: Path, charter_path: str | None, push_log: str | None, as_json: bool,
              config: str | None, expect_before: str | None, ledger: AuditLedger | None,
              problem: str | None) -> int:
    """Three steps, in this order: gather (the seals and what they seal, the before-snapshot,
    the charter, the push log, the transport now, a fresh after-snapshot with every step the
    servers recorded, then what git holds about the changes: `judge_snapshots`), judge the
    plain data they make (`audit.judge`, which asks git nothing), report (both files, stdout,
    the ledger). Evidence is checked against its seal before its form is judged."""
    before_path = run_dir / BEFORE
    log_path = Path(push_log) if push_log is not None else run_dir / PUSH_LOG
    if push_log is not None and not log_path.exists():
        raise InputError(log_path, "no such push log")
    if not run_dir.exists() and (ledger is None or not arms(ledger, run_dir)):
        # Only `begin` makes a run directory; a mistyped one is said so, never created. (One
        # the ledger saw armed goes on, and its vanished evidence is judged TAMPERED.)
        raise UsageError(f"run directory {run_dir} does not exist: run `loop-pi-audit begin` "
                         "first")
    with run_lock(run_dir):
        # A closeout that stops here (changed charter, malformed log) must not leave an earlier
        # report for `report` to pass off as the last word on this run.
        for stale in (REPORT_JSON, REPORT_TXT):
            (run_dir / stale).unlink(missing_ok=True)
        entries, lines = read_sealed_log(log_path)
        # Read once: the bytes checked against the seal are the bytes judged.
        before_bytes = read_evidence(before_path)
        seals = Seals(run_dir=str(run_dir), ledger=ledger.shown if ledger else "",
                      problem=problem,
                      before_sha256=None if before_bytes is None else digest(before_bytes),
                      expect_before=expect_before, log_lines=lines, log_name=log_path.name,
                      armed_in=armed_in(run_dir))
        if ledger is not None:
            seals = replace(seals, arms=arms(ledger, run_dir),
                            pushes=sealed_pushes(ledger, run_dir),
                            moved=armed_elsewhere(ledger, run_dir))
        verdict = judge_seals(seals)
        if seals.before_sha256 is None and not seals.arms:
            raise UsageError(f"no {BEFORE} in {run_dir}: run `loop-pi-audit begin` first")
        findings = list(verdict.findings)
        notes: list[str] = []
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        if verdict.before_ok and before_bytes is not None:
            before = load_before(before_path, before_bytes)
            charter = resolve_charter(charter_path, before, before_path)
            findings += charter_findings(str(run_dir), before.get("charter_sha256"),
                                         verdict.head)
            trusted = [e for e in entries if e.line not in verdict.unrecorded]
            after, judged, notes = _judge_run(run_dir, before, trusted, charter, verdict)
            findings += judged
        text, data = render_both(findings, notes)
        atomic_write(run_dir / REPORT_JSON, data.encode("utf-8"))
        atomic_write(run_dir / REPORT_TXT, text.encode("utf-8"))
    print(data if as_json else text, end="")
    record_audit(config, command="closeout", run_dir=run_dir, before=before, after=after,
                 findings=findings, charter_sha256=before.get("charter_sha256"),
                 report=(text, data), arm_id=verdict.head.id if verdict.head else None,
                 ledger=ledger)
    return exit_code(findings)


def _judge_run(run_dir: Path, before: dict[str, Any], entries: list[PushEntry],
               charter: Charter | None, verdict: SealJudgement
               ) -> tuple[dict[str, Any], list[Finding], list[str]]:
    """The after-snapshot (with the git begin ran) and its judgement, with the transport
    checked against every arm of the chain."""
    repos = [Path(repo) for repo in before["repos"]]
    sealed = verdict.chain[0].transport if verdict.chain else None
    program = git_program()
    if sealed is not None:
        recorded = str(sealed.get("git", {}).get("path", ""))
        if os.path.isabs(recorded) and os.access(recorded, os.X_OK):
            program = recorded
    findings: list[Finding] = []
    blocked = None
    if verdict.chain and sealed is None:
        # A fingerprint that cannot be read cannot say the transport is begin's.
        findings.append(Finding(str(run_dir), "", "", "transport-changed", None, None, None,
                                UNVERIFIED, "the transport fingerprint sealed at begin is "
                                "unreadable: how remotes are reached cannot be checked"))
        blocked = "GitHub was not called: begin's transport fingerprint is unreadable"
    with use_git(program):
        if sealed is not None:
            now = fingerprint([str(r) for r in repos], salt=str(sealed.get("salt")),
                              git=program)
            changed, names = transport_findings(str(run_dir), verdict.chain, now)
            findings += changed
            github = github_settings(n.split(":", 1)[0] for n in names)
            if github:
                blocked = ("GitHub was not called: " + ", ".join(github) + " differs from what "
                           "begin recorded")
        after = take_snapshot(repos, charter_sha256=before["charter_sha256"], before=before,
                              github_blocked=blocked,
                              logged=frozenset((e.ref, e.old, e.new) for e in entries))
        write_json(run_dir / AFTER, after)
        judged, notes = judge_snapshots(before, after, entries, charter)
    return after, findings + judged, notes


def load_before(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The before-snapshot (from `data` when it was read already); one that holds no repository
    is malformed (exit 2)."""
    before = load_snapshot(path) if data is None else parse_snapshot(path, data)
    if not before["repos"]:
        raise InputError(path, "not a loop-pi-audit snapshot: it holds no repository (`begin` "
                         "takes one)")
    return before


def compare(*, before_file: str, after_file: str, charter: str | None, push_log: str | None,
            as_json: bool, run_dir: str | None, config: str | None) -> int:
    """Judge the changes between two snapshot files; with `run_dir`, record the audit."""
    before_path = Path(before_file)
    before = load_before(before_path)
    after = load_snapshot(Path(after_file))
    grant = resolve_charter(charter, before, before_path, frozen_only=False)
    entries = load_push_log(push_log, None)
    findings, notes = judge_snapshots(before, after, entries, grant)
    text, data = render_both(findings, notes)
    print(data if as_json else text, end="")
    if run_dir is not None:
        record_audit(config, command="compare", run_dir=Path(run_dir), before=before,
                     after=after, findings=findings,
                     charter_sha256=grant.sha256 if grant is not None else None)
    return exit_code(findings)


def judge_snapshots(before: Mapping[str, Any], after: Mapping[str, Any],
                    entries: Sequence[PushEntry], charter: Charter | None
                    ) -> tuple[list[Finding], list[str]]:
    """Every finding (the net change and every step) and the report's notes. What only a line
    the hook wrote unsealed covers is UNVERIFIED: the judgement without such lines says what
    they alone cover."""
    findings, notes = _judge_snapshots(before, after, entries, charter)
    if all(e.sealed for e in entries):
        return findings, notes
    strict, _ = _judge_snapshots(before, after, [e for e in entries if e.sealed], charter)
    return downgrade_unsealed(findings, strict), notes


def _judge_snapshots(before: Mapping[str, Any], after: Mapping[str, Any],
                     entries: Sequence[PushEntry], charter: Charter | None
                     ) -> tuple[list[Finding], list[str]]:
    """Gather, then judge: every piece of evidence git holds about the changes between the
    snapshots is read first (`audit.evidence.history`, plain data), then judged without asking
    git anything more (`audit.judge.compare`, and `audit.judge.steps` for the steps the
    after-snapshot holds)."""
    history = gather_history(before, after, entries)
    steps, notes = judge_steps(before, after, history.entries)
    return sort_findings([*judge(before, after, charter, history, github_hosts()),
                          *steps]), notes


def resolve_charter(arg: str | None, before: Mapping[str, Any], before_path: Path, *,
                    frozen_only: bool = True) -> Charter | None:
    """The charter to judge by. A recorded hash is always enforced; `compare` of snapshot files
    (which record none) may name a charter, and may judge without one (granting nothing)."""
    recorded = before.get("charter_sha256")
    if arg is None:
        if recorded and frozen_only:
            raise UsageError(f"{before_path} was armed with a charter (sha256 {recorded[:12]}…); "
                             "pass that same file with --charter")
        return None
    path = Path(arg)
    if not recorded and not frozen_only:
        return load_charter(path)
    if not recorded:
        raise UsageError(f"--charter {path}: {before_path} recorded no charter at begin, and a "
                         "charter not frozen at arm grants nothing")
    actual = charter_sha256(path)
    if actual == recorded:
        charter = load_charter(path)
        # The file is read twice: what is granted must be the very bytes that were checked.
        actual = charter.sha256
        if actual == recorded:
            return charter
    raise InputError(path, f"charter changed since begin (sha256 {actual[:12]}…, frozen "
                     f"{recorded[:12]}…); refusing to grant anything from it")


def load_push_log(arg: str | None, default: Path | None) -> list[PushEntry]:
    if arg is not None:
        path = Path(arg)
        if not path.exists():
            raise InputError(path, "no such push log")
        return read_push_log(path)
    return read_push_log(default) if default is not None else []
