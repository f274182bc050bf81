"""One verification across several machines: a due task is claimed in the ledger before it runs.

A due verification is named across clones by the repository's identity (the normalised URL of the
branch's remote, credentials stripped; else the path), the task id and the `verify:` label date.
The claim is a row whose primary key is that name, so two machines inserting it at once cannot
both succeed, on SQLite as on PostgreSQL. A claim is live until it expires (the repository's
timeout plus grace: its holder died) or is finished (the verdict reached the task: nobody runs it
again) or released (the recipe never judged the task: anyone may try again).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.ledger.model import Attempt, EditState, iso_utc, naive_utc
from jobs.ledger.store import Ledger, claims

log = get_logger("loop-jobs.claims")



# Prepared once, with parameters: SQLAlchemy then compiles each statement once per run.
_INSERT = claims.insert()
# Only one machine's UPDATE can match: the row is locked and the condition re-checked. An
# unfinished claim of this machine on this clone was left by a run that died: the caller holds
# the clone's lock, so no live run of ours can hold it.
_TAKE_OVER = claims.update().where(
    claims.c.key == sa.bindparam("c_key"), claims.c.finished_at.is_(None),
    (claims.c.expires_at < sa.bindparam("c_now"))
    | ((claims.c.machine == sa.bindparam("c_machine")) & (claims.c.repo == sa.bindparam("c_repo"))))
_BY_KEY = sa.select(claims).where(claims.c.key == sa.bindparam("c_key"))
_MINE = (claims.c.key == sa.bindparam("c_key")) & (claims.c.run_id == sa.bindparam("c_run"))
_FINISH = claims.update().where(_MINE)
_KEEP = claims.update().where(_MINE, claims.c.finished_at.is_(None)).values(
    expires_at=sa.bindparam("c_expires"))
_RELEASE = claims.delete().where(_MINE)


def claim_key(identity: str, task_id: str, label_date: str) -> str:
    return hashlib.sha256("\0".join((identity, task_id, label_date)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Claim:
    key: str
    identity: str
    task_id: str
    label_date: str
    run_id: str
    machine: str


@dataclass(frozen=True)
class Held:
    """Someone else's claim on a verification: why this machine leaves it alone."""

    machine: str
    claimed_at: datetime
    finished: bool

    @property
    def reason(self) -> str:
        return f"claimed by {self.machine} at {iso_utc(self.claimed_at)}"


def take(ledger: Ledger, claim: Claim, *, repo: str, ttl: float,
         now: datetime | None = None) -> Held | None:
    """Claim the verification; None when it is ours to run, else who holds it.

    The caller holds the lock of the clone at `repo`.

    Raises SQLAlchemyError when the ledger cannot be reached: without a claim nothing runs.
    """
    moment = naive_utc(now or datetime.now(UTC))
    expires = moment + timedelta(seconds=ttl)
    values = {"key": claim.key, "identity": claim.identity, "task_id": claim.task_id,
              "label_date": claim.label_date, "machine": claim.machine, "run_id": claim.run_id,
              "repo": repo, "claimed_at": moment, "expires_at": expires,
              "finished_at": None, "verdict": None}

    def insert(conn: sa.Connection) -> bool:
        try:
            if conn.dialect.name == "sqlite":
                # SQLite keeps the transaction usable after a refused insert.
                conn.execute(_INSERT, values)
            else:
                # A savepoint, so a refused insert leaves the transaction usable on PostgreSQL.
                with conn.begin_nested():
                    conn.execute(_INSERT, values)
        except IntegrityError:
            return False
        return True

    def take_over(conn: sa.Connection) -> tuple[bool, sa.Row[Any] | None]:
        done = conn.execute(_TAKE_OVER, {**values, "c_key": claim.key, "c_now": moment,
                                         "c_machine": claim.machine, "c_repo": repo})
        if done.rowcount == 1:
            return True, None
        return False, conn.execute(_BY_KEY, {"c_key": claim.key}).first()

    for _ in range(3):
        if ledger.execute("claim", insert):
            log.info("claim.taken", task=claim.task_id, label_date=claim.label_date,
                     machine=claim.machine, run_id=claim.run_id)
            return None
        taken, row = ledger.execute("claim", take_over)
        if taken:
            log.warning("claim.taken_over", task=claim.task_id, label_date=claim.label_date,
                        machine=claim.machine, run_id=claim.run_id,
                        reason="the previous holder's claim expired or its run died")
            return None
        if row is not None:
            held = Held(row.machine, row.claimed_at.replace(tzinfo=UTC),
                        row.finished_at is not None)
            log.info("claim.held_elsewhere", task=claim.task_id, label_date=claim.label_date,
                     holder=held.machine, run_id=claim.run_id, finished=held.finished)
            return held
        # Released between our insert and our look: try again.
    raise sa.exc.OperationalError("claim", {}, Exception("the claim kept changing hands"))


