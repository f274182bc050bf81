"""What every task of one repository in one run shares, and how a task's attempt starts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jobs.config.load import Config, RepoConfig
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger
from jobs.process import recipe as runner
from jobs.verify.rules import eligibility

Ticker = Callable[[str, float], None]


@dataclass
class RepoContext:
    """What every task of one repository in one run shares."""

    config: Config
    repo: RepoConfig
    run_id: str
    ledger: Ledger | None
    stop: threading.Event | None
    ticker: Ticker | None
    just: str
    recipes: runner.Recipes | None = None   # the justfile's recipes, read once per repository
    justfile: Path | None = None
    committed: bool = False  # a verdict commit was made: git's auto maintenance is due
    scope: runner.Scope | None = None  # the run's claim on the recipes it starts
    before_commit: Callable[[], None] | None = None  # the run's part before a verdict commit
    name: str = ""  # how output names the repository

    @property
    def root(self) -> Path:
        return self.repo.path

    def attempt(self, verdict: str, *, task: eligibility.Classified | None = None,
                reason: str | None = None, started: datetime | None = None) -> Attempt:
        now = datetime.now(UTC)
        result = Attempt(run_id=self.run_id, started_at=started or now, ended_at=now,
                         repo=str(self.root), verdict=verdict, reason=reason)
        if task is not None:
            result.task_id = task.task.id
            result.task_path = str(task.task.path.relative_to(self.root))
            result.recipe = task.recipe
            result.label_date = task.label_date.isoformat() if task.label_date else None
        return result
