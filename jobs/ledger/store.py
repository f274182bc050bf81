"""The run ledger: every attempt, and every task edit between being written and being committed.

It lives in SQLite under `state_dir` by default; any SQLAlchemy URL (PostgreSQL for several
machines) works the same way, which is why this is SQLAlchemy Core and not sqlite3.

Outside services fail soft: a dropped connection is reconnected and the write retried (every row
carries a `uid`, so a write retried after a lost acknowledgement is applied once); a ledger that
stays unreachable past a bounded wait has its writes kept in a local spool (`jobs.ledger.spool`) and
written on a later run. The schema only ever grows: a column this version adds to an older ledger
is added in place.
"""

from __future__ import annotations

import time as time_module
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from jobs.core.errors import EXIT_USAGE, LoopError
from jobs.core.host import default_machine
from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.core.urls import redact_url
from jobs.ledger.model import WRITTEN, Attempt, EditState, iso_utc, naive_utc
from jobs.ledger.rows import (
    ADDED_COLUMNS,
    EDIT_STATES,
    VERDICTS,
    _metadata,
    attempts,
    claims,
    from_row,
    row_values,
)
from jobs.ledger.spool import Spool

log = get_logger("loop-jobs.ledger")

# Connecting gives up after CONNECT_TIMEOUT; retries start only within RETRY_WAIT, so a ledger
# that cannot be reached is given up within 10 s in all.
CONNECT_TIMEOUT = 3
RETRY_WAIT = 6.0

