"""`loop-verify history`: the recorded attempts (or, with `--runs`, the runs), from the ledger."""

from __future__ import annotations

import json
import os
from datetime import datetime, time

from jobs.commands.common import parse_date, setup
from jobs.config.load import expand_user
from jobs.core.errors import UsageError
from jobs.ledger.model import Run, iso_utc
from jobs.ledger.runs import read_runs
from jobs.ledger.store import Ledger
from jobs.verify.summary import SAID, elapsed
from jobs.verify.terminal import emit, format_line, one_line, repo_names


def main(*, config_path: str | None, since: str | None, repo: str | None, machine: str | None,
         as_json: bool, runs: bool = False) -> int:
    config = setup(config_path)
    since_day = parse_date(since, "--since") if since else None
    # The day starts in the configured zone, as `run --today` and `review --since` take a day.
    start = datetime.combine(since_day, time.min, tzinfo=config.timezone) if since_day else None
    ledger = Ledger(config.ledger, machine=config.machine)
    try:
        if runs:
            if repo:
                raise UsageError("--runs lists whole runs: it takes no --repo")
            return show_runs(read_runs(ledger, since=start, machine=machine or None), as_json)
        repo_path = matching_repo(ledger, repo) if repo else None
        attempts = ledger.history(since=start, repo=repo_path, machine=machine or None)
    finally:
        ledger.close()
    if as_json:
        emit(json.dumps({"attempts": [a.to_json() for a in attempts]}, sort_keys=True))
        return 0
    if not attempts:
        emit("no attempts recorded" + (f" since {since_day.isoformat()}" if since_day else "")
             + (f" on {machine}" if machine else ""))
        return 0
    names = repo_names(a.repo for a in attempts)
    emit("\n".join(f"{iso_utc(a.started_at)}  {one_line(a.machine or '-')}  "
                   f"{format_line(a, names=names)}" for a in attempts))
    return 0


def matching_repo(ledger: Ledger, raw: str) -> str:
    """The recorded repository `--repo` names: a path (anything spelled as one, or a folder
    that exists), else a repository's name (its folder's name, as `review` takes it). A usage
    error saying which repositories the ledger knows when none matches."""
    known = ledger.repos()
    path = expand_user(raw, "--repo", "--repo")
    if os.sep in raw or raw.startswith("~") or path.is_dir():
        wanted = str(path.resolve())
        if wanted in known:
            return wanted
        raise UsageError(f"--repo {raw}: no attempt recorded for the repository at {wanted}"
                         + _known(known))
    named = [r for r in known if r.rstrip("/").rsplit("/", 1)[-1] == raw]
    if len(named) == 1:
        return named[0]
    if not named:
        raise UsageError(f"--repo {raw}: no repository of that name in the ledger"
                         + _known(known))
    raise UsageError(f"--repo {raw}: several repositories have that name ("
                     + ", ".join(named) + "); give the path")


def _known(known: list[str]) -> str:
    if not known:
        return " (the ledger holds no attempts yet)"
    shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
    return f" (it knows {shown})"


def show_runs(found: list[Run], as_json: bool) -> int:
    if as_json:
        emit(json.dumps({"runs": [r.to_json() for r in found]}, sort_keys=True))
        return 0
    if not found:
        emit("no runs recorded")
        return 0
    emit("\n".join(run_line(r) for r in found))
    return 0


def run_line(run: Run) -> str:
    """`2026-11-30T07:30:02Z  studio  systemd  exit 1  2m14s  3 passed, 1 failed`."""
    if run.ended_at is None:
        how = "did not finish"
    else:
        took = elapsed((run.ended_at - run.started_at).total_seconds())
        counts = ", ".join(f"{run.counts[v]} {SAID[v]}" for v in SAID if run.counts.get(v))
        how = f"exit {run.exit_code}  {took}  {counts or 'nothing due'}"
    return one_line(f"{iso_utc(run.started_at)}  {run.machine}  {run.trigger:<7}  {how}")
