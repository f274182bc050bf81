"""Every `run` records itself (SPEC "Runs"): a row in the ledger's runs table at its start,
completed at its end, a nothing-due run and a run that could only spool included; `run.started`
and `run.finished` in the log; `history --runs`. A dry run is no run."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

from jobs.ledger.runs import read_runs
from jobs.ledger.spool import SPOOL_DIR, Spool
from jobs.ledger.store import Ledger

TODAY = ("--today", "2026-11-30")


def runs_of(url: str) -> list[dict[str, object]]:
    ledger = Ledger(url)
    try:
        return [r.to_json() for r in read_runs(ledger)]
    finally:
        ledger.close()


def test_each_run_records_itself_and_a_dry_run_does_not(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, extra_config={"machine": "studio"})
    url = f"sqlite:///{repo.state_dir / 'ledger.db'}"
    assert repo.run("run", *TODAY).returncode == 0  # nothing due: still a run
    repo.add_task(1)
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.commit_all("tasks")
    assert repo.run("run", *TODAY, "--dry-run").returncode == 0
    assert repo.run("run", *TODAY, "--trigger", "systemd").returncode == 1

    first, second = runs_of(url)
    assert (first["machine"], first["trigger"], first["exit_code"], first["counts"]) == \
        ("studio", "manual", 0, {})
    assert first["config"] == str(repo.config_path)
    assert (second["trigger"], second["exit_code"], second["counts"]) == \
        ("systemd", 1, {"pass": 1, "fail": 1})
    assert second["ended_at"] is not None and second["started_at"] <= second["ended_at"]
    events = repo.log_events()
    started = [e for e in events if e["event"] == "run.started"]
    finished = [e for e in events if e["event"] == "run.finished"]
    assert [e["dry_run"] for e in started] == [False, True, False]
    assert [e["exit_code"] for e in finished] == [0, 0, 1]
    assert finished[-1]["run_id"] == second["run_id"] == started[-1]["run_id"]

    shown = repo.run("history", "--runs")
    lines = shown.stdout.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"\S+Z  studio  manual   exit 0  \S+  nothing due", lines[0]), lines
    assert re.fullmatch(r"\S+Z  studio  systemd  exit 1  \S+  1 passed, 1 failed", lines[1])
    data = json.loads(repo.run("history", "--runs", "--json").stdout)
    assert [r["run_id"] for r in data["runs"]] == [first["run_id"], second["run_id"]]


def test_a_run_that_cannot_reach_the_ledger_is_kept_in_the_spool(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    repo = make_verify_repo(tmp_path, tasks=[1],
                            extra_config={"ledger": f"sqlite:///{blocker}/ledger.db"})
    done = repo.run("run", *TODAY)
    # Nothing can be claimed: nothing runs, each due task is reported, the run exits 3.
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == \
        "skipped  app TASK-1  just verify-ok: the ledger is unreachable"
    assert "cannot open the ledger" in done.stderr and "Traceback" not in done.stderr
    kinds = [(kind, p.get("exit_code")) for _, kind, p in
             Spool(repo.state_dir / SPOOL_DIR).entries() if kind == "run"]
    assert kinds[-1] == ("run", 3)
    assert "run.finished" in {e["event"] for e in repo.log_events()}


def test_a_run_serve_starts_records_its_trigger(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.core.logs import configure_logging
    from jobs.schedule import serve

    # The process-wide stop event of `serve`: another test in this worker may have set it.
    monkeypatch.setattr(serve, "STOP", threading.Event())
    repo = make_verify_repo(tmp_path, tasks=[1])
    configure_logging(repo.state_dir / "loop-jobs.jsonl", console=False, machine="m")
    assert serve.run_daily_verification(str(repo.config_path)) == 0
    [run] = runs_of(f"sqlite:///{repo.state_dir / 'ledger.db'}")
    assert (run["trigger"], run["exit_code"], run["counts"]) == ("serve", 0, {"pass": 1})
