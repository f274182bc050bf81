"""The ledger the audit seals its evidence in: the one loop-verify's configuration names
(`--config`, else `$LOOP_JOBS_CONFIG`, else the default file; its `ledger:`, else the default
SQLite file in `state_dir`). Every loop-pi-audit command and the pre-push hook find it the same
way, so the seal exists without a `ledger:` line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from jobs.core.errors import LoopError

if TYPE_CHECKING:
    import sqlalchemy as sa

    from jobs.ledger.store import Ledger

T = TypeVar("T")


class SealError(LoopError):
    """The ledger that holds the seals cannot be opened, read or written."""

    exit_code = 3


@dataclass
class AuditLedger:
    """An open ledger, its URL as shown (password redacted) and the machine's name."""

    ledger: Ledger
    shown: str
    machine: str

    def write(self, what: str, action: Callable[[sa.Connection], T]) -> T:
        """`action` in one transaction (retried over a lost connection); SealError on failure."""
        from sqlalchemy.exc import SQLAlchemyError

        from jobs.core.text import first_line

        try:
            return self.ledger.execute(what, action)
        except SQLAlchemyError as exc:
            raise SealError(f"cannot {what} in the ledger {self.shown}: "
                            f"{first_line(exc)}") from None

    def read(self, what: str, action: Callable[[sa.Connection], T]) -> T:
        from sqlalchemy.exc import SQLAlchemyError

        from jobs.core.text import first_line

        def fetch() -> T:
            with self.ledger.engine.connect() as conn:
                return action(conn)

        try:
            return self.ledger.execute_read(what, fetch)
        except SQLAlchemyError as exc:
            raise SealError(f"cannot {what} in the ledger {self.shown}: "
                            f"{first_line(exc)}") from None

    def close(self) -> None:
        self.ledger.close()


def config_path(config_arg: str | None, env: Mapping[str, str] = os.environ) -> Path:
    """The configuration file in force (which need not exist)."""
    from jobs.config.load import find_config_path

    return find_config_path(config_arg, env)[0]


@contextmanager
def open_ledger(config_arg: str | None,
                env: Mapping[str, str] | None = None) -> Iterator[AuditLedger]:
    """The configured ledger with the seal tables, closed on leaving. A configuration that cannot
    be read is a usage error (exit 2); a ledger that cannot be opened is a SealError (exit 3)."""
    from jobs.config.load import load_config
    from jobs.core.host import default_machine
    from jobs.ledger.audits import ensure_audit_tables
    from jobs.ledger.seals import ensure_seal_tables
    from jobs.ledger.store import Ledger, LedgerError

    config = load_config(config_arg, env)
    machine = config.machine or default_machine()
    # The ledger layer logs its own events: to the log file, never onto the report's stdout.
    start_logging(config.log_file, config.machine)
    try:
        ledger = Ledger(config.ledger, machine=machine)
    except LedgerError as exc:
        raise SealError(str(exc)) from None
    try:
        try:
            ensure_audit_tables(ledger.engine)
            ensure_seal_tables(ledger.engine)
        except Exception as exc:
            from jobs.core.text import first_line

            raise SealError(f"cannot prepare the ledger {ledger.shown_url}: "
                            f"{first_line(exc)}") from None
        yield AuditLedger(ledger, ledger.shown_url, machine)
    finally:
        ledger.close()


def start_logging(log_file: Path, machine: str) -> bool:
    """Library and ledger events to the log file (False when it cannot be opened: then
    nowhere, and still never onto stdout)."""
    from jobs.core.logs import configure_logging

    try:
        configure_logging(log_file, console=False, machine=machine)
        return True
    except OSError:
        configure_logging(None, console=False, machine=machine)
        return False


def run_dir_key(run_dir: Path) -> str:
    """How the ledger names a run directory: its real path."""
    return os.path.realpath(run_dir)
