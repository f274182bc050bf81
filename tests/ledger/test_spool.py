"""The local spool of ledger writes, and its replay by a later run."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobs.ledger import replay
from jobs.ledger.model import Run
from jobs.ledger.replay import flush_spool
from jobs.ledger.runs import read_runs, save_run
from jobs.ledger.spool import SPOOL_DIR
from jobs.ledger.store import Ledger

DAY = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)


def ledger_at(tmp_path: Path) -> Ledger:
    return Ledger(f"sqlite:///{tmp_path / 'ledger.db'}", machine="alpha",
                  spool_dir=tmp_path / SPOOL_DIR)


def test_two_runs_flushing_one_spool_at_once_write_each_entry_and_neither_crashes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two runs of one machine (one state directory) start together and both flush the spool:
    # the other run writes and removes an entry this one has listed but not read yet.
    gone = ledger_at(tmp_path)
    gone.unreachable = True
    spooled = [Run(f"r{i}", "alpha", "manual", DAY + timedelta(minutes=i), exit_code=3,
                   ended_at=DAY + timedelta(minutes=i, seconds=5)) for i in range(3)]
    for run in spooled:
        assert not save_run(gone, run)

    first, second = ledger_at(tmp_path), ledger_at(tmp_path)
    real = replay.runs.apply_spooled
    raced = False

    other: list[int] = []
    racer = threading.Thread(target=lambda: other.append(flush_spool(second)))

    def racing(ledger: Ledger, payload: dict[str, Any]) -> None:
        nonlocal raced
        if not raced:
            raced = True
            # The other run starts flushing now; given a moment, it writes all it can.
            racer.start()
            racer.join(timeout=0.5)
        real(ledger, payload)

    monkeypatch.setattr(replay.runs, "apply_spooled", racing)
    written = flush_spool(first)
    racer.join()

    assert written + other[0] == 3  # each entry written by one run or the other
    assert read_runs(ledger_at(tmp_path)) == spooled
    spool = tmp_path / SPOOL_DIR
    assert list(spool.glob("*.json")) == [] and list(spool.glob("*.unreadable")) == []


@pytest.mark.parametrize("kind", ["attempt", "claim", "run"])
def test_an_entry_that_parses_but_does_not_decode_is_set_aside_and_the_rest_written(
        tmp_path: Path, kind: str) -> None:
    # Valid JSON whose payload is not what its kind needs (a damaged field name, a hand edit):
    # it must not stop the run that flushes, morning after morning, with nothing verified.
    gone = ledger_at(tmp_path)
    gone.unreachable = True
    early = Run("r0", "alpha", "manual", DAY, exit_code=3, ended_at=DAY + timedelta(seconds=5))
    assert not save_run(gone, early)
    spool = tmp_path / SPOOL_DIR
    damaged = spool / "00000000000000000001-damaged.json"
    damaged.write_text(json.dumps({"kind": kind, "payload": {"run_id": 7}}))
    later = Run("r1", "alpha", "manual", DAY + timedelta(days=1), exit_code=0,
                ended_at=DAY + timedelta(days=1, seconds=5))
    assert not save_run(gone, later)

    assert flush_spool(ledger_at(tmp_path)) == 2
    assert read_runs(ledger_at(tmp_path)) == [early, later]
    assert list(spool.glob("*.json")) == []
    assert [p.name for p in spool.glob("*.unreadable")] == [damaged.with_suffix(".unreadable").name]


def test_a_spool_this_run_cannot_change_is_left_for_a_later_run_not_a_crash(
        tmp_path: Path) -> None:
    # The spool folder read-only (or its flush lock not makeable): flushing raised, and every
    # morning's run stopped with "unexpected error" before its first task.
    gone = ledger_at(tmp_path)
    gone.unreachable = True
    early = Run("r0", "alpha", "manual", DAY, exit_code=3, ended_at=DAY + timedelta(seconds=5))
    assert not save_run(gone, early)
    spool = tmp_path / SPOOL_DIR
    (spool / replay.FLUSH_LOCK).mkdir()
    assert flush_spool(ledger_at(tmp_path)) == 0
    assert len(list(spool.glob("*.json"))) == 1
    (spool / replay.FLUSH_LOCK).rmdir()
    assert flush_spool(ledger_at(tmp_path)) == 1
    assert read_runs(ledger_at(tmp_path)) == [early]
