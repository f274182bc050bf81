"""The claims of one clone in one run: a due task is claimed in the ledger before its recipe runs,
so each verification runs once across every machine sharing the ledger (SPEC "Several
machines"). The storage side of the protocol is jobs/ledger/claims.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.core.urls import legacy_identity, normalise_remote
from jobs.git import repo as git
from jobs.ledger.claims import (
    Claim,
    Held,
    claim_key,
    claim_of_run,
    held_under,
    keep,
    settle,
    take,
    take_over_finished,
)
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger

log = get_logger("loop-jobs.claims")

# Beyond timeout + kill_grace: starting `just`, writing the verdict and committing it.
CLAIM_MARGIN = 60.0
# Where task files live: the blob ids of all of them come from one `git ls-tree`.
TASK_FOLDERS = ("backlog/tasks", "backlog/completed")
# What a task that cannot be claimed because the ledger was given up on is reported as.
LEDGER_GONE = "the ledger is unreachable"


class RepoClaims:
    """The claims of one clone in one run (the caller holds the clone's lock)."""

    def __init__(self, ledger: Ledger, root: Path, branch: str, ttl: float,
                 is_dead: Callable[[str], bool] | None = None) -> None:
        self.ledger = ledger
        self.is_dead = is_dead  # whether a run of this machine is provably dead
        self.root = root
        self.branch = branch
        self.ttl = ttl
        self.identity: str | None = None
        self.legacy: str | None = None  # the identity an earlier version gave it, when another
        self.blobs: dict[str, str] | None = None
        self.taken: dict[str, float] = {}  # claim key -> when we took or last extended it

    def repo_identity(self) -> str:
        if self.identity is None:
            # One look per repository and run: the claims and every attempt recorded carry it.
            url = git.branch_remote_url(self.root, self.branch)
            self.identity = normalise_remote(url, self.root) if url else str(self.root)
            legacy = legacy_identity(url, self.root) if url else self.identity
            self.legacy = legacy if legacy != self.identity else None
        return self.identity

    def held_by_legacy(self, claim: Claim, path: str) -> Held | None:
        """A claim an earlier version took on this verification under the identity it gave the
        repository (docs/ledger.md, "Upgrading"): live or finished, it still holds."""
        if self.legacy is None:
            return None
        held = held_under(self.ledger, claim_key(self.legacy, claim.task_id, claim.label_date,
                                                 self.blob(path)))
        if held is None or self.verdict_in_history(held):
            return None
        log.info("claim.held_elsewhere", task=claim.task_id, label_date=claim.label_date,
                 holder=held.machine, run_id=claim.run_id, finished=held.finished,
                 identity=self.legacy)
        return held

    def blob(self, path: str) -> str:
        """The task file's blob id in the checked-out commit (read once per repository and run,
        before the first claim: the run's own verdict commits change only the files it judged)."""
        if self.blobs is None:
            self.blobs = git.blob_ids(self.root, TASK_FOLDERS)
        return self.blobs.get(path, "")

    def key(self, task_id: str | None, label_date: str | None, path: str | None,
            run_id: str) -> Claim | None:
        if task_id is None or label_date is None or path is None:
            return None
        identity = self.repo_identity()
        return Claim(claim_key(identity, task_id, label_date, self.blob(path)), identity,
                     task_id, label_date, run_id, self.ledger.machine)

    def take(self, task_id: str, label_date: str | None, path: str,
             run_id: str) -> Claim | Held | str | None:
        """Our claim; who holds it; why it cannot be claimed; or None when nothing to claim."""
        claim = self.key(task_id, label_date, path, run_id)
        if claim is None:
            return None
        if self.ledger.unreachable:
            return LEDGER_GONE
        try:
            old = self.held_by_legacy(claim, path)
            if old is not None:
                return old
            held = take(self.ledger, claim, repo=str(self.root), ttl=self.ttl,
                        is_dead=self.is_dead)
            if held is not None and self.verdict_in_history(held):
                # The verdict is already in this clone's history (reverted, say): the task due
                # again is a new request.
                if take_over_finished(self.ledger, claim, held, repo=str(self.root),
                                      ttl=self.ttl):
                    held = None
                else:
                    held = take(self.ledger, claim, repo=str(self.root), ttl=self.ttl,
                                is_dead=self.is_dead)
        except SQLAlchemyError as exc:
            log.error("ledger.claim_failed", ledger=self.ledger.shown_url, task=task_id,
                      error=first_line(exc))
            self.ledger.unreachable = True
            return LEDGER_GONE
        if held is None:
            self.taken[claim.key] = time.monotonic()
            return claim
        return held

    def verdict_in_history(self, held: Held) -> bool:
        return (held.finished and held.commit_sha is not None
                and git.is_ancestor(self.root, held.commit_sha))

    def recovered(self, p: Attempt) -> Claim | None:
        """The claim of the killed run whose pending edit `p` this run recovers (None when it
        cannot be found: it then expires by itself)."""
        if p.task_id is None or p.label_date is None or self.ledger.unreachable:
            return None
        try:
            identity = self.repo_identity()
            known = (identity, self.legacy) if self.legacy is not None else (identity,)
            return claim_of_run(self.ledger, known, p.task_id, p.label_date, p.run_id,
                                str(self.root))
        except SQLAlchemyError as exc:
            log.error("ledger.claim_failed", ledger=self.ledger.shown_url, task=p.task_id,
                      error=first_line(exc))
            return None

    def keep(self, claim: Claim | None) -> None:
        """Before a verdict commit: extend the claim when its recipe ran long. The commit, hooks
        included, may itself take up to the timeout, and a claim that expired meanwhile would
        let another machine verify the task again. A claim younger than half the margin has
        time enough left, and costs no write."""
        if claim is None or self.ledger.unreachable:
            return
        taken = self.taken.get(claim.key)
        if taken is not None and time.monotonic() - taken < CLAIM_MARGIN / 2:
            return
        try:
            still = keep(self.ledger, claim, ttl=self.ttl)
        except SQLAlchemyError as exc:
            log.error("ledger.claim_failed", ledger=self.ledger.shown_url, task=claim.task_id,
                      error=first_line(exc))
            return  # the claim runs out by itself; the verdict is written all the same
        self.taken[claim.key] = time.monotonic()
        if not still:
            log.warning("claim.lost", task=claim.task_id, label_date=claim.label_date,
                        run_id=claim.run_id, reason="it expired before the verdict was written")

    def settle(self, claim: Claim | None, result: Attempt | None) -> None:
        """A committed verdict finishes the claim; anything else lets any machine try again."""
        if claim is not None:
            settle(self.ledger, claim, result)
