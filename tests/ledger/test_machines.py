"""Several machines on one real PostgreSQL ledger, and a ledger that survives its server.

Two "machines" are two configurations with different `machine:` names, each with its own clone
of one bare remote and its own state directory. The server is a throwaway one of this module,
restarted, stopped and cut off by the tests themselves.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from pg_helpers import PgServer, free_port
from verify_helpers import (
    VerifyRepo,
    git,
    hook,
    kill_marked,
    make_verify_repo,
    start_verify,
    wait_for,
)

from jobs.core.urls import normalise_remote
from jobs.ledger import claims
from jobs.ledger import store as ledger_module
from jobs.ledger.model import Attempt
from jobs.ledger.runs import read_runs
from jobs.ledger.spool import SPOOL_DIR, Spool
from jobs.ledger.store import Ledger, LedgerError

TODAY = ("--today", "2026-11-30")
VERDICT_COMMIT = re.compile(r"loop-verify: (TASK-\d+) (passed|failed) \(just verify-\w+\)")


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    pg = PgServer()
    try:
        yield pg
    finally:
        pg.close()


@pytest.fixture
def ledger_url(server: PgServer) -> str:
    """A database of its own for each test, on the module's server."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(host=str(server.base), port=server.port, user="loop",
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.url().replace("/postgres?", f"/{name}?")


def configure(repo: VerifyRepo, **keys: Any) -> None:
    data = yaml.safe_load(repo.config_path.read_text())
    data.update(keys)
    repo.config_path.write_text(yaml.safe_dump(data))


def second_clone(first: VerifyRepo, base: Path, machine: str) -> VerifyRepo:
    """Another machine: a clone of the same bare remote, its own state and configuration."""
    base.mkdir()
    root = base / "app"
    subprocess.run(["git", "clone", "-q", str(first.bare), str(root)], check=True)
    data = yaml.safe_load(first.config_path.read_text())
    data.update(repos=[{"path": str(root)}], state_dir=str(base / "state"), machine=machine)
    config_path = base / "config.yaml"
    config_path.write_text(yaml.safe_dump(data))
    return VerifyRepo(root, first.bare, base / "state", config_path)


def verdict_commits(repo: VerifyRepo) -> list[str]:
    return [m.group(1) for s in repo.subjects() if (m := VERDICT_COMMIT.fullmatch(s))]


def rows(url: str) -> list[Attempt]:
    ledger = Ledger(url)
    try:
        return ledger.history()
    finally:
        ledger.close()


def log_lines(repo: VerifyRepo) -> list[dict[str, Any]]:
    path = repo.state_dir / "loop-jobs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_two_machines_verify_each_due_task_exactly_once(tmp_path: Path, ledger_url: str) -> None:
    alpha = make_verify_repo(tmp_path / "alpha", tasks=range(1, 21), timeout="60s",
                             extra_config={"machine": "alpha", "ledger": ledger_url})
    beta = second_clone(alpha, tmp_path / "beta", "beta")
    mark = uuid.uuid4().hex
    procs = [start_verify(r, "run", *TODAY, mark=mark, out=tmp_path / name)
             for r, name in ((alpha, "alpha"), (beta, "beta"))]
    try:
        codes = [p.wait(timeout=240) for p in procs]
    finally:
        kill_marked(mark)
    errors = [(tmp_path / f"{n}.stderr").read_text() for n in ("alpha", "beta")]
    # A task the other machine claimed is not "could not be checked": both exit 0.
    assert codes == [0, 0], errors

    tasks = {f"TASK-{n}" for n in range(1, 21)}
    committed = verdict_commits(alpha) + verdict_commits(beta)
    assert sorted(committed) == sorted(tasks)  # one verdict commit per task across both clones

    attempts = rows(ledger_url)
    passed = [a for a in attempts if a.verdict == "pass"]
    assert sorted(a.task_id or "" for a in passed) == sorted(tasks)
    for a in passed:
        assert a.edit_state == "committed"
        clone = alpha if a.machine == "alpha" else beta
        assert a.repo == str(clone.root) and a.task_id in verdict_commits(clone)
        assert a.output_path is not None and a.output_path.startswith(str(clone.state_dir))
    skipped = [a for a in attempts if a.verdict == "skipped"]
    assert len(skipped) == 20
    for a in skipped:
        assert a.claimed_by is not None and a.claimed_by != a.machine
        # Live on the other machine, or already verified there (its verdict not pulled yet).
        assert a.reason is not None and a.reason.startswith(
            (f"claimed by {a.claimed_by} at ", f"verified by {a.claimed_by} at ")), a.reason

    # history shows the machine and filters by it.
    shown = alpha.run("history")
    assert re.search(r"Z  (alpha|beta)  pass ", shown.stdout), shown.stdout
    rc, data = alpha.run_json("history", "--machine", "beta")
    assert rc == 0 and {a["machine"] for a in data["attempts"]} <= {"beta"}
    assert len(data["attempts"]) == len([a for a in attempts if a.machine == "beta"])

    for repo, name in ((alpha, "alpha"), (beta, "beta")):
        lines = log_lines(repo)
        assert lines and all(line["machine"] == name and line["run_id"] for line in lines)


