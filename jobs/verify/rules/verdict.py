"""The verdicts of a verification attempt, and which of them fail a run or leave it unchecked."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """What one attempt came to. A StrEnum: stored in the ledger and printed as its value."""

    PASS = "pass"                # the recipe exited 0: the verify label is removed
    FAIL = "fail"                # non-zero exit, no justfile, recipe missing: the task reopens
    TIMEOUT = "timeout"          # killed at the time limit: reopens like a failure
    REFUSED = "refused"          # the task's verify label or verify-cmd is not acceptable
    SKIPPED = "skipped"          # the repository (or the rest of it) could not be worked on
    LOCKED = "locked"            # another loop-verify holds the repository
    DRIFT = "drift"              # the recipe changed the work tree
    ERROR = "error"              # an infrastructure fault: the task is left as it was
    INTERRUPTED = "interrupted"  # a stop signal came before the task was verified


# Exit 1: a verification failed.
FAILING = frozenset({Verdict.FAIL, Verdict.TIMEOUT, Verdict.DRIFT})
# Exit 3 (when nothing failed): something could not be checked.
UNCHECKED = frozenset({Verdict.SKIPPED, Verdict.LOCKED, Verdict.ERROR, Verdict.INTERRUPTED})
# A verdict that edits the task.
WRITTEN = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.TIMEOUT})
