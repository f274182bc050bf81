"""Machine identity, claims, the spool and the schema upgrade, on a real SQLite ledger."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.core.urls import canonical_identity, legacy_identity, normalise_remote
from jobs.ledger import claims
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger

DAY = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)


def attempt(verdict: str = "pass", **kw: object) -> Attempt:
    return Attempt(run_id="r1", started_at=DAY, repo="/src/app", verdict=verdict,  # type: ignore[arg-type]
                   **kw)


@pytest.mark.parametrize(("url", "expected"), [
    # GitHub's owner and name are case-insensitive, and every GitHub host is github.com.
    ("git@github.com:Owner/app.git", "github.com/owner/app"),
    ("ssh://git@GitHub.com/Owner/app", "github.com/owner/app"),
    ("https://user:ghp_token@github.com/Owner/app.git/", "github.com/owner/app"),
    ("https://github.com:443/Owner/app", "github.com/owner/app"),
    ("ssh://git@ssh.github.com:443/Owner/App.git", "github.com/owner/app"),
    ("https://www.github.com/Owner/App/", "github.com/owner/app"),
    # Elsewhere the path's case is the server's business: kept.
    ("https://git.example.com:8443/team//App.git", "git.example.com:8443/team/App"),
    ("ssh://git@git.example.com:2222/team/app.git", "git.example.com:2222/team/app"),
    ("git+ssh://git@git.example.com:22/team/app", "git.example.com/team/app"),
])
def test_remote_urls_are_normalised_without_credentials(url: str, expected: str) -> None:
    assert normalise_remote(url, Path("/unused")) == expected


@pytest.mark.parametrize(("url", "legacy"), [
    ("git@github.com:Owner/App.git", "github.com/Owner/App"),
    ("ssh://git@ssh.github.com:443/owner/app", "ssh.github.com:443/owner/app"),
    ("git+ssh://git@git.example.com:22/team/app", "git.example.com:22/team/app"),
])
def test_the_identity_earlier_versions_recorded_is_still_known(url: str, legacy: str) -> None:
    assert legacy_identity(url, Path("/unused")) == legacy
    assert canonical_identity(legacy) == normalise_remote(url, Path("/unused")) or \
        legacy.startswith("git.example.com")  # a port git+ssh named is not in the identity


def test_local_remotes_become_absolute_paths(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    bare.mkdir()
    clone = tmp_path / "clone"
    clone.mkdir()
    assert normalise_remote(str(bare), clone) == str(tmp_path / "remote")
    assert normalise_remote("../remote.git", clone) == str(tmp_path / "remote")
    assert normalise_remote(f"file://{bare}", clone) == str(tmp_path / "remote")
    spaced = tmp_path / "my remote.git"
    assert normalise_remote("file://localhost" + str(spaced).replace(" ", "%20"), clone) \
        == normalise_remote(str(spaced), clone) == str(tmp_path / "my remote")
    assert legacy_identity(f"file://{tmp_path}/my%20remote.git", clone).endswith("my%20remote")


def test_rows_carry_the_machine_and_pending_recovery_sees_only_its_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    alpha, beta = Ledger(url, machine="alpha"), Ledger(url, machine="beta")
    try:
        mine = alpha.record(attempt("fail", edit_state="pending", edit_paths=["backlog/x.md"]))
        beta.record(attempt("fail", edit_state="pending", edit_paths=["backlog/x.md"]))
        assert mine.machine == "alpha" and mine.uid
        assert [p.id for p in alpha.pending("/src/app")] == [mine.id]
        assert [p.machine for p in beta.pending("/src/app")] == ["beta"]
        assert [a.machine for a in alpha.history(machine="beta")] == ["beta"]
        assert len(alpha.history()) == 2
    finally:
        alpha.close()
        beta.close()


def test_sqlite_ledger_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    Ledger(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_older_ledger_gains_the_new_columns_in_place(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with sqlite3.connect(path) as conn:
        conn.execute("""CREATE TABLE attempts (id INTEGER PRIMARY KEY, run_id VARCHAR(64) NOT NULL,
            started_at DATETIME NOT NULL, ended_at DATETIME, repo TEXT NOT NULL,
            task_id VARCHAR(128), task_path TEXT, label_date VARCHAR(10), recipe VARCHAR(256),
            verdict VARCHAR(16) NOT NULL, reason TEXT, exit_code INTEGER, duration FLOAT,
            output_path TEXT, commit_sha VARCHAR(64), edit_state VARCHAR(16) NOT NULL,
            before_sha256 VARCHAR(64), after_sha256 VARCHAR(64), edit_paths TEXT,
            commit_message TEXT)""")
        conn.execute("""INSERT INTO attempts (run_id, started_at, repo, verdict, edit_state,
            edit_paths) VALUES ('old', '2026-11-01 07:30:00', '/src/app', 'fail', 'pending',
            '["backlog/x.md"]')""")
    ledger = Ledger(f"sqlite:///{path}", machine="alpha")
    try:
        # A local file's rows from before machines were recorded are this machine's own.
        [old] = ledger.pending("/src/app")
        assert old.machine is None and old.run_id == "old"
        old.edit_state = "committed"
        ledger.update(old)
        assert ledger.pending("/src/app") == []
        assert ledger.record(attempt()).machine == "alpha"
    finally:
        ledger.close()


def claim(machine: str, run_id: str, task: str = "TASK-1") -> claims.Claim:
    key = claims.claim_key("github.com/o/app", task, "2026-11-30", "0" * 40)
    return claims.Claim(key, "github.com/o/app", task, "2026-11-30", run_id, machine)


def test_a_kept_claim_lives_on_and_a_lost_one_is_not_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    alpha, beta = Ledger(url, machine="alpha"), Ledger(url, machine="beta")
    try:
        assert claims.take(alpha, claim("alpha", "a1"), repo="/a/app", ttl=60, now=DAY) is None
        # Extended at 50 s for 60 s more: at 100 s it is still alpha's.
        assert claims.keep(alpha, claim("alpha", "a1"), ttl=60, now=DAY + timedelta(seconds=50))
        held = claims.take(beta, claim("beta", "b1"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=100))
        assert held is not None and held.machine == "alpha"
        # Not extended in time: beta takes it over, and alpha can no longer extend it.
        assert claims.take(beta, claim("beta", "b1"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=111)) is None
        assert not claims.keep(alpha, claim("alpha", "a1"), ttl=60,
                               now=DAY + timedelta(seconds=112))
        # A finished claim is not extended either.
        claims.settle(beta, claim("beta", "b1"), attempt("pass", edit_state="committed"))
        assert not claims.keep(beta, claim("beta", "b1"), ttl=60,
                               now=DAY + timedelta(seconds=113))
    finally:
        alpha.close()
        beta.close()


def test_a_claim_is_taken_once_and_held_until_finished_released_or_expired(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    alpha, beta = Ledger(url, machine="alpha"), Ledger(url, machine="beta")
    try:
        assert claims.take(alpha, claim("alpha", "a1"), repo="/a/app", ttl=60, now=DAY) is None
        held = claims.take(beta, claim("beta", "b1"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=30))
        assert held is not None and held.machine == "alpha" and not held.finished
        assert held.reason == "claimed by alpha at 2026-11-30T07:30:00Z"

        # Released (the task was never judged): the other machine may run it.
        claims.settle(alpha, claim("alpha", "a1"), None)
        assert claims.take(beta, claim("beta", "b1"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=40)) is None
        # Finished (the verdict reached the task): nobody runs it again, however late.
        claims.settle(beta, claim("beta", "b1"), attempt("pass", edit_state="committed"))
        held = claims.take(alpha, claim("alpha", "a2"), repo="/a/app", ttl=60,
                           now=DAY + timedelta(days=3))
        assert held is not None and held.machine == "beta" and held.finished

        # A holder that died: its claim expires after the ttl, then another takes it over.
        assert claims.take(alpha, claim("alpha", "a3", "TASK-2"), repo="/a/app", ttl=60,
                           now=DAY) is None
        assert claims.take(beta, claim("beta", "b2", "TASK-2"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=59)) is not None
        assert claims.take(beta, claim("beta", "b2", "TASK-2"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=61)) is None
        # The same machine on the same clone takes its own run's live claim over only when
        # that run is provably dead: holding the clone's lock proves nothing.
        assert claims.take(beta, claim("beta", "b3", "TASK-2"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=62)) is not None
        assert claims.take(beta, claim("beta", "b3", "TASK-2"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=62), is_dead=lambda run: False) is not None
        assert claims.take(beta, claim("beta", "b3", "TASK-2"), repo="/a/app", ttl=60,
                           now=DAY + timedelta(seconds=62), is_dead=lambda run: True) is not None
        seen: list[str] = []
        assert claims.take(beta, claim("beta", "b3", "TASK-2"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(seconds=62),
                           is_dead=lambda run: seen.append(run) or run == "b2") is None
        assert seen == ["b2"]
    finally:
        alpha.close()
        beta.close()


def test_a_finished_claim_says_its_verdict_and_commit_and_can_be_taken_again(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    alpha, beta = Ledger(url, machine="alpha"), Ledger(url, machine="beta")
    try:
        mine = claim("alpha", "a1")
        assert claims.take(alpha, mine, repo="/a/app", ttl=60, now=DAY) is None
        done = attempt("fail", edit_state="committed")
        done.run_id, done.task_id, done.label_date = "a1", "TASK-1", "2026-11-30"
        done.commit_sha = "c0ffee" + "0" * 34
        claims.save_settled(alpha, done, mine)
        held = claims.take(beta, claim("beta", "b1"), repo="/b/app", ttl=60,
                           now=DAY + timedelta(hours=1))
        assert held is not None and held.finished and held.commit_sha == done.commit_sha
        assert held.reason_for("beta").startswith("verified by alpha at ")
        assert held.reason_for("beta").endswith("(fail, commit c0ffee0000)")
        assert held.reason_for("alpha").startswith("verified already at ")
        # The dead run's claim is found by its run, for the run that recovers its edit.
        found = claims.claim_of_run(beta, ["github.com/o/app"], "TASK-1", "2026-11-30", "a1",
                                    "/a/app")
        assert found is not None and found.key == mine.key
        # ... under the identity an earlier version gave the repository too; in its clone only.
        found = claims.claim_of_run(beta, ["github.com/new/app", "github.com/o/app"], "TASK-1",
                                    "2026-11-30", "a1", "/a/app")
        assert found is not None and found.key == mine.key
        assert found.identity == "github.com/o/app"
        assert claims.claim_of_run(beta, ["github.com/o/app"], "TASK-1", "2026-11-30", "a1",
                                   "/b/app") is None
        # Taken again (the verdict is in the clone's history): once, by one machine.
        assert claims.take_over_finished(beta, claim("beta", "b2"), held, repo="/b/app", ttl=60)
        assert not claims.take_over_finished(alpha, claim("alpha", "a2"), held, repo="/a/app",
                                             ttl=60)
        again = claims.take(alpha, claim("alpha", "a3"), repo="/a/app", ttl=60,
                            now=DAY + timedelta(hours=1))
        assert again is not None and not again.finished and again.machine == "beta"
    finally:
        alpha.close()
        beta.close()