def test_a_dead_machines_claim_expires_and_another_runs_the_task(tmp_path: Path,
                                                                ledger_url: str) -> None:
    alpha = make_verify_repo(tmp_path / "alpha", tasks=[1], timeout="1s",
                             extra_config={"machine": "alpha", "ledger": ledger_url,
                                           "kill_grace": "1s"})
    beta = second_clone(alpha, tmp_path / "beta", "beta")
    ledger = Ledger(ledger_url, machine="ghost")
    try:
        identity = normalise_remote(str(alpha.bare), alpha.root)
        blob = alpha.git("rev-parse", "HEAD:backlog/tasks/task-1 - Task-1.md").strip()
        key = claims.claim_key(identity, "TASK-1", "2026-11-01", blob)
        ghost = claims.Claim(key, identity, "TASK-1", "2026-11-01", "dead-run", "ghost")
        # A claim taken long ago by a machine that died: its timeout plus grace has passed.
        from datetime import UTC, datetime, timedelta
        assert claims.take(ledger, ghost, repo="/ghost/app", ttl=62,
                           now=datetime.now(UTC) - timedelta(hours=1)) is None
        # One that is still live holds the task off.
        live = claims.Claim(claims.claim_key(identity, "TASK-1", "2099-01-01", blob), identity,
                            "TASK-1", "2099-01-01", "live-run", "ghost")
        assert claims.take(ledger, live, repo="/ghost/app", ttl=3600) is None
    finally:
        ledger.close()
    done = beta.run("run", *TODAY)
    assert done.returncode == 0, done.stderr
    assert verdict_commits(beta) == ["TASK-1"]
    [row] = [a for a in rows(ledger_url) if a.verdict == "pass"]
    assert row.machine == "beta"


def waiting_justfile(tmp_path: Path) -> tuple[str, Path, Path]:
    started, go = tmp_path / "recipe-started", tmp_path / "go"
    text = (f"verify-wait:\n    touch '{started}'\n"
            f"    while [ ! -e '{go}' ]; do sleep 0.05; done\n")
    return text, started, go


def one_waiting_task(tmp_path: Path, url: str) -> tuple[VerifyRepo, Path, Path]:
    text, started, go = waiting_justfile(tmp_path)
    repo = make_verify_repo(tmp_path / "m", justfile=text, timeout="120s",
                            extra_config={"machine": "alpha", "ledger": url})
    repo.add_task(1, notes="verify-cmd: just verify-wait")
    repo.commit_all("task")
    return repo, started, go


