"""The `runs` table: a run's row written when it starts and again when it ends, read back by
window and machine, and kept in the spool while the ledger cannot be reached."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs.ledger.model import Run
from jobs.ledger.replay import flush_spool
from jobs.ledger.runs import read_runs, save_run
from jobs.ledger.spool import SPOOL_DIR
from jobs.ledger.store import Ledger

DAY = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)


def ledger_at(tmp_path: Path, machine: str = "alpha") -> Ledger:
    return Ledger(f"sqlite:///{tmp_path / 'ledger.db'}", machine=machine,
                  spool_dir=tmp_path / SPOOL_DIR)


def test_a_run_is_recorded_when_it_starts_and_completed_when_it_ends(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    run = Run("r1", "alpha", "systemd", DAY, config="/home/o/.config/loop-jobs/config.yaml")
    assert save_run(ledger, run)
    [started] = read_runs(ledger)
    assert started.ended_at is None and started.exit_code is None and started.counts == {}

    run.ended_at, run.exit_code = DAY + timedelta(seconds=74), 1
    run.counts = {"pass": 3, "fail": 1}
    assert save_run(ledger, run)
    assert read_runs(ledger) == [run]


def test_runs_are_read_by_window_and_machine_oldest_first(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    for i, machine in enumerate(["alpha", "beta", "alpha"]):
        save_run(ledger, Run(f"r{i}", machine, "manual", DAY + timedelta(days=i), exit_code=0,
                             ended_at=DAY + timedelta(days=i, seconds=5)))
    assert [r.run_id for r in read_runs(ledger)] == ["r0", "r1", "r2"]
    assert [r.run_id for r in read_runs(ledger, machine="alpha")] == ["r0", "r2"]
    assert [r.run_id for r in read_runs(ledger, since=DAY + timedelta(days=1),
                                        until=DAY + timedelta(days=2))] == ["r1"]


def test_a_run_spooled_while_the_ledger_was_unreachable_is_written_later(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    ledger.unreachable = True  # given up on earlier in this run
    run = Run("r1", "alpha", "launchd", DAY, ended_at=DAY + timedelta(seconds=3), exit_code=3,
              counts={"skipped": 2})
    assert not save_run(ledger, run)
    assert read_runs(ledger_at(tmp_path)) == []

    later = ledger_at(tmp_path)
    assert flush_spool(later) == 1
    assert read_runs(later) == [run]
    assert not any((tmp_path / SPOOL_DIR).glob("*.json"))
