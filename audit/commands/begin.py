"""`begin REPO [--charter FILE]` arms a run; `add REPO` brings another repository into it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from audit.evidence.charter import load_charter
from audit.evidence.git import git_program, use_git
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
from audit.evidence.seal.arm import armed_line, arms, digest, read_evidence, refuse_rearm, seal
from audit.evidence.seal.ledger import AuditLedger, open_ledger
from audit.evidence.seal.transport import fingerprint
from audit.evidence.snapshot import (
    require_repository,
    snapshot_complete,
    summarize,
    take_snapshot,
)
from audit.evidence.snapshot_file import parse_snapshot
from audit.judge.seal import arm_chain
from audit.model import Arm
from audit.report import printable
from jobs.core.errors import EXIT_FAILED, EXIT_OK, LoopError, UsageError


def main(*, command: str, repo: str, run_dir: str | None, charter: str | None = None,
         config: str | None = None) -> int:
    """`begin` (a fresh before-snapshot, arming the charter) or `add` (one more repository)."""
    directory = resolve_run_dir(run_dir)
    root = require_repository(repo)
    if command == "begin":
        return begin(directory, root, Path(charter) if charter else None, config)
    return add(directory, root, config)


def begin(run_dir: Path, repo: Path, charter_path: Path | None,
          config: str | None = None) -> int:
    # Parse the charter before looking at any remote: a bad charter is a usage error (exit 2).
    charter_sha = load_charter(charter_path).sha256 if charter_path else None
    with open_ledger(config) as ledger:
        # Refused before anything is read: a run directory is armed once, and the ledger
        # remembers it even when its files are gone.
        refuse_rearm(run_dir, arms(ledger, run_dir))
        program = git_program()
        with use_git(program):
            transport = fingerprint([str(repo)], git=program)
            snap = take_snapshot([repo], charter_sha256=charter_sha)
        if not _complete(snap, "begin"):
            return EXIT_FAILED
        with run_lock(run_dir):
            refuse_rearm(run_dir, arms(ledger, run_dir))
            before = run_dir / BEFORE
            written = write_json(before, snap)
            # A fresh run: an earlier run's after-snapshot and reports say nothing about it.
            for name in (AFTER, REPORT_JSON, REPORT_TXT):
                (run_dir / name).unlink(missing_ok=True)
            stale = run_dir / PUSH_LOG
            has_log = stale.exists() and stale.stat().st_size > 0
            try:
                arm = seal(ledger, run_dir, kind="begin", extends=None,
                           before_sha256=digest(written),
                           charter_sha256=charter_sha, transport=transport)
            except LoopError:
                before.unlink(missing_ok=True)  # not sealed: not armed
                raise
    print(f"loop-pi-audit: armed {run_dir / BEFORE}"
          + (f" (charter sha256 {charter_sha[:12]}…)" if charter_sha else " (no charter)")
          + f"; sealed in the ledger {ledger.shown}")
    print(summarize(snap))
    if has_log:
        print(f"loop-pi-audit: note: {stale} already holds entries from before this begin; "
              "they still count at closeout", file=sys.stderr)
    print(armed_line(run_dir, arm))
    return EXIT_OK


def add(run_dir: Path, repo: Path, config: str | None = None) -> int:
    before_path = run_dir / BEFORE
    if not before_path.exists():
        raise UsageError(f"no {BEFORE} in {run_dir}: run `loop-pi-audit begin` first")
    key = str(repo)
    with open_ledger(config) as ledger:
        chain, sealed = _sealed_chain(ledger, run_dir, before_path)
        if key in parse_snapshot(before_path, sealed)["repos"]:
            print(f"loop-pi-audit: {key} is already in {before_path}; keeping its first snapshot")
            return EXIT_OK
        program = git_program()
        salt = (chain[0].transport or {}).get("salt")
        with use_git(program):
            transport = fingerprint([str(repo)], git=program,
                                    salt=salt if isinstance(salt, str) else None)
            snap = take_snapshot([repo], charter_sha256=None)
        if not _complete(snap, "add"):
            return EXIT_FAILED
        with run_lock(run_dir):
            # Re-read under the lock: another add may have won the race, and its snapshot is
            # first; and what is extended must still be what was sealed.
            chain, sealed = _sealed_chain(ledger, run_dir, before_path)
            before: dict[str, Any] = parse_snapshot(before_path, sealed)
            if key in before["repos"]:
                print(f"loop-pi-audit: {key} is already in {before_path}; keeping its first "
                      "snapshot")
                return EXIT_OK
            before["repos"] = dict(sorted({**before["repos"], **snap["repos"]}.items()))
            written = write_json(before_path, before)
            arm = seal(ledger, run_dir, kind="add", extends=chain[-1].id,
                       before_sha256=digest(written),
                       charter_sha256=chain[-1].charter_sha256, transport=transport)
    print(f"loop-pi-audit: added {key} to {before_path}")
    print(summarize(snap))
    print(armed_line(run_dir, arm))
    return EXIT_OK


def _sealed_chain(ledger: AuditLedger, run_dir: Path, before_path: Path
                  ) -> tuple[tuple[Arm, ...], bytes]:
    """The arm chain `add` extends and the before-snapshot's bytes, read once (what is extended
    must be what was checked): refused when there is no chain, or when the before-snapshot no
    longer matches its newest row (an edited snapshot must not be sealed anew)."""
    chain = arm_chain(arms(ledger, run_dir))
    if not chain:
        raise UsageError(f"{run_dir} was never armed in the ledger {ledger.shown}: run "
                         "`loop-pi-audit begin` first")
    sealed = read_evidence(before_path)
    if sealed is None or digest(sealed) != chain[-1].before_sha256:
        raise LoopError(f"{before_path} does not match its seal (ledger row {chain[-1].id}): "
                        "refusing to extend it; closeout will report it TAMPERED", EXIT_FAILED)
    return chain, sealed


def _complete(snap: dict[str, Any], verb: str) -> bool:
    reasons = snapshot_complete(snap)
    for reason in reasons:
        # A reason names the remote, whose name is the clone's (the run's) to write.
        print(printable(f"loop-pi-audit: unavailable: {reason}"), file=sys.stderr)
    if reasons:
        print(f"loop-pi-audit: {verb} refused: {len(reasons)} part(s) of the snapshot could not "
              "be read; nothing written", file=sys.stderr)
    return not reasons
