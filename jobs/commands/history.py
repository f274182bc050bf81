"""`loop-verify history`: the recorded attempts, from the ledger."""

from __future__ import annotations

import json

from jobs.commands.common import parse_date, setup
from jobs.config.load import expand_user
from jobs.ledger.model import iso_utc
from jobs.ledger.store import Ledger
from jobs.verify.terminal import emit, format_line, one_line, repo_names


def main(*, config_path: str | None, since: str | None, repo: str | None, machine: str | None,
         as_json: bool) -> int:
    config = setup(config_path)
    since_day = parse_date(since, "--since") if since else None
    repo_path = str(expand_user(repo, "--repo", "--repo").resolve()) if repo else None
    ledger = Ledger(config.ledger, machine=config.machine)
    try:
        attempts = ledger.history(since=since_day, repo=repo_path, machine=machine or None)
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