def run_with_outage(repo: VerifyRepo, started: Path, go: Path, tmp_path: Path,
                    outage: Any) -> tuple[int, str, str]:
    mark = uuid.uuid4().hex
    proc = start_verify(repo, "run", *TODAY, mark=mark, out=tmp_path / "run")
    try:
        wait_for(started, proc, timeout=60)
        outage()
        go.touch()
        code = proc.wait(timeout=120)
    finally:
        kill_marked(mark)
    return (code, (tmp_path / "run.stdout").read_text(),
            (tmp_path / "run.stderr").read_text())


def test_server_restarted_while_the_recipe_runs(tmp_path: Path, server: PgServer,
                                                ledger_url: str) -> None:
    repo, started, go = one_waiting_task(tmp_path, ledger_url)
    code, out, err = run_with_outage(repo, started, go, tmp_path, server.restart)
    assert code == 0, err
    assert out.startswith("pass ")
    [row] = rows(ledger_url)
    assert row.verdict == "pass" and row.edit_state == "committed"
    assert row.commit_sha == repo.head()
    assert Spool(repo.state_dir / SPOOL_DIR).count() == 0


def test_idle_session_timeout_cutting_the_connection(tmp_path: Path, server: PgServer,
                                                     ledger_url: str) -> None:
    app = f"lv{uuid.uuid4().hex[:8]}"
    url = f"{ledger_url}&application_name={app}&options=-c%20idle_session_timeout%3D300"
    repo, started, go = one_waiting_task(tmp_path, url)

    def sessions_cut() -> None:
        # Wait until the server has ended every idle session of the run (300 ms idle each).
        with psycopg.connect(host=str(server.base), port=server.port, user="loop",
                             dbname="postgres", autocommit=True) as conn:
            deadline = time.monotonic() + 60
            while conn.execute("SELECT count(*) FROM pg_stat_activity "
                               "WHERE application_name = %s", (app,)).fetchone() != (0,):
                assert time.monotonic() < deadline, "the idle sessions were never cut"
                time.sleep(0.05)

    code, out, err = run_with_outage(repo, started, go, tmp_path, sessions_cut)
    assert code == 0, err
    [row] = rows(ledger_url)
    assert row.verdict == "pass" and row.edit_state == "committed"
    assert row.commit_sha == repo.head()


