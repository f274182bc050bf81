"""Once per local calendar day at a wall-clock time, across DST changes.

APScheduler's `CronTrigger` matches wall-clock fields, so a daily time inside a fall-back hour
matches twice and one inside a spring-forward gap is skipped or shifted. The rule here is the
SPEC's: one run per local calendar day, at the scheduled wall time, or at the first instant after
it when that wall time does not exist that day. The arithmetic is pure (an instant in, an instant
out) so it is tested at real transitions without a clock.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from apscheduler.triggers.base import BaseTrigger


def _exists(wall: datetime, zone: tzinfo) -> bool:
    instant = wall.replace(tzinfo=zone).astimezone(UTC)
    return instant.astimezone(zone).replace(tzinfo=None) == wall


def occurrence(day: date, at: time, zone: tzinfo) -> datetime:
    """The instant (UTC) of `day`'s run: the first instant whose local wall time is `at` on
    `day`, or, in a gap, the first instant after the gap (where the clock passes `at`)."""
    wall = datetime.combine(day, at)
    if _exists(wall, zone):
        # fold=0 is the earlier of two instants in a fall-back hour: the day's one run.
        return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    # In a gap the two offsets bracket the jump: at the instant read with the post-gap offset
    # the clock still reads earlier than `at`; at the one read with the pre-gap offset, later.
    # Search the whole seconds between them for the first that reads `at` or later.
    low = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    high = int(wall.replace(tzinfo=zone, fold=0).timestamp())
    if low > high:
        low, high = high, low
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).replace(tzinfo=None) >= wall:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


def next_occurrence(at: time, zone: tzinfo, *, after: datetime | None = None,
                    not_before: datetime | None = None) -> datetime:
    """The first daily occurrence strictly after `after`, or at or after `not_before`."""
    if (after is None) == (not_before is None):
        raise ValueError("give exactly one of after= and not_before=")
    since = after if after is not None else not_before
    assert since is not None
    day = since.astimezone(zone).date() - timedelta(days=1)
    while True:
        candidate = occurrence(day, at, zone)
        if (after is not None and candidate > after) or \
                (not_before is not None and candidate >= not_before):
            return candidate
        day += timedelta(days=1)


class DailyTrigger(BaseTrigger):  # type: ignore[misc]
    """An APScheduler trigger firing once per local calendar day (see the module's rule).

    Stored pickled in the job store, so it keeps only plain, picklable state.
    """

    __slots__ = ("at", "timezone")

    def __init__(self, hour: int, minute: int, second: int = 0, *, timezone: tzinfo) -> None:
        self.at = time(hour, minute, second)
        self.timezone = timezone

    def get_next_fire_time(self, previous_fire_time: datetime | None,
                           now: datetime) -> datetime | None:
        if previous_fire_time is not None:
            found = next_occurrence(self.at, self.timezone, after=previous_fire_time)
        else:
            found = next_occurrence(self.at, self.timezone, not_before=now)
        # In UTC: an aware datetime inside a repeated hour never compares equal to one in
        # another zone (PEP 495), and the job store keeps UTC timestamps anyway.
        return found

    def __getstate__(self) -> dict[str, Any]:
        return {"version": 1, "at": self.at, "timezone": self.timezone}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.at = state["at"]
        self.timezone = state["timezone"]

    def __str__(self) -> str:
        return f"daily[{self.at.isoformat()}]"

    def __repr__(self) -> str:
        return f"<DailyTrigger at={self.at.isoformat()} timezone={self.timezone}>"


def due_run(next_run: datetime | None, trigger: BaseTrigger, now: datetime) -> datetime | None:
    """The occurrence a scheduler started at `now` acts on, or None when nothing is overdue.

    With `coalesce`, APScheduler folds every occurrence from `next_run` up to `now` into the
    latest one, and judges only that one against the misfire grace: a run missed two days ago is
    caught up by yesterday's or today's occurrence, not dropped.
    """
    if next_run is None or next_run > now:
        return None
    latest = next_run
    while True:
        following: datetime | None = trigger.get_next_fire_time(latest, now)
        if following is None or following > now:
            return latest
        latest = following
