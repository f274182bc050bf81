"""The daily job's persistent APScheduler store: the zone and trigger it runs on, the scheduler
built on the store, and the job kept in it without ever losing a missed run (see
`jobs.schedule.serve` for why each choice is made)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_STOPPED
from apscheduler.triggers.base import BaseTrigger

from jobs.config.load import Config
from jobs.core.logs import get_logger
from jobs.schedule.daily import DailyTrigger, occurrence

JOB_ID = "loop-verify-daily"
JOB_NAME = "loop-verify daily verification"
MISFIRE_GRACE_SECONDS = 12 * 3600
SCHEDULER_DB = "scheduler.db"

JobFunc = Callable[..., Any]

_log = get_logger("loop-jobs.scheduler")


def schedule_zone(config: Config) -> tzinfo:
    """The zone the cron trigger fires in.

    Without `timezone:` the configuration's zone is a fixed UTC offset taken at load time; a daemon
    that lives across a DST change needs the machine's real zone instead.
    """
    if config.timezone_name is not None:
        return config.timezone
    zone = machine_zone(config.timezone)
    if zone is config.timezone:
        _log.warning("scheduler.local_zone_unnamed", fallback=str(zone),
                     hint="set `timezone:` in the configuration to follow daylight saving time")
    return zone


def machine_zone(fallback: tzinfo) -> tzinfo:
    """The machine's named zone (DST-aware), or `fallback` when $TZ names none.

    tzlocal refuses a POSIX $TZ such as `UTC0` or an unknown name, and reads `TZ=:/etc/localtime`
    into a zone that cannot be pickled into the job store; a zone rebuilt from its key can.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from tzlocal import get_localzone

    try:
        key = getattr(get_localzone(), "key", None)
        if key:
            return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    return fallback


def daily_trigger(config: Config) -> DailyTrigger:
    hour, minute = config.schedule
    return DailyTrigger(hour, minute, timezone=schedule_zone(config))


def scheduler_db_path(state_dir: Path) -> Path:
    return state_dir / SCHEDULER_DB


def _engine(state_dir: Path) -> sa.Engine:
    # URL.create keeps a state_dir with spaces, '%' or '?' in it intact.
    return sa.create_engine(sa.engine.URL.create(
        "sqlite", database=str(scheduler_db_path(state_dir))))


class DailyScheduler(BackgroundScheduler):  # type: ignore[misc]
    """A BackgroundScheduler that never processes jobs after it has been shut down."""

    def _process_jobs(self) -> float | None:
        # Checked under the job store lock that shutdown() also takes, so the two cannot interleave.
        with self._jobstores_lock:
            if self.state == STATE_STOPPED:
                return None
            result: float | None = super()._process_jobs()
            return result


def build_scheduler(config: Config) -> DailyScheduler:
    """A scheduler on the persistent job store in `config.state_dir`; not started."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return DailyScheduler(
        jobstores={"default": SQLAlchemyJobStore(engine=_engine(config.state_dir))},
        executors={"default": ThreadPoolExecutor(max_workers=1)},
        job_defaults={"misfire_grace_time": MISFIRE_GRACE_SECONDS, "coalesce": True,
                      "max_instances": 1},
        timezone=schedule_zone(config),
    )


def _trigger_key(trigger: Any) -> tuple[str, str]:
    return str(trigger), str(getattr(trigger, "timezone", ""))


def iso_utc(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def ensure_job(scheduler: DailyScheduler, trigger: BaseTrigger, job: JobFunc,
               kwargs: dict[str, Any], *, state_dir: Path,
               now: datetime | None = None) -> datetime | None:
    """Make the stored daily job match the configuration without losing a missed run.

    Call on a scheduler started paused. Returns the job's next run time (which is in the past when
    a missed run is waiting).
    """
    now = now or datetime.now(UTC)
    options: dict[str, Any] = {"misfire_grace_time": MISFIRE_GRACE_SECONDS, "coalesce": True,
                               "max_instances": 1, "name": JOB_NAME}
    overdue_kept: datetime | None = None
    try:
        stored = scheduler.get_job(JOB_ID)
    except Exception as exc:
        # A stored job whose function no longer imports (renamed in an upgrade) or whose pickle
        # is damaged would make every start fail; replace it, keeping an overdue run time.
        recorded = stored_next_run(state_dir)
        overdue_kept = recorded if recorded is not None and recorded <= now else None
        scheduler.remove_job(JOB_ID)
        _log.warning("scheduler.job_replaced", job_id=JOB_ID, error=repr(exc),
                     kept_overdue_run=iso_utc(overdue_kept))
        stored = None
    if stored is None:
        if overdue_kept is not None:
            options["next_run_time"] = overdue_kept
        added = scheduler.add_job(job, trigger, id=JOB_ID, kwargs=kwargs, **options)
        _log.info("scheduler.job_added", job_id=JOB_ID, trigger=str(trigger),
                  timezone=str(trigger.timezone))
        # Before start() the job is pending and has no next run time yet; compute it as APScheduler
        # will.
        when: datetime | None = getattr(added, "next_run_time", None)
        return when or trigger.get_next_fire_time(None, now)
    changes: dict[str, Any] = {"func": job, "kwargs": kwargs, **options}
    next_run: datetime | None = stored.next_run_time
    if _trigger_key(stored.trigger) != _trigger_key(trigger) or next_run is None:
        overdue = next_run is not None and next_run <= now
        new_next = next_run if overdue else _same_day(stored.trigger, trigger, next_run, now)
        changes.update(trigger=trigger, next_run_time=new_next)
        _log.info("scheduler.rescheduled", job_id=JOB_ID,
                  old_trigger=str(stored.trigger), old_timezone=str(stored.trigger.timezone),
                  new_trigger=str(trigger), new_timezone=str(trigger.timezone),
                  next_run_time=iso_utc(new_next), kept_overdue_run=overdue)
        next_run = new_next
    scheduler.modify_job(JOB_ID, **changes)
    return next_run




def _same_day(old: BaseTrigger, new: BaseTrigger, pending: datetime | None,
              now: datetime) -> datetime | None:
    """The new trigger's run for the local day the pending run belonged to: recomputed from now,
    a time moved later after today's run would run today again, and one moved earlier, to a time
    already passed, before today's run would leave today without one. When that time has passed
    it is overdue, and caught up like any missed run."""
    if pending is None or not (isinstance(old, DailyTrigger) and isinstance(new, DailyTrigger)):
        recomputed: datetime | None = new.get_next_fire_time(None, now)
        return recomputed
    day = pending.astimezone(old.timezone).date()
    return occurrence(day, new.at, new.timezone)


def stored_next_run(state_dir: Path) -> datetime | None:
    """The next run time recorded in the job store, read without starting a scheduler."""
    db = scheduler_db_path(state_dir)
    if not db.exists():
        return None
    engine = _engine(state_dir)
    try:
        with engine.connect() as conn:
            row = conn.execute(sa.text(
                "SELECT next_run_time FROM apscheduler_jobs WHERE id = :id"), {"id": JOB_ID}
            ).first()
    except sa.exc.SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    if row is None or row[0] is None:
        return None
    return datetime.fromtimestamp(float(row[0]), UTC)
