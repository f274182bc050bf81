"""One run per local calendar day at the scheduled wall time, at real DST transitions.

Pure arithmetic with injected instants: no clock, no scheduler thread. The expected instants are
written out by hand from the zones' published rules.
"""

from __future__ import annotations

import pickle
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from scheduler_helpers import first_instant_reading

from jobs.schedule.daily import DailyTrigger, due_run, next_occurrence, occurrence

LONDON = ZoneInfo("Europe/London")
SAO_PAULO = ZoneInfo("America/Sao_Paulo")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("zone", "day", "at", "expected"), [
    # An ordinary day either side.
    (LONDON, date(2026, 3, 28), time(1, 30), utc(2026, 3, 28, 1, 30)),
    (LONDON, date(2026, 3, 30), time(1, 30), utc(2026, 3, 30, 0, 30)),
    # Spring forward, 2026-03-29 01:00 GMT -> 02:00 BST: 01:30 never reads on the clock; the run
    # is at the first instant after, 02:00 BST.
    (LONDON, date(2026, 3, 29), time(1, 30), utc(2026, 3, 29, 1, 0)),
    (LONDON, date(2026, 3, 29), time(1, 0), utc(2026, 3, 29, 1, 0)),
    (LONDON, date(2026, 3, 29), time(2, 0), utc(2026, 3, 29, 1, 0)),
    (LONDON, date(2026, 3, 29), time(0, 59), utc(2026, 3, 29, 0, 59)),
    # Fall back, 2026-10-25 02:00 BST -> 01:00 GMT: 01:30 reads twice; the first one runs.
    (LONDON, date(2026, 10, 25), time(1, 30), utc(2026, 10, 25, 0, 30)),
    (LONDON, date(2026, 10, 25), time(7, 30), utc(2026, 10, 25, 7, 30)),
    # Sao Paulo's last fall back, 2019-02-17 00:00 -02 -> 2019-02-16 23:00 -03: 23:30 on the
    # 16th reads twice.
    (SAO_PAULO, date(2019, 2, 16), time(23, 30), utc(2019, 2, 17, 1, 30)),
    (SAO_PAULO, date(2019, 2, 17), time(23, 30), utc(2019, 2, 18, 2, 30)),
    # ...and a spring forward at midnight, 2018-11-04 00:00 -03 -> 01:00 -02: the day starts at
    # 01:00, so a 00:30 run is at 01:00 -02.
    (SAO_PAULO, date(2018, 11, 4), time(0, 30), utc(2018, 11, 4, 3, 0)),
])
def test_occurrence_at_real_transitions(zone: ZoneInfo, day: date, at: time,
                                        expected: datetime) -> None:
    assert occurrence(day, at, zone) == expected
    assert first_instant_reading(day, at, zone) == expected


def simulate_days(trigger: DailyTrigger, start: datetime, end: datetime) -> list[datetime]:
    """Fire times as APScheduler derives them: each from the previous one."""
    fired: list[datetime] = []
    previous = None
    while True:
        found = trigger.get_next_fire_time(previous, start)
        assert found is not None
        if found > end:
            return fired
        fired.append(found)
        previous = found


@pytest.mark.parametrize(("zone", "start"), [
    (LONDON, utc(2026, 3, 25)), (LONDON, utc(2026, 10, 21)), (SAO_PAULO, utc(2019, 2, 12)),
    (SAO_PAULO, utc(2018, 10, 31)),
])
@pytest.mark.parametrize("at", [time(0, 0), time(0, 30), time(1, 0), time(1, 30), time(2, 0),
                                time(7, 30), time(23, 0), time(23, 30), time(23, 59)])
def test_exactly_one_run_per_local_day_across_a_transition(zone: ZoneInfo, start: datetime,
                                                           at: time) -> None:
    trigger = DailyTrigger(at.hour, at.minute, timezone=zone)
    fired = simulate_days(trigger, start, start + timedelta(days=8))
    days = Counter(f.astimezone(zone).date() for f in fired)
    assert all(count == 1 for count in days.values()), days
    first = min(days)
    # Consecutive days: none skipped.
    assert sorted(days) == [first + timedelta(days=n) for n in range(len(days))]
    assert first - start.astimezone(zone).date() <= timedelta(days=1)
    assert len(days) >= 7
    for moment in fired:
        local = moment.astimezone(zone)
        # At the wall time, or (in a gap) at the first instant after it.
        assert moment == first_instant_reading(local.date(), at, zone)


def test_a_restart_inside_the_repeated_hour_does_not_run_again() -> None:
    trigger = DailyTrigger(1, 30, timezone=LONDON)
    first = utc(2026, 10, 25, 0, 30)  # 01:30 BST
    # Down and back during the second 01:30 (GMT): the day's run has happened.
    assert trigger.get_next_fire_time(first, utc(2026, 10, 25, 1, 45)) == \
        utc(2026, 10, 26, 1, 30)
    assert due_run(utc(2026, 10, 26, 1, 30), trigger, utc(2026, 10, 25, 1, 45)) is None


def test_due_run_coalesces_missed_days_into_the_latest() -> None:
    trigger = DailyTrigger(7, 30, timezone=LONDON)
    now = utc(2026, 3, 30, 9, 0)  # 10:00 BST
    assert due_run(utc(2026, 3, 27, 7, 30), trigger, now) == utc(2026, 3, 30, 6, 30)
    assert due_run(utc(2026, 3, 31, 6, 30), trigger, now) is None
    assert due_run(None, trigger, now) is None


def test_next_occurrence_needs_one_bound() -> None:
    with pytest.raises(ValueError):
        next_occurrence(time(7, 30), LONDON)
    assert next_occurrence(time(7, 30), LONDON, not_before=utc(2026, 3, 29, 6, 30)) == \
        utc(2026, 3, 29, 6, 30)
    assert next_occurrence(time(7, 30), LONDON, after=utc(2026, 3, 29, 6, 30)) == \
        utc(2026, 3, 30, 6, 30)


def test_the_trigger_survives_the_job_store() -> None:
    trigger = DailyTrigger(7, 30, timezone=LONDON)
    restored = pickle.loads(pickle.dumps(trigger))
    assert str(restored) == "daily[07:30:00]" and restored.timezone == LONDON
    now = utc(2026, 3, 28, 12)
    assert restored.get_next_fire_time(None, now) == trigger.get_next_fire_time(None, now)
