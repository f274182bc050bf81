"""A log or state folder that disappears mid-run (a recipe's clean-up, a tmp cleaner) never stops
the run: each verdict is printed, later tasks are verified, the repository is not blamed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


@pytest.mark.parametrize("folder", ["log folder", "state folder", "state folder with the ledger"])
def test_a_folder_removed_by_a_recipe_does_not_stop_the_run(tmp_path: Path, folder: str) -> None:
    victim = tmp_path / ("logs" if folder == "log folder" else "state")
    extra: dict[str, str] = {}
    if folder == "log folder":
        extra["log_file"] = str(victim / "loop-jobs.jsonl")
    elif folder == "state folder":
        extra["ledger"] = f"sqlite:///{tmp_path / 'ledger' / 'ledger.db'}"
    repo = make_verify_repo(tmp_path, extra_config=extra, justfile=(
        f"verify-rm:\n    rm -rf {victim}\n\nverify-ok:\n    echo ok\n"))
    repo.add_task(1, notes="verify-cmd: just verify-rm")
    repo.add_task(2)
    repo.commit_all("tasks")

    # A real process: what the log handler does with a vanished file is process-wide state.
    proc = repo.run("run", *TODAY, process=True)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "unexpected" not in proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("pass ", "fail ",
                                                                            "error ", "skipped "))]
    assert [line.split()[0] for line in lines] == ["pass", "pass"], proc.stdout
    assert [line.split()[2] for line in lines] == ["TASK-1", "TASK-2"]
    assert [s for s in repo.subjects() if s.startswith("loop-verify:")] == [
        "loop-verify: TASK-2 passed (just verify-ok)",
        "loop-verify: TASK-1 passed (just verify-rm)"]
    # The log goes on in a folder made again, with this run's later events.
    log = extra.get("log_file") or str(repo.state_dir / "loop-jobs.jsonl")
    events = [json.loads(line)["event"] for line in Path(log).read_text().splitlines()]
    assert "verify.passed" in events and "run.finished" in events
    if folder != "state folder with the ledger":  # that one the recipe deleted with the folder
        verdicts = [a["verdict"] for a in repo.history()]
        assert verdicts == ["pass", "pass"], verdicts
