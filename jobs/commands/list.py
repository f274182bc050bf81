"""`loop-verify list`: every task with a verify: label and its state."""

from __future__ import annotations

import argparse
import json
from typing import Any

from jobs import backlog, eligibility
from jobs.commands.common import parse_date, setup
from jobs.eligibility import today_in
from jobs.errors import EXIT_OK, EXIT_UNCHECKED, UsageError
from jobs.output import one_line


def main(args: argparse.Namespace) -> int:
    config = setup(args)
    if not config.repos:
        raise UsageError("no repositories to list: name them under `repos:` in the "
                         "configuration or pass --repo PATH")
    today = parse_date(args.today, "--today") if args.today else today_in(config.timezone)
    rows: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    repo_failed = False
    for repo in config.repos:
        try:
            scan = backlog.scan(repo.path)
        except backlog.BacklogError as exc:
            repo_failed = True
            problems.append({"repo": str(repo.path), "path": exc.path, "line": exc.line,
                             "message": str(exc)})
            continue
        problems.extend({"repo": str(repo.path), "path": str(e.path), "line": e.line,
                         "message": e.message} for e in scan.errors)
        for task in scan.tasks:
            c = eligibility.classify(task, scan.config, today)
            if c is None:
                continue
            rows.append({
                "repo": str(repo.path), "id": task.id, "title": task.title,
                "path": str(task.path.relative_to(repo.path)), "status": task.status,
                "state": c.state, "reason": c.reason, "label": c.label,
                "label_date": c.label_date.isoformat() if c.label_date else None,
                "recipe": c.recipe,
            })
    if args.json:
        print(json.dumps({"today": today.isoformat(), "tasks": rows, "unreadable": problems},
                         sort_keys=True))
    else:
        for row in rows:
            name = row["repo"].rsplit("/", 1)[-1]
            line = f"{row['state']:<9} {name} {row['id']}"
            if row["recipe"]:
                line += f"  just {row['recipe']}"
            if row["label_date"]:
                line += f"  ({row['label_date']})"
            if row["reason"] and row["state"] != eligibility.WAITING:
                line += f": {row['reason']}"
            print(one_line(line))
        for p in problems:
            where = f"{p['path']}:{p['line']}" if p["line"] else p["path"]
            if p["message"].startswith(where):
                print(one_line(f"unreadable {p['message']}"))
            else:
                print(one_line(f"unreadable {where}: {p['message']}"))
        if not rows and not problems:
            print("no task carries a verify: label")
    return EXIT_UNCHECKED if repo_failed else EXIT_OK
