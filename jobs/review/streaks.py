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


# One pass or failure of a task, oldest first: (started_at as ISO text of naive UTC, attempt
# id, machine, clone path, task id, label date, verdict), as the ledger's rows are
# (query.HistoryRow).
Row = tuple[str, int, str | None, str, str | None, str | None, str]


def standings(rows: Iterable[Row], identity: Callable[[str | None, str], str],
              zone: tzinfo) -> dict[int, Standing]:
    """Each failure's standing, by attempt id. `rows` are sorted by (started_at, id); a clone's
    rows count for its repository's `identity`."""
    streaks: dict[Key, tuple[datetime, set[date]]] = {}
    known: dict[tuple[str | None, str], str] = {}
    out: dict[int, Standing] = {}
    for started, row_id, machine, repo, task, label, verdict in rows:
        found = known.get((machine, repo))
        if found is None:
            found = known[(machine, repo)] = identity(machine, repo)
        key = (found, task, label)
        if verdict == "pass":
            streaks.pop(key, None)
            continue
        if verdict not in FAILING:
            continue
        at = datetime.fromisoformat(started).replace(tzinfo=UTC)
        day = at.astimezone(zone).date()
        streak = streaks.get(key)
        if streak is None:
            streaks[key] = (at, {day})
            out[row_id] = Standing(True, at, 1)
            continue
        streak[1].add(day)
        out[row_id] = Standing(False, streak[0], len(streak[1]))
    return out
