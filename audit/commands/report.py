"""`report`: print the last closeout's report again, exiting as that closeout did."""

from __future__ import annotations

import json
from pathlib import Path

from audit.evidence.rundir import REPORT_JSON, REPORT_TXT, resolve_run_dir, run_lock
from jobs.core.errors import InputError, UsageError
from jobs.core.fs import read_regular

EXIT_BY_VERDICT = {"pass": 0, "fail": 1, "could_not_check": 3}


def main(*, run_dir: str | None) -> int:
    directory = resolve_run_dir(run_dir)
    return _reprint(directory)


def _reprint(run_dir: Path) -> int:
    text_path, json_path = run_dir / REPORT_TXT, run_dir / REPORT_JSON
    if not text_path.exists():
        raise UsageError(f"no report in {run_dir}: run `loop-pi-audit closeout` first")
    with run_lock(run_dir):
        try:
            text = read_regular(text_path).decode("utf-8")
            verdict = json.loads(read_regular(json_path).decode("utf-8")).get("verdict")
        except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
            raise InputError(json_path, f"cannot read the last report: {exc}") from None
    if verdict not in EXIT_BY_VERDICT:
        raise InputError(json_path, f"unknown verdict {verdict!r}")
    print(text, end="")
    return EXIT_BY_VERDICT[verdict]
