"""Recording an audit run in loop-verify's ledger, for `loop-verify review` and `report`.

The ledger is found as loop-verify finds it (`--config`, $LOOP_JOBS_CONFIG, the XDG default;
its `ledger:`, else the default SQLite file in `state_dir`, and its `machine:`): every audit is
recorded, with a closeout's report as it was printed, which `report` re-prints. Recording is a
side channel: whatever goes wrong here (no readable config, a ledger that cannot be opened or
written) is one warning line on stderr and a log event, and the audit's verdict and exit code
stay exactly what the judgement said.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.model import Finding, exit_code, overall
from jobs.core.errors import LoopError


def record_audit(config_arg: str | None, *, command: str, run_dir: Path | None,
                 before: Mapping[str, Any], after: Mapping[str, Any],
                 findings: Sequence[Finding], charter_sha256: str | None,
                 report: tuple[str, str] | None = None, arm_id: int | None = None,
                 ledger: Any = None) -> None:
    """Write the run, its findings and (closeout) its report to the configured ledger (through
    `ledger`, the open `AuditLedger` closeout checked the seals with, when there is one); never
    raises, never exits."""
    from jobs.config.load import load_config

    if ledger is not None:
        _record_in(ledger, command, run_dir, before, after, findings, charter_sha256, report,
                   arm_id)
        return
    try:
        config = load_config(config_arg)
    except LoopError as exc:
        _warn(f"audit not recorded in the ledger: {exc}")
        return
    # The ledger layer logs its own events: to the log file, never onto the report's stdout.
    from audit.evidence.seal.ledger import start_logging

    logging_ok = start_logging(config.log_file, config.machine)
    try:
        _write(config.ledger, _run(config, command, run_dir, before, after, findings,
                                   charter_sha256), run_dir, report, arm_id)
    except Exception as exc:  # any failure here must leave the verdict alone
        reason = _first_line(exc)
        _warn(f"audit not recorded in the ledger {_redact(config.ledger)}: {reason}")
        if logging_ok:
            from jobs.core.logs import get_logger

            get_logger().warning("audit.ledger_unwritable", reason=reason,
                                 ledger=_redact(config.ledger))


def _record_in(ledger: Any, command: str, run_dir: Path | None, before: Mapping[str, Any],
               after: Mapping[str, Any], findings: Sequence[Finding],
               charter_sha256: str | None, report: tuple[str, str] | None,
               arm_id: int | None) -> None:
    from jobs.ledger.audits import insert_audit_run
    from jobs.ledger.seals import insert_report

    class _Machine:
        machine = ledger.machine

    run = _run(_Machine, command, run_dir, before, after, findings, charter_sha256)
    try:
        run_id = insert_audit_run(ledger.ledger.engine, run)
        if report is not None and run_dir is not None:
            ledger.write("record the report", lambda conn: insert_report(
                conn, run_dir=os.path.realpath(run_dir), audit_run_id=run_id, arm_id=arm_id,
                recorded_at=run.recorded_at, exit_code=run.exit_code, text=report[0],
                json_text=report[1]))
    except Exception as exc:  # any failure here must leave the verdict alone
        reason = _first_line(exc)
        _warn(f"audit not recorded in the ledger {ledger.shown}: {reason}")
        from jobs.core.logs import get_logger

        get_logger().warning("audit.ledger_unwritable", reason=reason, ledger=ledger.shown)


def record_refusal(ledger: Any, run_dir: Path, message: str) -> None:
    """A closeout refused (exit 2) once it had started: `report` says so rather than re-print
    an earlier verdict as this one's. Never raises."""
    from jobs.ledger.seals import insert_report

    try:
        ledger.write("record the refused closeout", lambda conn: insert_report(
            conn, run_dir=os.path.realpath(run_dir), audit_run_id=None, arm_id=None,
            recorded_at=datetime.now(UTC), exit_code=2, text=message, json_text=""))
    except Exception as exc:  # a side channel: the refusal itself stands
        _warn(f"refused closeout not recorded in the ledger: {_first_line(exc)}")


def _run(config: Any, command: str, run_dir: Path | None, before: Mapping[str, Any],
         after: Mapping[str, Any], findings: Sequence[Finding],
         charter_sha256: str | None) -> Any:
    from audit.report import group_commits
    from jobs.ledger.audits import AuditFinding, AuditRun

    return AuditRun(
        recorded_at=datetime.now(UTC), command=command, verdict=overall(findings),
        exit_code=exit_code(findings), repos=_remotes(before, after),
        machine=config.machine or socket.gethostname(),
        run_dir=str(run_dir.resolve()) if run_dir is not None else None,
        charter_sha256=charter_sha256,
        findings=[AuditFinding(repo=f.repo, remote=f.remote or None, ref=f.ref or None,
                               kind=f.kind, before=f.before, after=f.after, commit=f.commit,
                               verdict=f.verdict, reason=f.reason, count=f.count,
                               first=f.first, last=f.last)
                  # The findings as the report has them: runs of passing commits as one.
                  for f in group_commits(findings)])


def _remotes(*snapshots: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Each repository's remote URLs (already redacted in the snapshot), for the review's links."""
    repos: dict[str, dict[str, str]] = {}
    for snap in snapshots:
        for repo, part in (snap.get("repos") or {}).items():
            urls = repos.setdefault(str(repo), {})
            remotes = part.get("remotes") if isinstance(part, Mapping) else None
            if not isinstance(remotes, Mapping):
                continue
            for name, remote in remotes.items():
                if isinstance(remote, Mapping) and isinstance(remote.get("url"), str):
                    urls.setdefault(str(name), remote["url"])
    return repos


def _write(url: str, run: Any, run_dir: Path | None, report: tuple[str, str] | None,
           arm_id: int | None) -> None:
    from jobs.ledger.audits import ensure_audit_tables, insert_audit_run
    from jobs.ledger.seals import ensure_seal_tables, insert_report
    from jobs.ledger.store import Ledger

    ledger = Ledger(url)
    try:
        ensure_audit_tables(ledger.engine)
        run_id = insert_audit_run(ledger.engine, run)
        if report is not None and run_dir is not None:
            ensure_seal_tables(ledger.engine)
            with ledger.engine.begin() as conn:
                insert_report(conn, run_dir=os.path.realpath(run_dir), audit_run_id=run_id,
                              arm_id=arm_id, recorded_at=run.recorded_at,
                              exit_code=run.exit_code, text=report[0], json_text=report[1])
    finally:
        ledger.close()


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a URL it cannot parse: show its scheme alone
        return url.split("://", 1)[0] + "://…"


def _warn(message: str) -> None:
    print(f"loop-pi-audit: warning: {message} (the audit's verdict stands)", file=sys.stderr)
