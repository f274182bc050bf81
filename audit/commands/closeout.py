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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.evidence.charter import charter_sha256, load_charter
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
from audit.evidence.snapshot import take_snapshot
from audit.evidence.snapshot_file import load_snapshot
from audit.judge.compare import judge
from audit.model import Charter, Finding, PushEntry, exit_code
from audit.record import record_audit
from audit.report import render_both, render_json, render_text
from jobs.core.errors import InputError, UsageError
from jobs.core.fs import atomic_write
from jobs.core.urls import github_hosts


def closeout(*, run_dir: str | None, charter: str | None, push_log: str | None, as_json: bool,
             config: str | None) -> int:
    """Snapshot again, judge every change, write both reports into the run directory."""
    directory = resolve_run_dir(run_dir)
    return _closeout(directory, charter, push_log, as_json, config)


def _closeout(run_dir: Path, charter_path: str | None, push_log: str | None, as_json: bool,
              config: str | None) -> int:
    """Three steps, in this order: gather (the before-snapshot, the charter, the push log, a
    fresh after-snapshot, then what git holds about the changes: `judge_snapshots`), judge the
    plain data they make (`audit.judge`, which asks git nothing), report (both files, stdout,
    the ledger). Evidence checked against its seal belongs to the first step."""
    before_path = run_dir / BEFORE
    if not before_path.exists():
        raise UsageError(f"no {BEFORE} in {run_dir}: run `loop-pi-audit begin` first")
    with run_lock(run_dir):
        # A closeout that stops here (changed charter, malformed log) must not leave an earlier
        # report for `report` to pass off as the last word on this run.
        for stale in (REPORT_JSON, REPORT_TXT):
            (run_dir / stale).unlink(missing_ok=True)
        before = load_snapshot(before_path)
        charter = resolve_charter(charter_path, before, before_path)
        entries = load_push_log(push_log, run_dir / PUSH_LOG)
        repos = [Path(repo) for repo in before["repos"]]
        after = take_snapshot(repos, charter_sha256=before["charter_sha256"])
        write_json(run_dir / AFTER, after)
        findings = judge_snapshots(before, after, entries, charter)
        text, data = render_both(findings)
        atomic_write(run_dir / REPORT_JSON, data.encode("utf-8"))
        atomic_write(run_dir / REPORT_TXT, text.encode("utf-8"))
    print(data if as_json else text, end="")
    record_audit(config, command="closeout", run_dir=run_dir, before=before, after=after,
                 findings=findings, charter_sha256=before.get("charter_sha256"))
    return exit_code(findings)


def compare(*, before_file: str, after_file: str, charter: str | None, push_log: str | None,
            as_json: bool, run_dir: str | None, config: str | None) -> int:
    """Judge the changes between two snapshot files; with `run_dir`, record the audit."""
    before_path = Path(before_file)
    before = load_snapshot(before_path)
    after = load_snapshot(Path(after_file))
    grant = resolve_charter(charter, before, before_path, frozen_only=False)
    entries = load_push_log(push_log, None)
    findings = judge_snapshots(before, after, entries, grant)
    print(render_json(findings) if as_json else render_text(findings), end="")
    if run_dir is not None:
        record_audit(config, command="compare", run_dir=Path(run_dir), before=before,
                     after=after, findings=findings,
                     charter_sha256=grant.sha256 if grant is not None else None)
    return exit_code(findings)


def judge_snapshots(before: Mapping[str, Any], after: Mapping[str, Any],
                    entries: Sequence[PushEntry], charter: Charter | None) -> list[Finding]:
    """Gather, then judge: every piece of evidence git holds about the changes between the
    snapshots is read first (`audit.evidence.history`, plain data), then judged without asking
    git anything more (`audit.judge.compare`)."""
    history = gather_history(before, after, entries)
    return judge(before, after, charter, history, github_hosts())


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
