"""Helpers for the scheduler tests: a job that records its runs, configs and a job-store seeder."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, tzinfo
from datetime import time as wall_time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger

from jobs.config.load import Config, load_config
from jobs.schedule.jobstore import JOB_ID, JobFunc, build_scheduler, daily_trigger, ensure_job


def record_run(config_path: str | None = None) -> int:
    """A real scheduled job: appends the moment it ran to `runs.txt` beside the config file."""
    assert config_path is not None
    with open(Path(config_path).parent / "runs.txt", "a", encoding="utf-8") as fh:
        fh.write(datetime.now(UTC).isoformat() + "\n")
    return 0


def runs(config: Config) -> list[datetime]:
    assert config.source is not None
    path = config.source.parent / "runs.txt"
    if not path.exists():
        return []
    return [datetime.fromisoformat(line) for line in path.read_text().splitlines() if line]


def write_config(directory: Path, **keys: Any) -> Config:
    """A config file in `directory` (state in directory/state) loaded the way `serve` loads it."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {"state_dir": str(directory / "state"), "log_file": str(directory / "log.jsonl"),
            **keys}
    for key in ("state_dir", "log_file", "ledger"):
        if isinstance(data.get(key), str):
            data[key] = data[key].replace("$", "$$")  # a literal `$` (docs/configuration.md)
    path = directory / "config.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return load_config(path)


def config_file(base: Path, state_dir: Path) -> Path:
    """A configuration file in `base` naming `state_dir`, written but not loaded: a test may give
    a state directory `serve` or `install` cannot use."""
    path = base / "config.yaml"
    path.write_text(json.dumps({"state_dir": str(state_dir),
                                "log_file": str(base / "log" / "loop-jobs.jsonl")}))
    return path


def seed_store(config: Config, next_run_time: datetime, job: JobFunc = record_run,
               trigger: BaseTrigger | None = None) -> None:
    """Put the daily job in the persistent store with `next_run_time`, as a process that went
    down before that time would have left it."""
    scheduler = build_scheduler(config)
    scheduler.start(paused=True)
    try:
        assert config.source is not None
        ensure_job(scheduler, trigger or daily_trigger(config), job,
                   {"config_path": str(config.source.resolve())}, state_dir=config.state_dir)
        scheduler.modify_job(JOB_ID, next_run_time=next_run_time)
    finally:
        scheduler.shutdown(wait=True)


def log_events(log_file: Path, event: str | None = None) -> list[dict[str, Any]]:
    if not log_file.exists():
        return []
    out = []
    for line in log_file.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if event is None or entry.get("event") == event:
            out.append(entry)
    return out


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class InProcessServe:
    """`serve` in a thread with its own stop event (signal handlers belong to the main thread)."""

    def __init__(self, config: Config, **kwargs: Any) -> None:
        from jobs.schedule.serve import serve

        self.stop = threading.Event()
        self.ready = threading.Event()
        self.next_run: datetime | None = None
        self.result: list[int] = []

        def on_ready(next_run: datetime | None) -> None:
            self.next_run = next_run
            self.ready.set()

        def target() -> None:
            self.result.append(serve(config, stop=self.stop, install_signal_handlers=False,
                                     on_ready=on_ready, **kwargs))

        self.thread = threading.Thread(target=target, daemon=True)

    def __enter__(self) -> InProcessServe:
        self.thread.start()
        assert self.ready.wait(10), "serve did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive(), "serve did not stop"


def zone_config(directory: Path, zone: str, moment: datetime) -> Config:
    """A config whose daily time is `moment`'s wall time (to the minute) in `zone`, so a test
    places the schedule relative to now instead of depending on the time of day."""
    local = moment.astimezone(ZoneInfo(zone))
    return write_config(directory / "cfg dir", schedule=f"{local:%H:%M}", timezone=zone)


def first_instant_reading(day: date, at: wall_time, zone: tzinfo) -> datetime:
    """The first instant whose wall clock in `zone` reads `at` or later on `day`, found by
    walking the clock (independent of the trigger's arithmetic, for checking it)."""
    target = datetime.combine(day, at)
    moment = datetime.combine(day - timedelta(days=1), at, tzinfo=UTC)
    step = timedelta(minutes=15)
    while moment.astimezone(zone).replace(tzinfo=None) < target:
        moment += step
    while step > timedelta(seconds=1):
        step /= 2
        if (moment - step).astimezone(zone).replace(tzinfo=None) >= target:
            moment -= step
    return moment.replace(microsecond=0)