def keep(ledger: Ledger, claim: Claim, *, ttl: float, now: datetime | None = None) -> bool:
    """Extend our unfinished claim to `ttl` seconds from now; False when it is no longer ours
    (it expired and another machine took it over, or it was settled).

    Raises SQLAlchemyError when the ledger cannot be reached."""
    expires = naive_utc(now or datetime.now(UTC)) + timedelta(seconds=ttl)
    done = ledger.execute("claim", lambda conn: conn.execute(
        _KEEP, {"c_key": claim.key, "c_run": claim.run_id, "c_expires": expires}))
    return bool(done.rowcount == 1)


def _settle(ledger: Ledger, payload: dict[str, Any]) -> None:
    if not ledger.unreachable:
        try:
            ledger.execute("claim", lambda conn: _apply(conn, payload))
            return
        except SQLAlchemyError as exc:
            log.error("ledger.write_failed", ledger=ledger.shown_url, operation="claim",
                      error=first_line(exc), spooled=ledger.spool is not None)
            if ledger.spool is None:
                return  # the claim expires by itself; nothing else depends on it
            ledger.unreachable = True
    if ledger.spool is not None:
        ledger.spool.put("claim", payload)
        ledger.spooled += 1
        log.warning("ledger.spooled", ledger=ledger.shown_url, operation="claim")


def _apply(conn: sa.Connection, payload: dict[str, Any]) -> None:
    mine = {"c_key": payload["key"], "c_run": payload["run_id"]}
    if payload["op"] == "finish":
        # Written by iso_utc ("...Z"): fromisoformat reads it without strptime's cost.
        at = naive_utc(datetime.fromisoformat(payload["at"]))
        conn.execute(_FINISH, {**mine, "finished_at": at, "verdict": payload["verdict"]})
    else:
        conn.execute(_RELEASE, mine)


def apply_spooled(ledger: Ledger, payload: dict[str, Any]) -> None:
    ledger.execute("spool", lambda conn: _apply(conn, payload))


def settlement(claim: Claim, result: Attempt | None) -> dict[str, Any]:
    """What settles the claim after `result`: finished when its verdict reached the task (nobody
    verifies this key again), else released (the task was not judged: any machine may try)."""
    if result is not None and result.edit_state == EditState.COMMITTED:
        return {"op": "finish", "key": claim.key, "run_id": claim.run_id,
                "verdict": result.verdict, "at": iso_utc(datetime.now(UTC))}
    return {"op": "release", "key": claim.key, "run_id": claim.run_id}


def settle(ledger: Ledger, claim: Claim, result: Attempt | None) -> None:
    """Settle the claim after `result` in a transaction of its own (spooled when unreachable)."""
    _settle(ledger, settlement(claim, result))


def save_settled(ledger: Ledger, result: Attempt, claim: Claim | None) -> None:
    """Write the attempt and settle its claim in one transaction (one commit, not two)."""
    if claim is None:
        ledger.save(result)
        return
    payload = settlement(claim, result)
    if not ledger.save(result, also=lambda conn: _apply(conn, payload)):
        _settle(ledger, payload)  # the attempt was spooled: so is the settlement
