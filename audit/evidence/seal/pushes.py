"""The push log, sealed: each entry goes into the ledger (`audit_pushes`, insert only) before it is
appended to the file, and closeout reads both sides back for the cross-check
(`audit.judge.seal.cross_check`).

When the ledger cannot be reached the line is still appended, marked `"sealed": false`: the push
is not held up, and what only that line covers is judged UNVERIFIED.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from audit.evidence.pushlog import append_lines, read_push_log_lines, render_line
from audit.evidence.seal.arm import armed_in
from audit.evidence.seal.ledger import AuditLedger, SealError, open_ledger, run_dir_key
from audit.model import LogLine, PushEntry, SealedPush
from jobs.core.errors import LoopError


def record_pushes(run_dir: Path, entries: list[dict[str, str]], config_arg: str | None,
                  warn: Callable[[str], None]) -> bool:
    """Seal then append `entries`; True when they were sealed. A ledger that cannot be reached
    (or a configuration that cannot be read) is said through `warn`, and the lines are appended
    marked unsealed."""
    lines = [render_line(dict(e)) for e in entries]
    if not lines:
        return True
    try:
        with open_ledger(config_arg) as ledger:
            seal_lines(ledger, run_dir, lines)
            armed = armed_in(run_dir)
            if armed is not None and armed != ledger.shown:
                warn(f"{run_dir} was armed in {armed} (audit-arm.json), but this push is sealed "
                     f"in {ledger.shown}: closeout with the configuration begin used will not "
                     "find it sealed (give the same --config)")
    except LoopError as exc:
        warn(f"could not seal this push in the ledger ({exc}); it is logged unsealed, and what "
             "only its line covers will be judged UNVERIFIED")
        append_lines(run_dir, [render_line({**e, "sealed": False}) for e in entries])
        return False
    append_lines(run_dir, lines)
    return True


def seal_lines(ledger: AuditLedger, run_dir: Path, lines: list[str]) -> None:
    from jobs.ledger.seals import insert_pushes

    key = run_dir_key(run_dir)
    now = datetime.now(UTC)
    ledger.write("seal the push", lambda conn: insert_pushes(conn, key, lines, now))


def sealed_pushes(ledger: AuditLedger, run_dir: Path) -> tuple[SealedPush, ...]:
    from jobs.ledger.seals import pushes_of

    rows = ledger.read("read the sealed pushes", lambda conn: pushes_of(conn, run_dir_key(run_dir)))
    return tuple(SealedPush(r.id, r.line, r.recorded_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
                 for r in rows)


def log_lines(texts: list[str], entries: list[PushEntry]) -> tuple[LogLine, ...]:
    """The file's lines with the hook's `sealed` mark (from the parsed entries)."""
    unsealed = {e.line for e in entries if not e.sealed}
    return tuple(LogLine(n, text, n not in unsealed) for n, text in enumerate(texts, start=1))


def read_sealed_log(path: Path) -> tuple[list[PushEntry], tuple[LogLine, ...]]:
    entries, texts = read_push_log_lines(path)
    return entries, log_lines(texts, entries)


__all__ = ["SealError", "log_lines", "read_sealed_log", "record_pushes", "seal_lines",
           "sealed_pushes"]