def is_transient(exc: SQLAlchemyError) -> bool:
    """A lost or refused connection (restart, idle_session_timeout, failover), worth retrying."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)


class LedgerError(LoopError):
    """The ledger cannot be opened or written: nothing may be edited without it."""

    exit_code = 3


def _engine(url: str) -> sa.Engine:
    connect_args: dict[str, Any] = {}
    if url.startswith("sqlite"):
        # Two runs may share one SQLite file: wait for the other's write instead of failing. A
        # lock held for longer (a backup, a shell left inside BEGIN) is an unreachable ledger:
        # each wait is cut off like a connection attempt, so the retries end within 10 s too.
        connect_args["timeout"] = CONNECT_TIMEOUT
    elif url.startswith("postgresql"):
        query = sa.make_url(url).query
        if "connect_timeout" not in query:
            connect_args["connect_timeout"] = CONNECT_TIMEOUT
        # A server that vanished without closing the connection (failover, a cut network) is
        # noticed by TCP keepalives instead of after the kernel's two-hour default.
        for key, value in (("keepalives", 1), ("keepalives_idle", 10),
                           ("keepalives_interval", 5), ("keepalives_count", 3)):
            if key not in query:
                connect_args[key] = value
    # pre_ping: a pooled connection the server closed while a recipe ran (a restart,
    # idle_session_timeout) is replaced at checkout instead of failing the write. A SQLite file
    # has no server to lose, and the ping would cost a statement per write.
    try:
        engine = sa.create_engine(url, connect_args=connect_args,
                                  pool_pre_ping=not url.startswith("sqlite"))
    except (ImportError, sa.exc.NoSuchModuleError) as exc:
        # The URL names a driver this installation lacks: the user's to fix, not a crash.
        raise LoopError(f"cannot open the ledger {redact_url(url)}: its database driver is not "
                        f"installed ({exc}); for PostgreSQL install loop-jobs[postgres] and use "
                        "postgresql+psycopg://", EXIT_USAGE) from None
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL: readers never wait for the writer, and a commit appends to one file. synchronous=NORMAL
    # syncs the WAL only at checkpoints: a killed process loses nothing, a power cut may lose the
    # last commits. The one write recovery relies on, a pending edit, is synced (`durable`).
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


T = TypeVar("T")

_INSERT = attempts.insert()
_UPDATE_BY_ID = attempts.update().where(attempts.c.id == sa.bindparam("row_id"))
_UPDATE_BY_UID = attempts.update().where(attempts.c.uid == sa.bindparam("row_uid"))
_ID_BY_UID = sa.select(attempts.c.id).where(attempts.c.uid == sa.bindparam("row_uid"))


class Ledger:
    def __init__(self, url: str, *, machine: str | None = None, spool_dir: Path | None = None,
                 retry_wait: float | None = None,
                 sleep: Callable[[float], None] = time_module.sleep,
                 give_up: bool = False) -> None:
        """Open the ledger (its tables made or grown as needed); LedgerError when it cannot be.

        `give_up`: a ledger that cannot be reached is given up on for this run instead (its
        writes go to the spool, `unreachable` is set and `open_error` says why); for `run`,
        which still reports every due task and records itself in the spool."""
        self.url = url
        self.shown_url = redact_url(url)
        self.machine = machine or default_machine()
        self.spool = Spool(spool_dir) if spool_dir is not None else None
        self.retry_wait = RETRY_WAIT if retry_wait is None else retry_wait
        self.sleep = sleep
        # Once the ledger has been given up on in this run, later writes go straight to the spool
        # instead of waiting again for each one.
        self.unreachable = False
        self.open_error: str | None = None
        self.spooled = 0
        try:
            self.engine = _engine(url)
            if url.startswith("sqlite:///"):
                Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            self._retrying("open", self._create_schema)
        except (SQLAlchemyError, OSError, ValueError) as exc:
            log.error("ledger.open_failed", ledger=self.shown_url, error=first_line(exc),
                      given_up=give_up and self.spool is not None)
            said = f"cannot open the ledger {self.shown_url}: {first_line(exc)}"
            if not (give_up and self.spool is not None and hasattr(self, "engine")):
                raise LedgerError(said) from None
            self.unreachable, self.open_error = True, said

    def _create_schema(self) -> None:
        try:
            _metadata.create_all(self.engine)
        except SQLAlchemyError as exc:
            if is_transient(exc):
                raise
            # Two runs opening a new ledger at once: the other one's CREATE TABLE came
            # between our check and ours. Its table is the one we wanted.
            if not sa.inspect(self.engine).has_table(attempts.name):
                raise
        have = {c["name"] for c in sa.inspect(self.engine).get_columns(attempts.name)}
        for name in ADDED_COLUMNS:
            if name in have:
                continue
            column = attempts.c[name]
            kind = column.type.compile(dialect=self.engine.dialect)
            try:
                with self.engine.begin() as conn:
                    conn.exec_driver_sql(f"ALTER TABLE attempts ADD COLUMN {name} {kind}")
            except SQLAlchemyError:
                # Another machine added it first.
                if name not in {c["name"] for c in
                                sa.inspect(self.engine).get_columns(attempts.name)}:
                    raise
        for index in attempts.indexes:
            if any(c.name in ADDED_COLUMNS for c in index.columns):
                try:
                    index.create(self.engine, checkfirst=True)
                except SQLAlchemyError:
                    pass  # made by another machine between the check and ours

    def _retrying(self, what: str, action: Callable[[], T]) -> T:
        """`action`, retried over a lost connection until RETRY_WAIT has passed; at once a lost
        connection when the ledger was given up on in this run (it never waits twice)."""
        if self.unreachable:
            raise sa.exc.OperationalError(what, {}, Exception(
                "the ledger is unreachable: given up on earlier in this run"))
        deadline = time_module.monotonic() + self.retry_wait
        delay = 0.2
        tries = 0
        while True:
            tries += 1
            try:
                result = action()
            except SQLAlchemyError as exc:
                if not is_transient(exc) or time_module.monotonic() + delay > deadline:
                    raise
                log.warning("ledger.retrying", ledger=self.shown_url, operation=what,
                            attempt=tries, error=first_line(exc))
                self.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if tries > 1:
                log.info("ledger.reconnected", ledger=self.shown_url, operation=what,
                         attempts=tries)
            return result

    def close(self) -> None:
        self.engine.dispose()

    # -- writes ----------------------------------------------------------------------------------

    def save(self, attempt: Attempt, *, durable: bool = False,
             also: Callable[[sa.Connection], None] | None = None) -> bool:
        """Insert or update the attempt's row; spooled locally when the ledger cannot be reached.
        True when the row reached the ledger, False when it was spooled.

        `durable`: synced to disk before returning (the pending edit recovery depends on).
        `also`: more statements in the same transaction (not run when the row is spooled).
        """
        if attempt.machine is None:
            attempt.machine = self.machine
        new = attempt.id is None and attempt.uid is None
        if attempt.uid is None:
            attempt.uid = uuid.uuid4().hex
        if self.unreachable and self.spool is not None:
            self._spool(attempt, "still unreachable in this run")
            return False
        # A row first written here cannot be in the ledger yet, unless an earlier try of this
        # very write reached it and only its answer was lost: only retries look for it.
        tries = 0

        def write() -> None:
            nonlocal tries
            tries += 1
            self._upsert(attempt, durable, new=new and tries == 1, also=also)

        try:
            self._retrying("write", write)
        except SQLAlchemyError as exc:
            log.error("ledger.write_failed", ledger=self.shown_url, run_id=attempt.run_id,
                      task=attempt.task_id, error=first_line(exc),
                      spooled=self.spool is not None)
            if self.spool is None or not is_transient(exc):
                raise LedgerError(f"cannot write the ledger {self.shown_url}: "
                                  f"{first_line(exc)}") from None
            self.unreachable = True
            self._spool(attempt, first_line(exc))
            return False
        return True

    def _spool(self, attempt: Attempt, why: str) -> None:
        assert self.spool is not None
        try:
            self.spool.put("attempt", attempt.to_json(), durable=True)
        except OSError as exc:
            raise LedgerError(f"cannot write the ledger {self.shown_url} ({why}) nor its spool "
                              f"{self.spool.directory}: {exc}") from None
        self.spooled += 1
        log.warning("ledger.spooled", ledger=self.shown_url, run_id=attempt.run_id,
                    task=attempt.task_id, verdict=attempt.verdict, reason=why)

    def _upsert(self, attempt: Attempt, durable: bool, *, new: bool = False,
                also: Callable[[sa.Connection], None] | None = None) -> None:
        """Write the attempt's row: an insert when `new`, else an update of the row with its id
        (or uid), inserted when there is none. Prepared statements with parameters, so that
        SQLAlchemy compiles each once per run, not once per write."""
        values = row_values(attempt)
        with self.engine.connect() as conn:
            # The safety level can only change between transactions.
            synced = durable and conn.dialect.name == "sqlite"
            raw: Any = conn.connection.driver_connection
            if synced:
                # On the driver's connection: through SQLAlchemy it would begin a transaction.
                raw.execute("PRAGMA synchronous=FULL")
            try:
                with conn.begin():
                    row_id = None if new else self._update(conn, attempt, values)
                    if row_id is None:
                        key = conn.execute(_INSERT, values)
                        assert key.inserted_primary_key is not None
                        row_id = int(key.inserted_primary_key[0])
                    if also is not None:
                        also(conn)
                attempt.id = row_id
            finally:
                if synced:
                    raw.execute("PRAGMA synchronous=NORMAL")

    @staticmethod
    def _update(conn: sa.Connection, attempt: Attempt, values: dict[str, Any]) -> int | None:
        """Update the attempt's row found by id (or uid); its id, or None when there is none."""
        if attempt.id is not None:
            done = conn.execute(_UPDATE_BY_ID, {**values, "row_id": attempt.id})
            return attempt.id if done.rowcount else None
        done = conn.execute(_UPDATE_BY_UID, {**values, "row_uid": attempt.uid})
        if not done.rowcount:
            return None
        return int(conn.execute(_ID_BY_UID, {"row_uid": attempt.uid}).scalar_one())

    # The names callers have always used: both are `save` now.
    def record(self, attempt: Attempt, *, durable: bool = False) -> Attempt:
        self.save(attempt, durable=durable)
        return attempt

    def update(self, attempt: Attempt) -> None:
        self.save(attempt)

    def replay(self, attempt: Attempt) -> None:
        """Write an attempt a run spooled (jobs.ledger.replay)."""
        attempt.id = None  # the spooling run may never have learnt it: the uid finds the row
        self._retrying("spool", lambda: self._upsert(attempt, False))

    # -- reads -----------------------------------------------------------------------------------

    def pending(self, repo: str, machine: str | None = None) -> list[Attempt]:
        """This machine's edits written (or about to be) whose commit was never confirmed.

        Another machine's pending edit at the same path is its own clone's business.
        """
        mine = attempts.c.machine == (machine or self.machine)
        if self.engine.dialect.name == "sqlite":
            # Rows from before machines were recorded: a SQLite file is one machine's own.
            mine = sa.or_(mine, attempts.c.machine.is_(None))
        query = (sa.select(attempts)
                 .where(attempts.c.repo == repo, attempts.c.edit_state == EditState.PENDING, mine)
                 .order_by(attempts.c.id))
        return list(self._select(query))

    def kept(self, repo: str, machine: str | None = None) -> list[Attempt]:
        """This machine's verdicts whose commit was refused and whose file was restored, oldest
        first: a later run commits them without running the recipe again."""
        mine = attempts.c.machine == (machine or self.machine)
        if self.engine.dialect.name == "sqlite":
            mine = sa.or_(mine, attempts.c.machine.is_(None))
        query = (sa.select(attempts)
                 .where(attempts.c.repo == repo, attempts.c.edit_state == EditState.RESTORED,
                        attempts.c.verdict.in_(tuple(WRITTEN)), mine)
                 .order_by(attempts.c.id))
        return list(self._select(query))

    def history(self, *, since: datetime | None = None, repo: str | None = None,
                machine: str | None = None) -> list[Attempt]:
        """The attempts that started at `since` or later (every one without it), oldest first."""
        query = sa.select(attempts).order_by(attempts.c.started_at, attempts.c.id)
        if since is not None:
            query = query.where(attempts.c.started_at >= naive_utc(since))
        if repo is not None:
            query = query.where(attempts.c.repo == repo)
        if machine is not None:
            query = query.where(attempts.c.machine == machine)
        return list(self._select(query))

    def repos(self) -> list[str]:
        """Every repository the ledger holds attempts of, by path."""
        query = sa.select(attempts.c.repo).distinct().order_by(attempts.c.repo)

        def fetch() -> list[str]:
            with self.engine.connect() as conn:
                return [str(r) for r in conn.execute(query).scalars()]

        return self.read("read", fetch)

    def _select(self, query: sa.Select[Any]) -> Iterator[Attempt]:
        def fetch() -> Sequence[sa.Row[Any]]:
            with self.engine.connect() as conn:
                return conn.execute(query).fetchall()

        for row in self.read("read", fetch):
            yield from_row(row)

    def execute_read(self, what: str, fetch: Callable[[], T]) -> T:
        """`fetch`, retried over a lost connection (for the tables kept in other modules)."""
        return self._retrying(what, fetch)

    def read(self, what: str, fetch: Callable[[], T]) -> T:
        """`fetch`, retried over a lost connection; a failure that outlasts the retries is logged
        and raised as one LedgerError naming the ledger."""
        try:
            return self._retrying(what, fetch)
        except SQLAlchemyError as exc:
            log.error("ledger.read_failed", ledger=self.shown_url, error=first_line(exc))
            raise LedgerError(f"cannot read the ledger {self.shown_url}: "
                              f"{first_line(exc)}") from None

    def execute(self, what: str, action: Callable[[sa.Connection], T]) -> T:
        """Run `action` in one transaction, retried over a lost connection (for the claims)."""
        def once() -> T:
            with self.engine.begin() as conn:
                return action(conn)

        return self._retrying(what, once)


__all__ = ["EDIT_STATES", "VERDICTS", "Attempt", "IntegrityError", "Ledger", "LedgerError",
           "attempts", "claims", "iso_utc", "naive_utc"]
