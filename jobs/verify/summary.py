"""What one run came to: its attempts, its exit code, the count of each verdict and the closing
line a terminal shows (`3 passed, 1 failed, 1 skipped in 2m14s`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from jobs.core.errors import EXIT_FAILED, EXIT_OK, EXIT_UNCHECKED
from jobs.core.text import first_line
from jobs.ledger.model import FAILING, UNCHECKED, Attempt, EditState, Verdict

# The log event of each verdict.
EVENTS = {Verdict.PASS: "verify.passed", Verdict.FAIL: "verify.failed",
          Verdict.TIMEOUT: "verify.timeout", Verdict.REFUSED: "verify.refused",
          Verdict.SKIPPED: "repo.skipped", Verdict.LOCKED: "repo.locked",
          Verdict.DRIFT: "verify.drift", Verdict.ERROR: "verify.error",
          Verdict.INTERRUPTED: "verify.interrupted"}

# How the closing line names each verdict, in the order it names them.
SAID = {Verdict.PASS: "passed", Verdict.FAIL: "failed", Verdict.TIMEOUT: "timed out",
        Verdict.DRIFT: "drifted", Verdict.ERROR: "errored", Verdict.SKIPPED: "skipped",
        Verdict.LOCKED: "locked", Verdict.INTERRUPTED: "interrupted",
        Verdict.REFUSED: "refused", "would-run": "would run"}

# Prints one line; the flag says it is a pass that reached its task (`--quiet` leaves those out).
Printer = Callable[[str, bool], None]

if TYPE_CHECKING:
    from jobs.verify.rules.eligibility import Classified


@dataclass
class RunSummary:
    run_id: str
    today: date
    dry_run: bool
    results: list[Attempt] = field(default_factory=list)
    interrupted: bool = False  # told to stop (SIGINT, SIGTERM, SIGHUP) at any point
    # How each repository is named in output: two may share a folder name.
    repo_names: dict[str, str] = field(default_factory=dict)
    # Ledger writes kept in the local spool: recorded on a later run, so this one exits 3.
    spooled: int = 0
    # Set when the ledger was given up on during the run: the rest of it was only reported.
    ledger_lost: str | None = None
    # Tasks with a verify: label the run left alone (waiting, not done): `--verbose` names them.
    passed_over: list[tuple[str, Classified]] = field(default_factory=list)
    seconds: float = 0.0  # how long the run took

    @property
    def exit_code(self) -> int:
        verdicts_seen = {r.verdict for r in self.results}
        if verdicts_seen & FAILING:
            return EXIT_FAILED
        # A task another machine claimed is checked there: not unchecked here (docs/ledger.md).
        unchecked = {r.verdict for r in self.results if r.claimed_by is None} & UNCHECKED
        # A verdict whose commit was refused never reached the task: that too is unchecked.
        if (unchecked or self.interrupted or self.spooled or self.ledger_lost
                or any(r.edit_state == EditState.RESTORED for r in self.results)):
            return EXIT_UNCHECKED
        return EXIT_OK

    def counts(self) -> dict[str, int]:
        """verdict → how many attempts of this run came to it (only those that occurred)."""
        return dict(Counter(str(r.verdict) for r in self.results))


def passed_for_good(result: Attempt) -> bool:
    """A pass whose verdict reached its task: not one whose commit was refused (exit 3)."""
    return result.verdict == Verdict.PASS and result.edit_state != EditState.RESTORED


def closing_line(counts: dict[str, int], seconds: float) -> str:
    """`3 passed, 1 failed, 1 skipped in 2m14s`: every verdict that occurred, in a fixed order."""
    parts = [f"{counts[v]} {SAID[v]}" for v in SAID if counts.get(v)]
    return f"{', '.join(parts) or 'nothing done'} in {elapsed(seconds)}"


def elapsed(seconds: float) -> str:
    """A run's length as a person reads it: 0.4s, 12s, 2m14s, 1h03m."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def unexpected(exc: BaseException) -> str:
    """The reason recorded for an unexpected fault: its type and first line."""
    said = first_line(exc) if str(exc).strip() else ""
    return f"unexpected {type(exc).__name__}" + (f": {said}" if said else "")
