"""The APScheduler daemon: runs on time, catches up a missed run exactly once, skips a stale one."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from scheduler_helpers import (
    InProcessServe,
    first_instant_reading,
    log_events,
    record_run,
    runs,
    seed_store,
    wait_for,
    write_config,
    zone_config,
)

from jobs.config.load import Config
from jobs.core.logs import configure_logging
from jobs.schedule.daily import DailyTrigger
from jobs.schedule.jobstore import (
    JOB_ID,
    MISFIRE_GRACE_SECONDS,
    build_scheduler,
    daily_trigger,
    stored_next_run,
)
from jobs.schedule.serve import ServeBusy, serve, serve_lock


@pytest.fixture
def config(tmp_path: Path) -> Config:
    cfg = write_config(tmp_path / "cfg dir", schedule="07:30", timezone="Europe/London")
    configure_logging(cfg.log_file, console=False)
    yield cfg
    logging.getLogger().handlers.clear()


@pytest.fixture
def at(tmp_path: Path) -> Iterator[Callable[[datetime], Config]]:
    """A config (logging to its own file) whose daily time is a given moment's wall time in
    Europe/London: tests place the schedule relative to now, whatever the time of day."""
    def make(moment: datetime) -> Config:
        cfg = zone_config(tmp_path, "Europe/London", moment)
        configure_logging(cfg.log_file, console=False)
        return cfg
    yield make
    logging.getLogger().handlers.clear()


def test_job_fires_at_its_scheduled_time(config: Config) -> None:
    fire_at = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0) \
        + timedelta(seconds=1)
    local = fire_at.astimezone(config.timezone)
    trigger = DailyTrigger(local.hour, local.minute, local.second, timezone=config.timezone)
    with InProcessServe(config, job=record_run, trigger=trigger) as daemon:
        assert daemon.next_run == fire_at
        assert runs(config) == []
        assert wait_for(lambda: len(runs(config)) == 1, timeout=8)
        ran = runs(config)[0]
        assert fire_at <= ran < fire_at + timedelta(seconds=2)
        assert wait_for(lambda: len(log_events(config.log_file, "scheduler.run_finished")) == 1)
    nexts = log_events(config.log_file, "scheduler.next_run")
    # Logged at start-up and again after the run: then the same wall time on the next local day
    # (not 24 hours later: the eve of a DST change has a 23- or 25-hour day).
    tomorrow = first_instant_reading(local.date() + timedelta(days=1), local.time(),
                                     config.timezone)
    assert [datetime.fromisoformat(e["next_run_time"]) for e in nexts] == [fire_at, tomorrow]
    assert daemon.result == [0]


def test_missed_run_is_caught_up_exactly_once(at: Callable[[datetime], Config]) -> None:
    now = datetime.now(UTC)
    # The daily time lies six hours ahead, so no occurrence falls inside the test.
    config = at(now + timedelta(hours=6))
    missed = now - timedelta(hours=3)
    seed_store(config, missed)
    # Starting and stopping a paused scheduler on the store must not consume the missed run.
    assert stored_next_run(config.state_dir) == missed.replace(microsecond=missed.microsecond)
    assert runs(config) == []

    with InProcessServe(config, job=record_run) as daemon:
        assert daemon.next_run == missed
        assert wait_for(lambda: len(runs(config)) == 1, timeout=5)
        assert wait_for(lambda: len(log_events(config.log_file, "scheduler.run_finished")) == 1)
    tomorrow = daily_trigger(config).get_next_fire_time(None, now)
    assert tomorrow is not None and tomorrow > now + timedelta(hours=5)
    assert stored_next_run(config.state_dir) == tomorrow
    catch_up = log_events(config.log_file, "scheduler.catch_up")
    assert len(catch_up) == 1 and catch_up[0]["will_run"] is True

    # A restart after the catch-up finds nothing overdue: not twice.
    with InProcessServe(config, job=record_run) as daemon:
        assert daemon.next_run == tomorrow
    assert len(runs(config)) == 1
    assert log_events(config.log_file, "scheduler.missed") == []


def test_run_more_than_12_hours_late_is_skipped_and_logged(
        at: Callable[[datetime], Config]) -> None:
    now = datetime.now(UTC)
    # The daily time was 13 hours ago, so the next occurrence is 10 to 12 hours ahead: the
    # missed run is the only one due and it is beyond the grace.
    missed_at = now - timedelta(seconds=MISFIRE_GRACE_SECONDS + 3600)
    config = at(missed_at)
    trigger = daily_trigger(config)
    missed = trigger.get_next_fire_time(None, missed_at - timedelta(minutes=2))
    assert missed is not None and now - missed > timedelta(seconds=MISFIRE_GRACE_SECONDS)
    seed_store(config, missed)
    with InProcessServe(config, job=record_run):
        assert wait_for(lambda: bool(log_events(config.log_file, "scheduler.missed")), timeout=5)
    assert runs(config) == []
    [entry] = log_events(config.log_file, "scheduler.missed")
    assert datetime.fromisoformat(entry["scheduled_run_time"]) == missed
    assert entry["late_by_seconds"] > MISFIRE_GRACE_SECONDS
    [catch_up] = log_events(config.log_file, "scheduler.catch_up")
    assert catch_up["will_run"] is False
    following = trigger.get_next_fire_time(missed, now)
    assert following is not None and following > now
    assert stored_next_run(config.state_dir) == following


def test_a_later_occurrence_within_the_grace_runs_once(at: Callable[[datetime], Config]) -> None:
    now = datetime.now(UTC)
    # Down since yesterday's run: today's occurrence (an hour ago) is within the grace, so it
    # runs once, for both days (coalesced), and the start-up log says which one runs.
    config = at(now - timedelta(hours=1))
    trigger = daily_trigger(config)
    today = trigger.get_next_fire_time(None, now - timedelta(hours=2))
    assert today is not None and today <= now
    yesterday = first_instant_reading(
        today.astimezone(config.timezone).date() - timedelta(days=1),
        today.astimezone(config.timezone).time(), config.timezone)
    seed_store(config, yesterday)
    with InProcessServe(config, job=record_run) as daemon:
        assert daemon.next_run == yesterday
        assert wait_for(lambda: len(runs(config)) == 1, timeout=5)
        assert wait_for(lambda: bool(log_events(config.log_file, "scheduler.run_finished")))
    [catch_up] = log_events(config.log_file, "scheduler.catch_up")
    assert catch_up["will_run"] is True
    assert datetime.fromisoformat(catch_up["scheduled_run_time"]) == today
    assert datetime.fromisoformat(catch_up["first_missed_run_time"]) == yesterday
    assert log_events(config.log_file, "scheduler.missed") == []
    assert stored_next_run(config.state_dir) == trigger.get_next_fire_time(today, now)
    assert len(runs(config)) == 1


def test_changed_schedule_reschedules_and_is_logged(config: Config, tmp_path: Path) -> None:
    now = datetime.now(UTC)
    pending = daily_trigger(config).get_next_fire_time(None, now)
    seed_store(config, pending)
    new_york = ZoneInfo("America/New_York")
    ahead = (now + timedelta(hours=6)).astimezone(new_york)
    changed = write_config(tmp_path / "cfg dir", schedule=f"{ahead:%H:%M}",
                           timezone="America/New_York")
    with InProcessServe(changed, job=record_run) as daemon:
        # The pending run's local day, at the new time in the new zone.
        expected = first_instant_reading(pending.astimezone(config.timezone).date(),
                                         ahead.time().replace(second=0, microsecond=0), new_york)
        assert daemon.next_run == expected
    [entry] = log_events(config.log_file, "scheduler.rescheduled")
    assert entry["new_trigger"] == f"daily[{ahead:%H:%M}:00]"
    assert entry["new_timezone"] == "America/New_York"
    assert entry["old_timezone"] == "Europe/London"
    assert stored_next_run(config.state_dir) == expected
    assert runs(changed) == []


def test_changed_schedule_keeps_an_overdue_run(config: Config, tmp_path: Path) -> None:
    missed = datetime.now(UTC) - timedelta(hours=1)
    seed_store(config, missed)
    changed = write_config(tmp_path / "cfg dir", schedule="09:15", timezone="Europe/London")
    with InProcessServe(changed, job=record_run) as daemon:
        assert daemon.next_run == missed
        assert wait_for(lambda: len(runs(changed)) == 1, timeout=5)
    [entry] = log_events(config.log_file, "scheduler.rescheduled")
    assert entry["kept_overdue_run"] is True


@pytest.mark.parametrize("moved", ["later", "earlier"])
def test_a_changed_schedule_keeps_one_run_per_local_day(
        tmp_path: Path, at: Callable[[datetime], Config], moved: str) -> None:
    # The owner edits `schedule` and restarts serve. Moved later after today's run, today must
    # not run twice; moved earlier, to a time already passed, before today's run, today must not
    # go without one. The pending run keeps its local day and takes the new time on that day.
    now = datetime.now(UTC)
    hour = timedelta(hours=1)
    old = at(now - hour if moved == "later" else now + hour)
    pending = daily_trigger(old).get_next_fire_time(None, now)
    assert pending is not None
    seed_store(old, pending)
    new_time = (now + hour if moved == "later" else now - hour).astimezone(old.timezone)
    changed = write_config(tmp_path / "cfg dir", schedule=f"{new_time:%H:%M}",
                           timezone="Europe/London")
    day = pending.astimezone(old.timezone).date()
    expected = first_instant_reading(day, new_time.time().replace(second=0, microsecond=0),
                                     old.timezone)
    with InProcessServe(changed, job=record_run) as daemon:
        assert daemon.next_run == expected
        if expected <= now:
            assert wait_for(lambda: len(runs(changed)) == 1, timeout=5)
    assert len(runs(changed)) == (1 if expected <= now else 0)


def test_second_serve_on_the_same_state_dir_is_refused(config: Config) -> None:
    with serve_lock(config.state_dir):
        with pytest.raises(ServeBusy) as info:
            serve(config, job=record_run, install_signal_handlers=False)
    assert info.value.exit_code == 3
    assert "already running" in info.value.message and str(config.state_dir) in info.value.message
    # Nothing was scheduled by the refused process.
    assert stored_next_run(config.state_dir) is None


def test_stopping_a_paused_scheduler_does_not_touch_the_store(config: Config) -> None:
    missed = datetime.now(UTC) - timedelta(hours=2)
    seed_store(config, missed)
    scheduler = build_scheduler(config)
    scheduler.start(paused=True)
    assert scheduler.get_job(JOB_ID).next_run_time == missed
    scheduler.shutdown(wait=True)
    assert stored_next_run(config.state_dir) == missed
    assert runs(config) == []


def test_a_stored_job_that_no_longer_imports_is_replaced_keeping_its_missed_run(
        config: Config) -> None:
    missed = datetime.now(UTC) - timedelta(hours=2)
    seed_store(config, missed)
    # As after an upgrade that renamed the job function: the pickled reference is dangling.
    engine = sa.create_engine(sa.engine.URL.create(
        "sqlite", database=str(config.state_dir / "scheduler.db")))
    with engine.begin() as conn:
        state = conn.execute(sa.text("SELECT job_state FROM apscheduler_jobs")).scalar_one()
        assert b"record_run" in state
        conn.execute(sa.text("UPDATE apscheduler_jobs SET job_state = :s"),
                     {"s": state.replace(b"record_run", b"vanish_run")})
    engine.dispose()
    with InProcessServe(config, job=record_run) as daemon:
        assert daemon.next_run == missed
        assert wait_for(lambda: len(runs(config)) == 1, timeout=5)
    [entry] = log_events(config.log_file, "scheduler.job_replaced")
    assert "vanish_run" in entry["error"]
