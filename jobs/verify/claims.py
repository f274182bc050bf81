"""The claims of one clone in one run: a due task is claimed in the ledger before its recipe runs,
so each verification runs once across every machine sharing the ledger (SPEC "Several
machines"). The storage side of the protocol is jobs/ledger/claims.py.
"""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from jobs.core.logs import get_logger
from jobs.core.text import first_line
from jobs.core.urls import normalise_remote
from jobs.git import repo as git
from jobs.ledger.claims import Claim, Held, claim_key, keep, settle, take
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger

log = get_logger("loop-jobs.claims")

# Beyond timeout + kill_grace: starting `just`, writing the verdict and committing it.
CLAIM_MARGIN = 60.0


class RepoClaims:
    """The claims of one clone in one run (the caller holds the clone's lock)."""

    def __init__(self, ledger: Ledger, root: Path, branch: str, ttl: float) -> None:
        self.ledger = ledger
        self.root = root
        self.branch = branch
        self.ttl = ttl
        self.identity: str | None = None
        self.taken: dict[str, float] = {}  # claim key -> when we took or last extended it

    def key(self, task_id: str | None, label_date: str | None, run_id: str) -> Claim | None:
        if task_id is None or label_date is None:
            return None
        if self.identity is None:
            # One look per repository and run, and only when something is due.
            url = git.branch_remote_url(self.root, self.branch)
            self.identity = normalise_remote(url, self.root) if url else str(self.root)
        return Claim(claim_key(self.identity, task_id, label_date), self.identity, task_id,
                     label_date, run_id, self.ledger.machine)

    def take(self, task_id: str, label_date: str | None, run_id: str) -> Claim | Held | str | None:
        """Our claim; who holds it; why it cannot be claimed; or None when nothing to claim."""
        claim = self.key(task_id, label_date, run_id)
        if claim is None:
            return None
        if self.ledger.unreachable:
            return "not run: the ledger is unreachable, so it cannot be claimed"
        try:
            held = take(self.ledger, claim, repo=str(self.root), ttl=self.ttl)
        except SQLAlchemyError as exc:
            log.error("ledger.claim_failed", ledger=self.ledger.shown_url, task=task_id,
                      error=first_line(exc))
            self.ledger.unreachable = True
            return f"not run: cannot claim it in the ledger: {first_line(exc)}"
        if held is None:
            self.taken[claim.key] = time.monotonic()
            return claim
        return held

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
