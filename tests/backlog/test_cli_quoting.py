"""Scalars are quoted exactly as the Backlog.md CLI quotes them: checked against the real CLI.

One `task edit` adds a label of every odd shape (the CLI writes labels and the status with the same
YAML writer); one more sets an odd status. Our writer must give each value the CLI's bytes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import yaml
from backlog_helpers import CLI_TASK, CONFIG_YML, make_backlog, run_cli

from jobs.backlog.edit import set_status, set_updated_date
from jobs.backlog.yaml_quote import yaml_scalar

# Values whose quoting depends on their first, last or inner characters, or on what YAML would
# read them as. No commas: the CLI splits label values at them. No two equal but for case: the
# CLI keeps only the first.
ODD = ["=", "=x", "x=", "a#b", "a #b", "x#", "~", "a:b", "a: b", "x:", "<<", "-", "--", "-x",
       "?x", "x?", "!x", "%x", "&x", "*x", "|x", ">x", "'x", '"x', "`x", "@x", "x@", "0o17",
       "0x1F", "1e3", "+1", ".5", "1_000", "NaN", ".nan", ".inf", "Yes", "ON", "y", "null",
       "2026-01-01T10:00:00", "2026-01-01", "12:30", "1:20:30", "a\\b", "é", "x]", "[x", "x}",
       "{x", "#", "a%", "it's", "a b", "verify-failed"]
STATUSES = ["To Do", "=", "a#b", "x: y", "Done"]


def _repo(root: Path) -> Path:
    """A backlog written as the CLI writes one (no CLI call spent on making it)."""
    quoted = ", ".join('"' + s.replace('"', '\\"') + '"' for s in STATUSES)
    config = re.sub(r"^statuses: .*$", f"statuses: [{quoted}]", CONFIG_YML, flags=re.M)
    return make_backlog(root, {"tasks/task-1 - Odd.md": CLI_TASK}, config)


def _task(root: Path) -> Path:
    (path,) = (root / "backlog" / "tasks").glob("task-1 - *.md")
    return path


def test_labels_of_every_odd_shape_are_quoted_as_the_cli_quotes_them(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    args = ["task", "edit", "1"]
    for value in ODD:
        args += ["--add-label", value]
    run_cli(root, args)
    text = _task(root).read_text()
    block = text.split("\nlabels:\n", 1)[1].split("\ndependencies:", 1)[0]
    written = [line[len("  - "):] for line in block.splitlines()]
    values = [yaml.load("- " + raw, Loader=yaml.BaseLoader)[0] for raw in written]
    assert values == ["verify:2026-11-01", "infra", *ODD]  # every value kept, in order
    ours = {value: yaml_scalar(value) for value in values}
    assert ours == dict(zip(values, written, strict=True))


def test_an_odd_reopen_status_is_written_as_the_cli_writes_it(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    for status in ("=", "a#b", "x: y"):
        before = _task(root).read_bytes()
        run_cli(root, ["task", "edit", "1", "-s", status])
        cli = _task(root).read_bytes()
        m = re.search(rb"^updated_date: '([^']+)'", cli, re.M)
        assert m is not None
        when = datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
        assert set_updated_date(set_status(before, status), when) == cli, status
