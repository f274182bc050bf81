"""`record-push`: append one push to the run's push log (under the lock, fsynced)."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime

from audit.pushlog import append_push, is_sha
from audit.rundir import resolve_run_dir
from jobs.errors import EXIT_OK, UsageError

SOURCE = "record-push"


def main(args: argparse.Namespace) -> int:
    run_dir = resolve_run_dir(args.run_dir)
    if not run_dir.is_dir():
        # A mistyped run directory must not quietly collect the entries the audit will look for.
        raise UsageError(f"run directory {run_dir} does not exist (run `loop-pi-audit begin`)")
    old, new = args.old.lower(), args.new.lower()
    for label, value in (("--old", old), ("--new", new)):
        if not is_sha(value):
            raise UsageError(f"{label} must be a 40-hex SHA (40 zeros for none), got {value!r}")
    if not args.ref.startswith("refs/"):
        raise UsageError(f"--ref must be a full ref name such as refs/heads/main, "
                         f"got {args.ref!r}")
    if not args.remote:
        raise UsageError("--remote must not be empty")
    append_push(run_dir, {
        "repo": os.path.realpath(args.repo), "remote": args.remote, "ref": args.ref,
        "old": old, "new": new, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": SOURCE})
    return EXIT_OK
