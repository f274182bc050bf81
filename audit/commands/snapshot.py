"""`snapshot --out FILE REPO...`: write a snapshot with whatever could be read."""

from __future__ import annotations

import sys
from pathlib import Path

from audit.evidence.rundir import write_json
from audit.evidence.snapshot import require_repository, snapshot_complete, summarize, take_snapshot
from audit.report import printable
from jobs.core.errors import EXIT_OK


def main(*, out: str, repos: list[str]) -> int:
    roots = [require_repository(r) for r in repos]
    snap = take_snapshot(roots, charter_sha256=None)
    write_json(Path(out), snap)
    for reason in snapshot_complete(snap):
        # A reason names the remote, whose name is the clone's (the run's) to write.
        print(printable(f"loop-pi-audit: unavailable: {reason}"), file=sys.stderr)
    print(f"loop-pi-audit: wrote {out}")
    print(summarize(snap))
    return EXIT_OK
