"""`snapshot --out FILE REPO...`: write a snapshot with whatever could be read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from audit.rundir import write_json
from audit.snapshot import require_repository, snapshot_complete, summarize, take_snapshot
from jobs.errors import EXIT_OK


def main(args: argparse.Namespace) -> int:
    repos = [require_repository(r) for r in args.repos]
    snap = take_snapshot(repos, charter_sha256=None)
    write_json(Path(args.out), snap)
    for reason in snapshot_complete(snap):
        print(f"loop-pi-audit: unavailable: {reason}", file=sys.stderr)
    print(f"loop-pi-audit: wrote {args.out}")
    print(summarize(snap))
    return EXIT_OK
