"""`loop-verify history --since DATE`: the day is the configured zone's, as in `run --today` and
`review --since`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run
from jobs.ledger.store import Ledger
from jobs.main import main as verify_main

# 2026-11-30 00:00 in Tokyo is 2026-11-29 15:00 UTC.
BEFORE_TOKYO_DAY = datetime(2026, 11, 29, 14, 30, tzinfo=UTC)
IN_TOKYO_DAY_NOT_UTC = datetime(2026, 11, 29, 15, 30, tzinfo=UTC)
IN_BOTH = datetime(2026, 11, 30, 0, 30, tzinfo=UTC)


def test_since_is_the_configured_zones_day(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    config = tmp_path / "config.yaml"
    config.write_text(f"timezone: Asia/Tokyo\nledger: '{url}'\nstate_dir: {tmp_path / 'state'}\n")
    ledger = Ledger(url, machine="m")
    try:
        for n, moment in enumerate((BEFORE_TOKYO_DAY, IN_TOKYO_DAY_NOT_UTC, IN_BOTH), start=1):
            ledger.record(Attempt(run_id=f"r{n}", started_at=moment, repo="/a", verdict="pass",
                                  task_id=f"TASK-{n}"))
            save_run(ledger, Run(run_id=f"r{n}", machine="m", trigger="manual",
                                 started_at=moment, ended_at=moment, exit_code=0))
    finally:
        ledger.close()

    args = ["history", "--config", str(config), "--since", "2026-11-30", "--json"]
    assert verify_main(args) == 0
    tasks = [a["task_id"] for a in json.loads(capsys.readouterr().out)["attempts"]]
    assert tasks == ["TASK-2", "TASK-3"]
    assert verify_main([*args, "--runs"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["r2", "r3"]
