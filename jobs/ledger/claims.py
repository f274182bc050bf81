"""One verification across several machines: a due task is claimed in the ledger before it runs.

A due verification is named across clones by the repository's identity (the normalised URL of the
branch's remote, credentials stripped; else the path), the task id, the `verify:` label date and
the task file's git blob id in the checked-out commit: a task set Done again after a failure is a
new file, so new work. The claim is a row whose primary key is that name, so two machines
inserting it at once cannot both succeed, on SQLite as on PostgreSQL. A claim is live until it
expires (the repository's timeout plus grace: its holder died) or is finished (the verdict reached
the task, or is kept to be committed by its machine after a refused commit: nobody runs it again,
unless the clone's history already holds that verdict's commit) or released (the recipe never
judged the task, or a kept verdict was dropped: anyone may try again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.ledger.model import WRITTEN, Attempt, EditState, iso_utc, naive_utc
from jobs.ledger.store import Ledger, attempts, claims

log = get_logger("loop-jobs.claims")



# Prepared once, with parameters: SQLAlchemy then compiles each statement once per run.
_INSERT = claims.insert()
# Only one machine's UPDATE can match: the row is locked and the condition re-checked. An
# unfinished claim is taken over when it expired, or when it is this machine's on this clone
# and its run was proved dead (`c_dead`, that run's id): holding the clone's lock is no proof.
_TAKE_OVER = claims.update().where(
    claims.c.key == sa.bindparam("c_key"), claims.c.finished_at.is_(None),
    (claims.c.expires_at < sa.bindparam("c_now"))
    | ((claims.c.machine == sa.bindparam("c_machine")) & (claims.c.repo == sa.bindparam("c_repo"))
       & (claims.c.run_id == sa.bindparam("c_dead"))))
_BY_KEY = sa.select(claims).where(claims.c.key == sa.bindparam("c_key"))
_MINE = (claims.c.key == sa.bindparam("c_key")) & (claims.c.run_id == sa.bindparam("c_run"))
_FINISH = claims.update().where(_MINE)
_KEEP = claims.update().where(_MINE, claims.c.finished_at.is_(None)).values(
    expires_at=sa.bindparam("c_expires"))
_RELEASE = claims.delete().where(_MINE)
_TAKE_FINISHED = claims.update().where(
    claims.c.key == sa.bindparam("c_key"), claims.c.run_id == sa.bindparam("c_run"),
    claims.c.finished_at.is_not(None))
_OF_RUN = sa.select(claims.c.key, claims.c.machine, claims.c.identity).where(
    claims.c.identity.in_(sa.bindparam("c_identity", expanding=True)),
    claims.c.task_id == sa.bindparam("c_task"), claims.c.label_date == sa.bindparam("c_date"),
    claims.c.run_id == sa.bindparam("c_run"),
    (claims.c.repo == sa.bindparam("c_repo")) | claims.c.repo.is_(None))
_SERVER_NOW = sa.select(sa.func.now())
_COMMIT_OF = sa.select(attempts.c.commit_sha).where(
    attempts.c.run_id == sa.bindparam("c_run"), attempts.c.task_id == sa.bindparam("c_task"),
    attempts.c.label_date == sa.bindparam("c_date"),
    attempts.c.edit_state == EditState.COMMITTED).limit(1)


def claim_key(identity: str, task_id: str, label_date: str, blob: str) -> str:
    parts = (identity, task_id, label_date, blob)
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


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
    """A claim this run may not take: why this machine leaves the verification alone."""

    machine: str
    claimed_at: datetime
    finished: bool
    run_id: str = ""
    finished_at: datetime | None = None
    verdict: str | None = None
    commit_sha: str | None = None  # the finished verdict's commit, when the ledger knows it

    @property
    def reason(self) -> str:
        return self.reason_for("")

    def reason_for(self, me: str) -> str:
        """Why `me` skips it: a live claim is someone's work in progress; a finished one is a
        verdict, this machine's own ("verified already") or another's."""
        if not self.finished:
            return f"claimed by {self.machine} at {iso_utc(self.claimed_at)}"
        what = ", ".join(x for x in (self.verdict,
                                     f"commit {self.commit_sha[:10]}" if self.commit_sha else None)
                         if x)
        at = iso_utc(self.finished_at or self.claimed_at)
        who = "already" if self.machine == me else f"by {self.machine}"
        return f"verified {who} at {at}" + (f" ({what})" if what else "")


def _clock(ledger: Ledger, now: datetime | None) -> datetime:
    """The moment claims are written and judged at. Every machine on a PostgreSQL ledger reads
    the server's clock, so one whose own clock is off neither takes over a live claim as expired
    nor writes claims that are born expired; a SQLite ledger is read on this machine's clock.

    Raises SQLAlchemyError when the ledger cannot be reached."""
    if now is not None:
        return naive_utc(now)
    if ledger.engine.dialect.name == "sqlite":
        return naive_utc(datetime.now(UTC))
    moment = ledger.execute("clock", lambda conn: conn.execute(_SERVER_NOW).scalar_one())
    return naive_utc(moment)


def take(ledger: Ledger, claim: Claim, *, repo: str, ttl: float, now: datetime | None = None,
         is_dead: Callable[[str], bool] | None = None) -> Held | None:
    """Claim the verification; None when it is ours to run, else who holds it.

    The caller holds the lock of the clone at `repo`. An unexpired claim of this machine on
    this clone is taken over only when `is_dead` proves its run dead.

    Raises SQLAlchemyError when the ledger cannot be reached: without a claim nothing runs.
    """
    moment = _clock(ledger, now)
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
        dead = None
        if is_dead is not None:
            row = conn.execute(_BY_KEY, {"c_key": claim.key}).first()
            if (row is not None and row.finished_at is None and row.machine == claim.machine
                    and row.repo == repo and is_dead(row.run_id)):
                dead = row.run_id
        done = conn.execute(_TAKE_OVER, {**values, "c_key": claim.key, "c_now": moment,
                                         "c_machine": claim.machine, "c_repo": repo,
                                         "c_dead": dead})
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
            held = _held(ledger, row)
            log.info("claim.held_elsewhere", task=claim.task_id, label_date=claim.label_date,
                     holder=held.machine, run_id=claim.run_id, finished=held.finished)
            return held
        # Released between our insert and our look: try again.
    raise sa.exc.OperationalError("claim", {}, Exception("the claim kept changing hands"))


def _held(ledger: Ledger, row: sa.Row[Any]) -> Held:
    finished = row.finished_at is not None
    commit = None
    if finished:
        # The finished verdict's commit: its attempt was written with the claim's settlement.
        commit = ledger.execute("claim", lambda conn: conn.execute(_COMMIT_OF, {
            "c_run": row.run_id, "c_task": row.task_id, "c_date": row.label_date}).scalar())
    return Held(row.machine, row.claimed_at.replace(tzinfo=UTC), finished, row.run_id,
                row.finished_at.replace(tzinfo=UTC) if finished else None, row.verdict, commit)


def held_under(ledger: Ledger, key: str, now: datetime | None = None) -> Held | None:
    """Who holds the claim at `key`, finished or live, without taking it: a claim an earlier
    version keyed by the identity it gave the repository (jobs.core.urls.legacy_identity) still
    keeps the verification from running again. None when there is none, or it expired.

    Raises SQLAlchemyError when the ledger cannot be reached."""
    row = ledger.execute("claim", lambda conn: conn.execute(_BY_KEY, {"c_key": key}).first())
    if row is None or (row.finished_at is None and row.expires_at < _clock(ledger, now)):
        return None
    return _held(ledger, row)


def take_over_finished(ledger: Ledger, claim: Claim, held: Held, *, repo: str, ttl: float,
                       now: datetime | None = None) -> bool:
    """Take a finished claim whose verdict commit the clone's history already holds (the owner
    reverted the verdict, say): the task due again there is a new request. True when it is
    ours; False when another machine took it first.

    Raises SQLAlchemyError when the ledger cannot be reached."""
    moment = _clock(ledger, now)
    values = {"machine": claim.machine, "run_id": claim.run_id, "repo": repo,
              "claimed_at": moment, "expires_at": moment + timedelta(seconds=ttl),
              "finished_at": None, "verdict": None}
    done = ledger.execute("claim", lambda conn: conn.execute(
        _TAKE_FINISHED.values(**values), {"c_key": claim.key, "c_run": held.run_id}))
    if done.rowcount != 1:
        return False
    log.info("claim.taken_again", task=claim.task_id, label_date=claim.label_date,
             machine=claim.machine, run_id=claim.run_id, previous_commit=held.commit_sha,
             reason="the finished verdict's commit is in the checked-out history")
    return True


def claim_of_run(ledger: Ledger, identities: Sequence[str], task_id: str, label_date: str,
                 run_id: str, repo: str) -> Claim | None:
    """The claim run `run_id` took on this task in the clone at `repo`, or None (the pending edit
    of a killed run is recovered by a later one, which settles the dead run's claim). One run
    may have claimed the task in another clone too (its task file differs: another key), and
    that claim is the other clone's. `identities`: the repository's, and the one an earlier
    version gave it (a run of that version died: its claim is keyed by that one).

    Raises SQLAlchemyError when the ledger cannot be reached."""
    row = ledger.execute("claim", lambda conn: conn.execute(_OF_RUN, {
        "c_identity": list(identities), "c_task": task_id, "c_date": label_date,
        "c_run": run_id, "c_repo": repo}).first())
    if row is None:
        return None
    return Claim(row.key, row.identity, task_id, label_date, run_id, row.machine)


def keep(ledger: Ledger, claim: Claim, *, ttl: float, now: datetime | None = None) -> bool:
    """Extend our unfinished claim to `ttl` seconds from now; False when it is no longer ours
    (it expired and another machine took it over, or it was settled).

    Raises SQLAlchemyError when the ledger cannot be reached."""
    expires = _clock(ledger, now) + timedelta(seconds=ttl)
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


def judged(result: Attempt | None) -> bool:
    """Whether `result` is a verdict nobody runs the recipe for again: committed, or kept after
    its commit was refused (its machine commits it later without running the recipe again)."""
    return result is not None and (
        result.edit_state == EditState.COMMITTED
        or (result.edit_state == EditState.RESTORED and result.verdict in WRITTEN))


def settlement(claim: Claim, result: Attempt | None) -> dict[str, Any]:
    """What settles the claim after `result`: finished when it judged the task, its verdict
    committed or kept (nobody verifies this key again), else released (the task was not judged:
    any machine may try)."""
    if result is not None and judged(result):
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
