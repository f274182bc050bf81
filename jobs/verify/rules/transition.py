"""What a verdict writes into its task: the edit, the exit summary and the commit message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from jobs.backlog import edit as backlog_edit
from jobs.core.durations import format_duration
from jobs.core.tail import TAIL_BYTES, TAIL_LINES
from jobs.ledger.model import Verdict

PASS, FAIL, TIMEOUT = Verdict.PASS, Verdict.FAIL, Verdict.TIMEOUT
FAILED_LABEL = "verify-failed"

# C0 and C1 controls (U+009B is a terminal's CSI) and the bidirectional embeddings, overrides,
# isolates and marks (one reverses the text after it): none of a recipe's output that acts
# rather than shows reaches the task file.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069]")


@dataclass(frozen=True)
class Outcome:
    """How a recipe ended, as the summary tells it."""

    verdict: str                 # pass, fail or timeout
    recipe: str
    exit_code: int | None = None
    duration: float = 0.0
    timeout: float = 0.0
    not_run: str | None = None   # why it was never started (no justfile, recipe missing, ...)
    tail: str = ""
    output_path: str | None = None


def commit_message(task_id: str, outcome: Outcome) -> str:
    word = "passed" if outcome.verdict == PASS else "failed"
    return f"loop-verify: {task_id} {word} (just {outcome.recipe})"


def _safe_line(line: str) -> str:
    # Marker text and verify-cmd look-alikes are defused by backlog_edit.append_notes itself.
    return _CONTROL.sub("\ufffd", line.rstrip("\r"))


def tail_lines(tail: str) -> list[str]:
    """The last lines of output within the summary's limits, made safe to paste into a task."""
    lines = tail.splitlines()[-TAIL_LINES:]
    while lines and len("\n".join(lines).encode()) > TAIL_BYTES:
        lines = lines[1:]
    if not lines and tail:
        lines = [tail.encode()[-TAIL_BYTES:].decode("utf-8", "replace")]
    return [_safe_line(line) for line in lines]


def failure_summary(outcome: Outcome, at: datetime) -> str:
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = f"`just {outcome.recipe}`"
    limit = format_duration(outcome.timeout)
    detail: list[str] = []
    if outcome.not_run is not None:
        # `just`'s own diagnostics span lines: only the first belongs on the summary's first line.
        first, *detail = outcome.not_run.splitlines() or [""]
        head = f"verify-failed {stamp}: {command} not run: {_safe_line(first)}"
    elif outcome.verdict == TIMEOUT:
        head = f"verify-failed {stamp}: {command} timed out after {limit}"
    else:
        head = (f"verify-failed {stamp}: {command} exited {outcome.exit_code} "
                f"after {outcome.duration:.1f}s (timeout {limit})")
    parts = [head]
    parts.extend(f"    {_safe_line(line)}" for line in detail[:TAIL_LINES] if line.strip())
    if outcome.not_run is None:
        lines = tail_lines(outcome.tail)
        parts.append("last lines of output:")
        parts.extend(f"    {line}" for line in lines or ["(none)"])
    if outcome.output_path:
        parts.append(f"full output: {outcome.output_path}")
    return "\n".join(parts)


def written_note(outcome: Outcome, at: datetime) -> str | None:
    """The text a verdict appends to the task's notes (None for a pass): the summary as the
    notes keep it, normalised and defanged, so the ledger can hold the task's own words."""
    if outcome.verdict == PASS:
        return None
    return backlog_edit.normalize_note(failure_summary(outcome, at))


def apply(data: bytes, outcome: Outcome, label: str, reopen_status: str,
          at: datetime) -> bytes:
    """The task file's new bytes for this verdict; only what the verdict must change."""
    if outcome.verdict == PASS:
        data = backlog_edit.remove_label(data, label)
        # The labels say what is true now: an earlier failure no longer is.
        data = backlog_edit.remove_label(data, FAILED_LABEL)
    else:
        data = backlog_edit.set_status(data, reopen_status)
        data = backlog_edit.add_label(data, FAILED_LABEL)
        data = backlog_edit.append_notes(data, written_note(outcome, at) or "")
    return backlog_edit.set_updated_date(data, at)
