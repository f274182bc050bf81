"""Logs a pipeline takes as they are: our own events, run_id and machine on every line, labels
without paths, the file reopened after rotation, and old recipe output pruned."""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from project import ROOT
from verify_helpers import make_verify_repo

from jobs.config.load import load_config
from jobs.core.errors import ConfigError
from jobs.core.logs import EVENT_NAME, LABEL_FIELDS, configure_logging, get_logger, library_event
from jobs.core.statedir import prune_outputs

REPO_ROOT = ROOT
# A label value Loki takes well: short, no path separators, no spaces or control characters.
LABEL_VALUE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def documented_labels() -> set[str]:
    """The label set docs/logging.md documents (its ```labels block)."""
    text = (REPO_ROOT / "docs" / "logging.md").read_text(encoding="utf-8")
    block = re.search(r"```labels\n(.*?)```", text, re.S)
    assert block, "docs/logging.md has no ```labels block"
    return {line.strip() for line in block.group(1).splitlines() if line.strip()}


def alloy_labels() -> set[str]:
    """The labels the sample Alloy pipeline in docs/ promotes from each JSON line."""
    text = (REPO_ROOT / "docs" / "loop-jobs.alloy").read_text(encoding="utf-8")
    block = re.search(r"stage\.labels\s*\{\s*values\s*=\s*\{(.*?)\}", text, re.S)
    assert block, "docs/loop-jobs.alloy has no stage.labels block"
    return set(re.findall(r"^\s*(\w+)\s*=", block.group(1), re.M))


def test_the_documented_and_shipped_labels_are_the_ones_the_code_names() -> None:
    assert documented_labels() == set(LABEL_FIELDS) == alloy_labels()


def test_library_free_text_becomes_our_event(tmp_path: Path) -> None:
    log_file = tmp_path / "x.jsonl"
    configure_logging(log_file, console=False, machine="studio")
    logging.getLogger("apscheduler.executors.default").info(
        'Running job "%s" (scheduled at %s)', "/home/me/secret path", "2026-11-30")
    logging.getLogger("apscheduler.scheduler").info("Scheduler started")
    # A library of no special standing (urllib3 and PyGithub have their own routing).
    logging.getLogger("somelib.pool").warning("Retrying (%r) after %s", 1, "x")
    get_logger("loop-verify").info("A free text message from our own code")
    entries = lines_of(log_file)
    assert [e["event"] for e in entries] == ["scheduler.job_running",
                                             "scheduler.apscheduler_started",
                                             "library.somelib", "log.message"]
    assert entries[0]["message"].startswith('Running job "/home/me/secret path"')
    for entry in entries:
        assert EVENT_NAME.match(entry["event"]) and entry["machine"] == "studio"
        assert entry["run_id"]


@pytest.mark.parametrize(("name", "template", "event"), [
    ("apscheduler.scheduler", 'Added job "%s" to job store "%s"', "scheduler.job_added"),
    ("apscheduler.executors.default", 'Job "%s" executed successfully',
     "scheduler.job_executed"),
    ("apscheduler.executors.default", 'Run time of job "%s" was missed by %s',
     "scheduler.job_missed"),
    ("apscheduler.scheduler", "Something new in a later APScheduler",
     "scheduler.library_message"),
    ("git.cmd", "Popen(%s)", "library.git"),
    ("", "root message", "library.root"),
])
def test_library_events_map_to_our_vocabulary(name: str, template: str, event: str) -> None:
    assert library_event(name, template) == event


def test_every_line_of_a_real_run_has_run_id_machine_our_event_and_clean_labels(
        tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2], extra_config={"machine": "studio-mac"})
    repo.add_task(3, notes="verify-cmd: just verify-bad")
    repo.add_task(4, notes="verify-cmd: just nonsense")
    repo.commit_all("tasks")
    done = repo.run("run", "--today", "2026-11-30")
    assert done.returncode == 1, done.stderr
    entries = lines_of(repo.state_dir / "loop-jobs.jsonl")
    run_ids = {e["run_id"] for e in entries}
    assert len(run_ids) == 1  # every line of the run carries the run's own id
    events = {e["event"] for e in entries}
    assert {"verify.passed", "verify.failed", "run.finished"} <= events
    for entry in entries:
        assert EVENT_NAME.match(entry["event"]), entry
        assert entry["machine"] == "studio-mac"
        for label in documented_labels():
            assert LABEL_VALUE.match(str(entry[label])), (label, entry)
        # Paths and command output live in fields that are not labels.
        assert "/" not in entry["event"]


def test_the_log_file_is_reopened_after_rotation(tmp_path: Path) -> None:
    log_file = tmp_path / "loop-jobs.jsonl"
    configure_logging(log_file, console=False, machine="m")
    log = get_logger("loop-verify")
    log.info("run.started")
    # logrotate / newsyslog: rename the file away, then the next line must go to a new file.
    os.rename(log_file, tmp_path / "loop-jobs.jsonl.1")
    log.info("run.finished")
    assert [e["event"] for e in lines_of(tmp_path / "loop-jobs.jsonl.1")] == ["run.started"]
    assert [e["event"] for e in lines_of(log_file)] == ["run.finished"]


