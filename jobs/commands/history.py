"""`loop-verify history`: the recorded attempts, from the ledger."""

from __future__ import annotations

import argparse
import json

from jobs.commands.common import parse_date, setup
from jobs.config import expand_user
from jobs.ledger import Ledger, iso_utc
from jobs.output import emit, format_line, one_line, repo_names


def main(args: argparse.Namespace) -> int:
    config = setup(args, repos=False)
    since = parse_date(args.since, "--since") if args.since else None
    repo = str(expand_user(args.repo, "--repo", "--repo").resolve()) if args.repo else None
    ledger = Ledger(config.ledger, machine=config.machine)
    try:
        attempts = ledger.history(since=since, repo=repo, machine=args.machine or None)
    finally:
        ledger.close()
    if args.json:
        emit(json.dumps({"attempts": [a.to_json() for a in attempts]}, sort_keys=True))
        return 0
    if not attempts:
        emit("no attempts recorded" + (f" since {since.isoformat()}" if since else "")
             + (f" on {args.machine}" if args.machine else ""))
        return 0
    names = repo_names(a.repo for a in attempts)
    emit("\n".join(f"{iso_utc(a.started_at)}  {one_line(a.machine or '-')}  "
                   f"{format_line(a, names=names)}" for a in attempts))
    return 0
