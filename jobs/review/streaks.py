"""New, or still failing since when: the SPEC's rule as a function of plain data.

A failure is "still failing" when the same task of the same repository (its identity, whichever
clone ran it) with the same `verify:` label failed before with no pass in between; otherwise it is
new. The look-back covers the whole ledger, not the window; a pass in between makes the next
failure new. Attempts that are neither a pass nor a failure (skipped, error, ...) neither break
nor extend a streak.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo

FAILING = frozenset({"fail", "timeout", "drift"})

# (identity, task id, label date): a due verification across clones.
Key = tuple[str, str | None, str | None]


@dataclass(frozen=True)
class Standing:
    """Where one failure stands in its task's history."""

    new: bool         # no earlier failure in the streak
    since: datetime   # the streak's first failure (this one's own time when new)
    mornings: int     # days (in the configured zone) with a failure in the streak, this one's too

    def words(self, zone: tzinfo) -> str:
        if self.new:
            return "new"
        day = self.since.astimezone(zone).date().isoformat()
        return f"still failing since {day} ({self.mornings} morning{'s' * (self.mornings != 1)})"


@dataclass(frozen=True)
class Event:
    """One pass or failure of a task, oldest first."""

    started_at: datetime  # aware
    id: int
    key: Key
    verdict: str


def standings(events: Iterable[Event], zone: tzinfo) -> dict[int, Standing]:
    """Each failure's standing, by attempt id. `events` are sorted by (started_at, id)."""
    streaks: dict[Key, tuple[datetime, set[date]]] = {}
    out: dict[int, Standing] = {}
    for event in events:
        if event.verdict == "pass":
            streaks.pop(event.key, None)
            continue
        if event.verdict not in FAILING:
            continue
        day = event.started_at.astimezone(zone).date()
        streak = streaks.get(event.key)
        if streak is None:
            streaks[event.key] = (event.started_at, {day})
            out[event.id] = Standing(True, event.started_at, 1)
            continue
        streak[1].add(day)
        out[event.id] = Standing(False, streak[0], len(streak[1]))
    return out


def events_from(rows: Iterable[tuple[datetime, int, str | None, str, str | None, str | None,
                                     str]],
                identity: Callable[[str | None, str], str]) -> list[Event]:
    """The ledger's history rows (naive UTC, see query.HistoryRow) as events."""
    return [Event(started.replace(tzinfo=UTC), row_id, (identity(machine, repo), task, label),
                  verdict)
            for started, row_id, machine, repo, task, label, verdict in rows]
