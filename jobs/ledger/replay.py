"""Writing what earlier runs spooled while the ledger could not be reached: attempts, claims
and runs.

Apart from the store because a spooled claim is replayed by the claims protocol, which itself
stands on the store.
"""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from jobs.core.fs import exclusive_lock
from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.ledger import claims, runs
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger

FLUSH_LOCK = ".flush.lock"

log = get_logger("loop-jobs.ledger")


def flush_spool(ledger: Ledger) -> int:
    """Write what earlier runs spooled; returns how many entries reached the ledger."""
    if ledger.spool is None or not ledger.spool.directory.is_dir():
        return 0
    # One flush at a time per spool: two runs of this machine starting together would otherwise
    # replay one entry twice (an older state of an attempt written over a newer one) and find
    # the entries the other removed gone.
    try:
        with exclusive_lock(ledger.spool.directory / FLUSH_LOCK, wait=True):
            written = _flush(ledger)
    except OSError as exc:
        # A spool folder this run cannot change (read-only, say): its entries wait for a run
        # that can, `doctor` counts them, and this run verifies all the same.
        log.error("ledger.spool_flush_failed", ledger=ledger.shown_url, error=first_line(exc))
        return 0
    if written:
        log.info("ledger.spool_flushed", ledger=ledger.shown_url, entries=written)
    return written


def _flush(ledger: Ledger) -> int:
    assert ledger.spool is not None
    written = 0
    for path, kind, payload in ledger.spool.entries():
        try:
            if kind == "attempt":
                ledger.replay(Attempt.from_json(payload))
            elif kind == "claim":
                claims.apply_spooled(ledger, payload)
            elif kind == "run":
                runs.apply_spooled(ledger, payload)
        except SQLAlchemyError as exc:
            log.error("ledger.spool_flush_failed", ledger=ledger.shown_url,
                      entry=path.name, error=first_line(exc))
            break
        except (KeyError, TypeError, ValueError) as exc:
            # JSON, but not the payload its kind needs (damaged, edited): left in place it would
            # stop every later run before its first task.
            log.error("ledger.spool_entry_unreadable", ledger=ledger.shown_url,
                      entry=path.name, kind=kind, error=first_line(exc))
            ledger.spool.set_aside(path)
            continue
        ledger.spool.remove(path)
        written += 1
    return written
