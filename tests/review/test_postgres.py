"""The review on a real PostgreSQL ledger: the queries that read the times as the database's text,
by (task, label) pairs, and the runs, as on SQLite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from inprocess import loop_verify
from pg_helpers import PgServer

from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run
from jobs.ledger.store import Ledger

NOW = datetime(2026, 11, 30, 9, 15, 30, 123456, tzinfo=UTC)


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    pg = PgServer()
    try:
        yield pg
    finally:
        pg.close()


def test_review_of_a_postgresql_ledger(server: PgServer, tmp_path: Path) -> None:
    name = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(host=str(server.base), port=server.port, user="loop",
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = server.url().replace("/postgres?", f"/{name}?")
    book = Ledger(url, machine="ci-box")
    try:
        for days in (0, 1, 2, 3, 5):  # none four days ago
            start = NOW - timedelta(days=days)
            save_run(book, Run(f"r{days}", "ci-box", "systemd", start,
                               ended_at=start + timedelta(seconds=30), exit_code=1,
                               counts={"fail": 1}))
            verdict = "pass" if days == 3 else "fail"
            book.save(Attempt(f"r{days}", start, "/srv/app", verdict, task_id="TASK-1",
                              task_path="backlog/tasks/task-1 - Check.md",
                              label_date="2026-11-01", recipe="verify-check", exit_code=1,
                              duration=3.0, commit_sha=f"{days:040x}",
                              summary=f"verify-failed day {days}: `just verify-check` exited 1"))
        # A run from before runs were recorded: told by its attempts.
        book.save(Attempt("old", NOW - timedelta(days=6), "/srv/app", "refused",
                          task_id="TASK-2", reason="no `verify-cmd: just verify-<name>` line"))
    finally:
        book.close()
    config = tmp_path / "config.yaml"
    config.write_text(f"ledger: {url}\ntimezone: Europe/Berlin\nstate_dir: {tmp_path}\n"
                      "machine: laptop\n")
    done = loop_verify(["review", "--config", str(config), "--format", "markdown", "--since",
                        "2026-11-23", "--until", "2026-11-30"])
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "still failing since 2026-11-28 \\(3 mornings\\)" in text
    assert "| 2026-11-26 | **no run 2026-11-26** |" in text
    assert "**no run 2026-11-23**" in text  # before the pieced run of the 24th
    assert "– \\(from its attempts\\)" in text
    assert "no \\`verify-cmd: just verify-&lt;name&gt;\\` line" in text
    assert "- app TASK-1: 1 pass(es)" in text
    assert "```text\nverify-failed day 0: `just verify-check` exited 1\n```" in text
    html = loop_verify(["review", "--config", str(config), "--since", "2026-11-23",
                        "--until", "2026-11-30"])
    assert html.returncode == 0, html.stderr
    assert html.stdout.count('class="norun"') == 2 + 2  # two in the list, two in the grid
