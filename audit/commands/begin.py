"""`begin REPO [--charter FILE]` arms a run; `add REPO` brings another repository into it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from audit.evidence.charter import load_charter
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
from audit.evidence.snapshot import (
    require_repository,
    snapshot_complete,
    summarize,
    take_snapshot,
)
from audit.evidence.snapshot_file import load_snapshot
from jobs.core.errors import EXIT_FAILED, EXIT_OK, UsageError


def main(*, command: str, repo: str, run_dir: str | None, charter: str | None = None) -> int:
    """`begin` (a fresh before-snapshot, arming the charter) or `add` (one more repository)."""
    directory = resolve_run_dir(run_dir)
    root = require_repository(repo)
    if command == "begin":
        return begin(directory, root, Path(charter) if charter else None)
    return add(directory, root)


def begin(run_dir: Path, repo: Path, charter_path: Path | None) -> int:
    # Parse the charter before looking at any remote: a bad charter is a usage error (exit 2).
    charter_sha = load_charter(charter_path).sha256 if charter_path else None
    snap = take_snapshot([repo], charter_sha256=charter_sha)
    if not _complete(snap, "begin"):
        return EXIT_FAILED
    with run_lock(run_dir):
        write_json(run_dir / BEFORE, snap)
        # A fresh run: an earlier run's after-snapshot and reports say nothing about this one.
        for name in (AFTER, REPORT_JSON, REPORT_TXT):
            (run_dir / name).unlink(missing_ok=True)
        stale = run_dir / PUSH_LOG
        has_log = stale.exists() and stale.stat().st_size > 0
    print(f"loop-pi-audit: armed {run_dir / BEFORE}"
          + (f" (charter sha256 {charter_sha[:12]}…)" if charter_sha else " (no charter)"))
    print(summarize(snap))
    if has_log:
        print(f"loop-pi-audit: note: {stale} already holds entries from before this begin; "
              "they still count at closeout", file=sys.stderr)
    return EXIT_OK


def add(run_dir: Path, repo: Path) -> int:
    before_path = run_dir / BEFORE
    if not before_path.exists():
        raise UsageError(f"no {BEFORE} in {run_dir}: run `loop-pi-audit begin` first")
    key = str(repo)
    if key in load_snapshot(before_path)["repos"]:
        print(f"loop-pi-audit: {key} is already in {before_path}; keeping its first snapshot")
        return EXIT_OK
    snap = take_snapshot([repo], charter_sha256=None)
    if not _complete(snap, "add"):
        return EXIT_FAILED
    with run_lock(run_dir):
        # Re-read under the lock: another add may have won the race, and its snapshot is first.
        before: dict[str, Any] = load_snapshot(before_path)
        if key in before["repos"]:
            print(f"loop-pi-audit: {key} is already in {before_path}; keeping its first snapshot")
            return EXIT_OK
        before["repos"] = dict(sorted({**before["repos"], **snap["repos"]}.items()))
        write_json(before_path, before)
    print(f"loop-pi-audit: added {key} to {before_path}")
    print(summarize(snap))
    return EXIT_OK


def _complete(snap: dict[str, Any], verb: str) -> bool:
    reasons = snapshot_complete(snap)
    for reason in reasons:
        print(f"loop-pi-audit: unavailable: {reason}", file=sys.stderr)
    if reasons:
        print(f"loop-pi-audit: {verb} refused: {len(reasons)} part(s) of the snapshot could not "
              "be read; nothing written", file=sys.stderr)
    return not reasons
