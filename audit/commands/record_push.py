"""`record-push`: append one push to the run's push log (under the lock, fsynced)."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

from audit.evidence.pushlog import is_sha
from audit.evidence.rundir import resolve_run_dir
from jobs.core.errors import EXIT_OK, UsageError

SOURCE = "record-push"


def main(*, repo: str, ref: str, old: str, new: str, remote: str, run_dir: str | None,
         config: str | None = None) -> int:
    directory = resolve_run_dir(run_dir)
    if not directory.is_dir():
        # A mistyped run directory must not quietly collect the entries the audit will look for.
        raise UsageError(f"run directory {directory} does not exist (run `loop-pi-audit begin`)")
    old, new = old.lower(), new.lower()
    for label, value in (("--old", old), ("--new", new)):
        if not is_sha(value):
            raise UsageError(f"{label} must be a 40-hex SHA (40 zeros for none), got {value!r}")
    if not ref.startswith("refs/"):
        raise UsageError(f"--ref must be a full ref name such as refs/heads/main, "
                         f"got {ref!r}")
    if not remote:
        raise UsageError("--remote must not be empty")
    from audit.evidence.seal.pushes import record_pushes

    # Sealed in the ledger first, then appended; unsealed (and said so) when the ledger cannot
    # be reached.
    record_pushes(directory, [{
        "repo": os.path.realpath(repo), "remote": remote, "ref": ref,
        "old": old, "new": new, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": SOURCE}], config,
        lambda message: print(f"loop-pi-audit: warning: {message}", file=sys.stderr))
    return EXIT_OK