def test_output_retention_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("output_retention: 7d\nmachine: studio-mac\n")
    config = load_config(path, env={})
    assert config.output_retention == 7 * 86400 and config.machine == "studio-mac"
    for bad in ("7 weeks", "0d", "-1d", [1], True):
        path.write_text(yaml.safe_dump({"output_retention": bad}))
        with pytest.raises(ConfigError, match="output_retention"):
            load_config(path, env={})
    for bad_machine in ("", "a\nb", "x" * 200):
        path.write_text(yaml.safe_dump({"machine": bad_machine}))
        with pytest.raises(ConfigError, match="machine"):
            load_config(path, env={})


def test_old_run_output_is_pruned_and_recent_output_kept(tmp_path: Path) -> None:
    now = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)
    runs = tmp_path / "runs"
    old, recent, busy = runs / "20261001T073000Z-aaaa", runs / "20261125T073000Z-bbbb", \
        runs / "20261002T073000Z-cccc"
    for folder in (old, recent, busy):
        folder.mkdir(parents=True)
        (folder / "app-TASK-1.log").write_text("output\n")
    stamp = (now - timedelta(days=40)).timestamp()
    for path in (old / "app-TASK-1.log", old, busy):
        os.utime(path, (stamp, stamp))
    (busy / "app-TASK-1.log").touch()  # something in it is new: the whole run stays
    os.utime(busy / "app-TASK-1.log", (now.timestamp(), now.timestamp()))
    os.utime(recent / "app-TASK-1.log", ((now - timedelta(days=5)).timestamp(),) * 2)
    os.utime(recent, ((now - timedelta(days=5)).timestamp(),) * 2)

    assert prune_outputs(tmp_path, 30 * 86400, now) == [old]
    assert not old.exists() and recent.exists() and busy.exists()
    assert prune_outputs(tmp_path / "nothing here", 30 * 86400, now) == []


def test_a_run_folder_named_recently_is_kept_whatever_its_mtime(tmp_path: Path) -> None:
    # The run id comes from our clock, mtimes from the file system's; when the two disagree (a
    # clock stepped back, or a test under libfaketime), the folder must look old by both to go.
    now = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)
    folder = tmp_path / "runs" / "20261130T070000Z-dddd"
    folder.mkdir(parents=True)
    (folder / "app-TASK-1.log").write_text("output\n")
    stamp = (now - timedelta(days=90)).timestamp()
    for path in (folder / "app-TASK-1.log", folder):
        os.utime(path, (stamp, stamp))
    assert prune_outputs(tmp_path, 30 * 86400, now) == []
    assert folder.exists()


def test_a_run_prunes_output_older_than_the_configured_retention(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"output_retention": "1d"})
    stale = repo.state_dir / "runs" / "20200101T000000Z-dead"
    stale.mkdir(parents=True)
    (stale / "app-TASK-9.log").write_text("old output\n")
    long_ago = datetime(2020, 1, 2, tzinfo=UTC).timestamp()
    os.utime(stale / "app-TASK-9.log", (long_ago, long_ago))
    os.utime(stale, (long_ago, long_ago))
    done = repo.run("run", "--today", "2026-11-30")
    assert done.returncode == 0, done.stderr
    assert not stale.exists()
    [kept] = [p for p in (repo.state_dir / "runs").iterdir()]
    assert list(kept.glob("*.log"))  # this run's own output is there
    assert "outputs.pruned" in {e["event"] for e in lines_of(repo.state_dir / "loop-jobs.jsonl")}


def test_serve_scheduler_lines_have_run_id_machine_and_our_events(tmp_path: Path) -> None:
    from scheduler_helpers import InProcessServe, record_run, write_config

    config = write_config(tmp_path / "cfg", schedule="07:30", timezone="Europe/London",
                          machine="serve-box")
    configure_logging(config.log_file, console=False, machine=config.machine)
    try:
        with InProcessServe(config, job=record_run):
            pass
    finally:
        logging.getLogger().handlers.clear()
    entries = lines_of(config.log_file)
    assert any(e["logger"].startswith("apscheduler") for e in entries)  # the library's own lines
    assert {"scheduler.started", "scheduler.stopped"} <= {e["event"] for e in entries}
    for entry in entries:
        assert EVENT_NAME.match(entry["event"]), entry
        assert entry["machine"] == "serve-box" and entry["run_id"], entry


TODAY = ("--today", "2026-11-30")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_log_file_that_cannot_be_written_is_one_line_not_a_traceback_per_event(
        tmp_path: Path) -> None:
    # A full disk under the log file (here /dev/full, where every write fails with ENOSPC):
    # logging printed "--- Logging error ---" and a traceback to stderr for every event.
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"log_file": "/dev/full"})
    done = repo.run("run", *TODAY, process=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("pass     app TASK-1  just verify-ok")
    assert done.stderr.splitlines() == [
        "loop-verify: cannot write the log file /dev/full: No space left on device; the events "
        "of this run may be missing from it"], done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    done = repo.run("history", process=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_unwritable_log_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log folder should be\n")
    data = yaml.safe_load(repo.config_path.read_text())
    data["log_file"] = str(blocker / "loop-jobs.jsonl")
    repo.config_path.write_text(yaml.safe_dump(data))
    for verb in ("run", "list", "history"):
        proc = repo.run(verb)
        assert proc.returncode == 3, (verb, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith("loop-verify: cannot write the log file ")
        assert len(proc.stderr.strip().splitlines()) == 1
    assert repo.subjects() == ["setup"]
