"""The ledger on SQLite and on a real, throwaway PostgreSQL server (`ledger:` URL)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from pg_helpers import PgServer
from verify_helpers import make_verify_repo

from jobs.core.errors import LoopError
from jobs.ledger.model import Attempt
from jobs.ledger.spool import Spool
from jobs.ledger.store import Ledger, LedgerError


def attempt(repo: str, verdict: str, started: datetime, **kw: object) -> Attempt:
    return Attempt(run_id="r1", started_at=started, repo=repo, verdict=verdict, **kw)  # type: ignore[arg-type]


def exercise(url: str) -> None:
    ledger = Ledger(url)
    try:
        day = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)
        first = ledger.record(attempt("/a", "pass", day - timedelta(days=2), task_id="TASK-1",
                                      commit_sha="a" * 40))
        pending = ledger.record(attempt("/a", "fail", day, task_id="TASK-2",
                                        edit_state="pending", before_sha256="b" * 64,
                                        after_sha256="c" * 64,
                                        edit_paths=["backlog/tasks/x.md"],
                                        commit_message="loop-verify: TASK-2 failed (just v)"))
        ledger.record(attempt("/b", "skipped", day, reason="dirty"))
        assert first.id is not None and pending.id is not None

        [found] = ledger.pending("/a")
        assert found.id == pending.id and found.edit_paths == ["backlog/tasks/x.md"]
        assert found.started_at == day and found.started_at.tzinfo is not None
        found.edit_state, found.commit_sha = "committed", "d" * 40
        ledger.update(found)
        assert ledger.pending("/a") == []

        assert [a.verdict for a in ledger.history()] == ["pass", "fail", "skipped"]
        since = datetime(2026, 11, 30, tzinfo=UTC)
        assert [a.task_id for a in ledger.history(since=since)] == ["TASK-2", None]
        assert [a.verdict for a in ledger.history(repo="/b")] == ["skipped"]
        assert ledger.history(repo="/a")[1].commit_sha == "d" * 40
        assert ledger.history()[0].to_json()["started_at"] == "2026-11-28T07:30:00Z"
    finally:
        ledger.close()
    # A second connection sees the same rows: the schema is created once, not per run.
    again = Ledger(url)
    try:
        assert len(again.history()) == 3
    finally:
        again.close()


def test_sqlite_ledger(tmp_path: Path) -> None:
    exercise(f"sqlite:///{tmp_path / 'deep' / 'ledger.db'}")


def test_unusable_ledger_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        Ledger(f"sqlite:///{blocker / 'ledger.db'}")
    # A driver this installation lacks is the user's configuration to fix: exit 2.
    with pytest.raises(LoopError, match="driver is not installed") as raised:
        Ledger("nosuchdialect://x")
    assert raised.value.exit_code == 2


@pytest.mark.slow
def test_a_sqlite_ledger_held_locked_is_given_up_within_10_seconds_and_spooled(
        tmp_path: Path) -> None:
    # Another process (a backup, an `sqlite3` shell left inside BEGIN) holds the write lock: the
    # ledger is as unreachable as a server that never answers, and the SPEC's bound applies.
    db = tmp_path / "ledger.db"
    Ledger(f"sqlite:///{db}").close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    ledger = Ledger(f"sqlite:///{db}", spool_dir=tmp_path / "spool")
    try:
        begun = time.monotonic()
        saved = ledger.save(attempt("/a", "pass", datetime.now(UTC), task_id="TASK-1"))
        assert time.monotonic() - begun < 10
    finally:
        ledger.close()
        holder.rollback()
        holder.close()
    assert saved is False and ledger.unreachable
    [(_, kind, payload)] = list(Spool(tmp_path / "spool").entries())
    assert kind == "attempt" and payload["task_id"] == "TASK-1"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of our own on a Unix socket, for this module only."""
    server = PgServer()
    try:
        yield server.url()
    finally:
        server.close()


def test_postgresql_ledger(postgres_url: str) -> None:
    exercise(postgres_url)


def test_loop_verify_records_into_postgresql(tmp_path: Path, postgres_url: str) -> None:
    with Ledger(postgres_url).engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM attempts")
    repo = make_verify_repo(tmp_path)
    config = yaml.safe_load(repo.config_path.read_text())
    config["ledger"] = postgres_url
    repo.config_path.write_text(yaml.safe_dump(config))
    repo.add_task(1)
    repo.commit_all("task")

    assert repo.run("run", "--today", "2026-11-30").returncode == 0
    [row] = repo.history()
    assert row["verdict"] == "pass" and row["commit_sha"] == repo.head()
    assert not (repo.state_dir / "ledger.db").exists()