@pytest.mark.slow
def test_server_down_at_the_verdict_spools_it_and_a_later_run_writes_it(
        tmp_path: Path, server: PgServer, ledger_url: str) -> None:
    repo, started, go = one_waiting_task(tmp_path, ledger_url)
    try:
        code, out, err = run_with_outage(repo, started, go, tmp_path, server.stop)
        spooled = Spool(repo.state_dir / SPOOL_DIR).count()
    finally:
        server.start()
    # Nothing failed, but the verdict is not in the ledger yet: exit 3.
    assert code == 3, err
    assert out.startswith("pass ")
    assert spooled >= 2
    # The verdict still reached the task and its commit.
    assert verdict_commits(repo) == ["TASK-1"]
    events = {line["event"] for line in log_lines(repo)}
    assert {"ledger.write_failed", "ledger.spooled"} <= events
    assert [a.edit_state for a in rows(ledger_url)] == []
    doctor = repo.run("doctor")
    assert f"FAIL ledger spool: {spooled} ledger write(s) waiting" in doctor.stdout

    again = repo.run("run", *TODAY)
    assert again.returncode == 0, again.stderr
    assert Spool(repo.state_dir / SPOOL_DIR).count() == 0
    [row] = rows(ledger_url)
    assert row.verdict == "pass" and row.edit_state == "committed"
    assert row.commit_sha == repo.head() and row.machine == "alpha"
    assert "ledger.spool_flushed" in {line["event"] for line in log_lines(repo)}


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A loopback port that takes connections but never answers (a server that hangs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield int(s.getsockname()[1])


class Clock:
    """A monotonic clock that moves only when told: the ledger's waits, counted, not waited."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_shipped_limits_give_an_unreachable_ledger_up_within_10_seconds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC: a ledger that cannot be reached is given up within 10 s. The worst case, on a clock
    # that moves only by what each step costs: every connection attempt takes the whole
    # CONNECT_TIMEOUT (a server that never answers), and the retries wait in between. (The test
    # below shows, on a real server that never answers, that the connect timeout is the one
    # each attempt is cut off at.)
    clock = Clock()
    attempts: list[float] = []

    def never_answers(self: Ledger) -> None:
        attempts.append(clock.now)
        clock.now += ledger_module.CONNECT_TIMEOUT
        raise psycopg_operational_error()

    monkeypatch.setattr(ledger_module, "time_module", clock)
    monkeypatch.setattr(Ledger, "_create_schema", never_answers)
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        Ledger("postgresql+psycopg://loop@127.0.0.1:1/postgres", sleep=clock.sleep)
    assert len(attempts) >= 2  # it did retry
    assert clock.now < 10, (clock.now, attempts)


def psycopg_operational_error() -> Exception:
    import sqlalchemy as sa

    return sa.exc.OperationalError("connect", {}, psycopg.OperationalError("timeout expired"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["closed port", "never answers"])
def test_an_unreachable_ledger_is_given_up_within_10_seconds(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port() if kind == "closed port" else request.getfixturevalue("blackhole")
    url = f"postgresql+psycopg://loop@127.0.0.1:{port}/postgres"
    # The shipped limits' bound is shown on a counted clock above; here each wait is shorter,
    # so that a server that never answers does not hold a test worker for half a minute, and the
    # connect timeout is seen cutting each attempt off (in-process calls see the shorter wait).
    monkeypatch.setattr(ledger_module, "RETRY_WAIT", 0.5)
    monkeypatch.setattr(ledger_module, "CONNECT_TIMEOUT", 1)
    begun = time.monotonic()
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        Ledger(url)
    assert time.monotonic() - begun < 10
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"ledger": url})
    for verb in ("history", "run"):
        proc = repo.run(verb, *(TODAY if verb == "run" else ()), timeout=60)
        assert proc.returncode == 3, proc.stderr
        assert "cannot open the ledger" in proc.stderr and "Traceback" not in proc.stderr
    doctor = repo.run("doctor", timeout=60)
    assert doctor.returncode == 1 and "FAIL ledger: cannot open the ledger" in doctor.stdout
    assert "ledger.open_failed" in {line["event"] for line in log_lines(repo)}
    # Nothing ran without a ledger to claim the task in.
    assert verdict_commits(repo) == []
    assert git(repo.root, "status", "--porcelain") == ""


def set_done_again(repo: VerifyRepo, task: Path, recipe: str) -> None:
    """What an owner does after a failure: fix the cause, set the task Done again, push."""
    text = task.read_text().replace("status: To Do", "status: Done")
    task.write_text(re.sub(r"verify-cmd: just verify-\w+", f"verify-cmd: just {recipe}", text,
                           count=1))
    repo.commit_all("fixed; done again")


def test_fail_fix_verify_across_two_clones_sharing_a_ledger(tmp_path: Path,
                                                            ledger_url: str) -> None:
    alpha = make_verify_repo(tmp_path / "alpha",
                             extra_config={"machine": "alpha", "ledger": ledger_url})
    alpha.add_task(1, notes="verify-cmd: just verify-bad")
    alpha.commit_all("task 1")
    beta = second_clone(alpha, tmp_path / "beta", "beta")

    assert alpha.run("run", *TODAY).returncode == 1
    failed = alpha.head()
    # Beta has not pulled alpha's verdict: the same verification was done, it is not run again.
    held = beta.run("run", *TODAY)
    assert held.returncode == 0, held.stdout + held.stderr
    assert re.fullmatch(r"skipped  app TASK-1  just verify-bad: verified by alpha at \S+Z "
                        rf"\(fail, commit {failed[:10]}\)", held.stdout.splitlines()[0]), \
        held.stdout

    # The owner pulls the verdict on beta, fixes the task there and sets it Done again.
    alpha.git("push", "-q", "origin", "HEAD:main")
    beta.git("pull", "-q", "--ff-only")
    [task] = (beta.root / "backlog" / "tasks").glob("task-1 *.md")
    set_done_again(beta, task, "verify-ok")
    fixed = beta.run("run", *TODAY)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.startswith("pass     app TASK-1  just verify-ok"), fixed.stdout
    passed = beta.head()

    # Alpha pulls the fix but not beta's verdict commit: the fixed task is beta's, verified.
    alpha.git("pull", "-q", "--ff-only", "origin", "main")
    again = alpha.run("run", *TODAY)
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.fullmatch(r"skipped  app TASK-1  just verify-ok: verified by beta at \S+Z "
                        rf"\(pass, commit {passed[:10]}\)", again.stdout.splitlines()[0])
    assert verdict_commits(alpha) == ["TASK-1"] and verdict_commits(beta) == ["TASK-1", "TASK-1"]
    verdicts = [(a.machine, a.verdict) for a in rows(ledger_url)]
    assert verdicts == [("alpha", "fail"), ("beta", "skipped"), ("beta", "pass"),
                        ("alpha", "skipped")]


@pytest.mark.slow
def test_a_ledger_lost_mid_run_is_given_up_for_reads_and_writes(
        tmp_path: Path, server: PgServer, ledger_url: str) -> None:
    repo, started, go = one_waiting_task(tmp_path, ledger_url)
    other = make_verify_repo(tmp_path / "o", tasks=[2, 10])
    configure(repo, repos=[{"path": str(repo.root)}, {"path": str(other.root)}])
    try:
        code, out, err = run_with_outage(repo, started, go, tmp_path, server.stop)
        spool = list(Spool(repo.state_dir / SPOOL_DIR).entries())
    finally:
        server.start()
    assert code == 3, err
    lines = out.splitlines()
    assert lines[0].startswith("pass     m/app TASK-1  just verify-wait")
    # The next repository's reads did not wait for the ledger again: its tasks are reported.
    assert lines[1:3] == ["skipped  o/app TASK-2  just verify-ok: the ledger is unreachable",
                          "skipped  o/app TASK-10  just verify-ok: the ledger is unreachable"]
    assert re.fullmatch(r"1 passed, 2 skipped in \S+", lines[3]), lines
    assert "the ledger is unreachable" in err and "Traceback" not in err
    events = log_lines(repo)
    names = [e["event"] for e in events]
    given_up = names.index("ledger.write_failed")
    assert "ledger.retrying" not in names[given_up:]
    assert [e["task"] for e in events if e["event"] == "repo.skipped"] == ["TASK-2", "TASK-10"]
    [finished] = [e for e in events if e["event"] == "run.finished"]
    assert finished["exit_code"] == 3 and finished["counts"] == {"pass": 1, "skipped": 2}
    spooled = [(kind, p.get("task_id"), p.get("verdict"), p.get("reason"))
               for _, kind, p in spool if kind == "attempt" and p["verdict"] == "skipped"]
    assert [s[1] for s in spooled] == ["TASK-2", "TASK-10"]
    assert {s[3] for s in spooled} == {"the ledger is unreachable"}
    assert any(kind == "run" and p["exit_code"] == 3 for _, kind, p in spool)
    assert verdict_commits(other) == []

    # The next run writes it all, the run's own row with its end, then verifies what waited.
    again = repo.run("run", *TODAY)
    assert again.returncode == 0, again.stdout + again.stderr
    assert verdict_commits(other) == ["TASK-10", "TASK-2"]
    ledger = Ledger(ledger_url)
    try:
        first, second = read_runs(ledger)
    finally:
        ledger.close()
    assert (first.exit_code, first.counts) == (3, {"pass": 1, "skipped": 2})
    assert first.ended_at is not None and second.exit_code == 0


def test_a_verdict_kept_after_a_refused_commit_is_not_run_again_by_another_machine(
        tmp_path: Path, ledger_url: str) -> None:
    # Alpha's recipe ran and judged the task; its hook refused the verdict commit, so the verdict
    # is kept for alpha's next run to commit without running the recipe again. Beta, sharing the
    # ledger with the same task file, must not run that verification a second time.
    alpha = make_verify_repo(tmp_path / "alpha", tasks=[1],
                             extra_config={"machine": "alpha", "ledger": ledger_url})
    beta = second_clone(alpha, tmp_path / "beta", "beta")
    refusing = hook(alpha, "pre-commit", "echo 'not now' >&2\nexit 1\n")

    kept = alpha.run("run", *TODAY)
    assert kept.returncode == 3 and "commit failed" in kept.stdout, kept.stdout + kept.stderr

    held = beta.run("run", *TODAY)
    assert held.returncode == 0, held.stdout + held.stderr
    assert re.match(r"skipped  app TASK-1  just verify-ok: verified by alpha at \S+Z \(pass\)",
                    held.stdout.splitlines()[0]), held.stdout
    assert verdict_commits(beta) == []

    # Alpha's hook lets the kept verdict through: committed by alpha, never run again.
    refusing.unlink()
    done = alpha.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdict_commits(alpha) == ["TASK-1"]
    assert [(a.machine, a.verdict) for a in rows(ledger_url)] == [
        ("alpha", "pass"), ("beta", "skipped")]


def test_a_kept_verdict_whose_commit_was_undone_frees_the_task_for_a_fresh_run(
        tmp_path: Path, ledger_url: str) -> None:
    # A kept verdict whose later commit a hook stuffed with another path is undone and dropped:
    # the task is run afresh, so the claim the kept verdict held must not block it.
    alpha = make_verify_repo(tmp_path / "alpha", tasks=[1],
                             extra_config={"machine": "alpha", "ledger": ledger_url})
    refusing = hook(alpha, "pre-commit", "exit 1\n")
    assert alpha.run("run", *TODAY).returncode == 3
    refusing.unlink()
    hook(alpha, "pre-commit", "echo 2 > VERSION\ngit add VERSION\n")
    undone = alpha.run("run", *TODAY)
    assert "commit undone" in undone.stdout, undone.stdout + undone.stderr

    (alpha.root / ".git" / "hooks" / "pre-commit").unlink()
    (alpha.root / "VERSION").unlink(missing_ok=True)  # the hook's own file, left untracked
    fresh = alpha.run("run", *TODAY)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.startswith("pass     app TASK-1  just verify-ok"), fresh.stdout
    assert verdict_commits(alpha) == ["TASK-1"]



def _skewed(offset: timedelta) -> type[datetime]:
    """A `datetime` whose now() is this machine's clock set `offset` off."""
    class Skewed(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Skewed:  # type: ignore[override]
            return cls.fromtimestamp((datetime.now(tz) + offset).timestamp(), tz)
    return Skewed


@pytest.mark.parametrize("skewed", ["the machine asking", "the machine holding"])
def test_claims_live_by_the_servers_clock_not_a_skewed_machines(
        ledger_url: str, skewed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A machine whose clock runs ahead would see a live claim as expired (and run the recipe a
    # second time); one whose clock runs behind would write claims that expire at once.
    alpha, beta = Ledger(ledger_url, machine="alpha"), Ledger(ledger_url, machine="beta")
    hours = timedelta(hours=2)
    try:
        def claim(run: str, machine: str) -> claims.Claim:
            return claims.Claim("key", "example.com/app", "TASK-1", "2026-11-30", run, machine)

        monkeypatch.setattr(claims, "datetime",
                            _skewed(-hours if skewed == "the machine holding" else hours * 0))
        assert claims.take(alpha, claim("run-a", "alpha"), repo="/a", ttl=600) is None
        assert claims.keep(alpha, claim("run-a", "alpha"), ttl=600)
        monkeypatch.setattr(claims, "datetime",
                            _skewed(hours if skewed == "the machine asking" else hours * 0))
        held = claims.take(beta, claim("run-b", "beta"), repo="/b", ttl=600)
        assert held is not None and held.machine == "alpha" and not held.finished
    finally:
        alpha.close()
        beta.close()
