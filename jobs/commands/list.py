"""`loop-verify list`: every task with a verify: label and its state.

It reads task files and nothing else, so it loads only what that needs: no ledger, no git, no
structured logging (the log is opened only to record an unexpected fault).
"""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING, Any

from jobs.backlog import scan as backlog
from jobs.commands.common import check_log_file, no_repos_hint, parse_date
from jobs.config.load import load_config, with_repos
from jobs.core import errors
from jobs.core.errors import EXIT_OK, EXIT_UNCHECKED, UsageError
from jobs.verify.rules import eligibility
from jobs.verify.terminal import emit, natural_key, one_line, repo_names

if TYPE_CHECKING:
    from datetime import date

    from jobs.config.load import Config


def main(*, config_path: str | None, repos: list[str] | None, today: str | None,
         as_json: bool) -> int:
    config = load_config(config_path)
    if repos:
        config = with_repos(config, repos)
    check_log_file(config)
    errors.crash_log = config.log_file
    if not config.repos:
        raise UsageError(f"no repositories to list: {no_repos_hint(config)}")
    day = parse_date(today, "--today") if today else eligibility.today_in(config.timezone)
    # The scan makes tens of thousands of objects that all live until the output is written and
    # form no cycles: the collector's passes over them would cost ~7% of a 20,000-task list.
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows, problems, repo_failed = _scan_all(config, day)
        if as_json:
            import json  # only here: json and the re it imports cost a text listing's start-up

            out = json.dumps({"today": day.isoformat(), "tasks": rows, "unreadable": problems},
                             sort_keys=True)
        else:
            names = repo_names(str(r.path) for r in config.repos)
            out = "\n".join(text_lines(rows, problems, names))
    finally:
        if collecting:
            gc.enable()
    emit(out)
    return EXIT_UNCHECKED if repo_failed else EXIT_OK


def _scan_all(config: Config, day: date) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                  bool]:
    """(rows, unreadable, whether a repository could not be read at all)."""
    rows: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    repo_failed = False
    for repo in config.repos:
        try:
            scan = backlog.scan(repo.path, verify_only=True)
        except backlog.BacklogError as exc:
            repo_failed = True
            problems.append({"repo": str(repo.path), "path": exc.path, "line": exc.line,
                             "message": str(exc)})
            continue
        problems.extend({"repo": str(repo.path), "path": str(e.path), "line": e.line,
                         "message": e.message} for e in scan.errors)
        root = str(scan.root) + os.sep
        where = str(repo.path)
        first = len(rows)
        for task in scan.tasks:
            c = eligibility.classify(task, scan.config, day)
            if c is None:
                continue
            path = str(task.path)
            rows.append({
                "repo": where, "id": task.id, "title": task.title,
                "path": path[len(root):] if path.startswith(root)
                else str(task.path.relative_to(repo.path)), "status": task.status,
                "state": c.state, "reason": c.reason, "label": c.label,
                "label_date": c.label_date.isoformat() if c.label_date else None,
                "recipe": c.recipe,
            })
        due = [row for row in rows[first:] if row["state"] == eligibility.DUE]
        if due:
            # One `just` per repository with something due: say now what the run would fail.
            from jobs.verify.recipes import recipe_problems

            missing = recipe_problems(repo.path, (row["recipe"] for row in due))
            for row in due:
                row["reason"] = missing.get(row["recipe"])
        # TASK-5 before TASK-10, each repository in the configured order.
        rows[first:] = sorted(rows[first:], key=lambda row: (natural_key(row["id"] or ""),
                                                            row["path"]))
    return rows, problems, repo_failed


def text_lines(rows: list[dict[str, Any]], problems: list[dict[str, Any]],
               names: dict[str, str]) -> list[str]:
    lines = []
    for row in rows:
        line = f"{row['state']:<9} {names.get(row['repo'], row['repo'])} {row['id']}"
        if row["recipe"]:
            line += f"  just {row['recipe']}"
        if row["label_date"]:
            line += f"  ({row['label_date']})"
        if row["reason"] and row["state"] != eligibility.WAITING:
            line += f": {row['reason']}"
        if row["state"] == eligibility.REFUSED:
            line += f" [{row['path']}]"  # the file to fix: its name need not resemble the id
        lines.append(one_line(line))
    for p in problems:
        where = f"{p['path']}:{p['line']}" if p["line"] else p["path"]
        if p["message"].startswith(where):
            lines.append(one_line(f"unreadable {p['message']}"))
        else:
            lines.append(one_line(f"unreadable {where}: {p['message']}"))
    if not rows and not problems:
        lines.append("no task carries a verify: label")
    return lines
