"""`report`: print the last closeout's report as the ledger recorded it, exiting as that closeout
did (0 pass, 1 fail, 3 could not check; 2 when it was refused). Report files in the run
directory that differ from that record are said to be TAMPERED, and the exit is 1: the run
could have rewritten them, never the ledger's record.
"""

from __future__ import annotations

import sys
from pathlib import Path

from audit.evidence.rundir import REPORT_JSON, REPORT_TXT, resolve_run_dir, run_lock
from audit.evidence.seal.ledger import open_ledger, run_dir_key
from jobs.core.errors import EXIT_FAILED, EXIT_USAGE, UsageError
from jobs.core.fs import read_regular


def main(*, run_dir: str | None, config: str | None = None) -> int:
    directory = resolve_run_dir(run_dir)
    return _reprint(directory, config)


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path)
    except OSError:
        return None


def _reprint(run_dir: Path, config: str | None) -> int:
    from jobs.ledger.seals import last_report

    with open_ledger(config) as ledger:
        row = ledger.read("read the last report",
                          lambda conn: last_report(conn, run_dir_key(run_dir)))
    text = data = None
    if run_dir.is_dir():  # a mistyped run directory is not made here, lock file and all
        with run_lock(run_dir):
            text, data = _read(run_dir / REPORT_TXT), _read(run_dir / REPORT_JSON)
    if row is None:
        if text is None and data is None:
            raise UsageError(f"no report in {run_dir}: run `loop-pi-audit closeout` first")
        print(f"TAMPERED: the ledger {ledger.shown} holds no closeout of {run_dir}: the report "
              "files there are not the audit's")
        return EXIT_FAILED
    if row.exit_code == EXIT_USAGE and not row.json:
        print(f"loop-pi-audit: no report: the last closeout of {run_dir} was refused: "
              f"{row.text}", file=sys.stderr)
        return EXIT_USAGE
    print(row.text, end="")
    changed = [name for name, got, want in ((REPORT_TXT, text, row.text),
                                            (REPORT_JSON, data, row.json))
               if got != want.encode("utf-8")]
    if changed:
        print(f"TAMPERED: {' and '.join(changed)} in {run_dir} differ from the report the "
              f"ledger recorded at {row.recorded_at.strftime('%Y-%m-%dT%H:%M:%SZ')}")
        return EXIT_FAILED
    return row.exit_code
