"""Round trips over real Backlog.md repositories (../shared/corpora/backlog/<owner__name>/).

Every task file the reader accepts must survive a no-op edit byte for byte, and removing one of its
labels must change only that label's line(s) (the whole `labels:` line for a flow list, `labels:
[]` for the last one) and `updated_date`.

Measured on the corpus of 2026-11-30 (9 repositories, 4,439 .md files under their backlog/
folders, of which 2,917 are `*.md` in tasks/ or completed/): 2,913 tasks read, 4 files refused
— CRJFisher__ariadne task-110, task-111 and task-150, and MrLesk__Backlog.md tasks/readme.md,
which are plain Markdown without frontmatter ("no frontmatter"). No duplicate ids, no YAML errors.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from project import CORPORA

from jobs.backlog.edit import add_label, remove_label, set_status, set_updated_date
from jobs.backlog.scan import (
    FRONTMATTER_RE,
    Task,
    parse_task,
    scan,
)

WHEN = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)
EXPECTED = {"repos": 9, "tasks": 2913, "errors": 4}
EXPECTED_ERRORS = Counter({"no frontmatter": 4})


def _repos() -> list[Path]:
    if not CORPORA.is_dir():
        return []
    return sorted(p for p in CORPORA.iterdir() if (p / "backlog").is_dir())


pytestmark = pytest.mark.skipif(not _repos(), reason=f"no Backlog.md corpus at {CORPORA} "
                                "(it is only on the development machine)")


def _body(data: bytes) -> str:
    text = data.decode("utf-8")
    m = FRONTMATTER_RE.match(text)
    assert m is not None
    return text[m.end():]


def _check_remove(task: Task) -> None:
    label = task.labels[0]
    after = set_updated_date(remove_label(task.raw, label), WHEN)
    again = parse_task(task.path, after, task.folder)
    assert again.labels == tuple(x for x in task.labels if x.lower() != label.lower())
    assert (again.id, again.title, again.status, again.verify_cmd_lines) == (
        task.id, task.title, task.status, task.verify_cmd_lines)
    assert _body(after) == _body(task.raw)
    old = task.raw.decode().splitlines(keepends=True)
    new = after.decode().splitlines(keepends=True)
    in_labels = False
    label_lines: set[int] = set()
    for n, line in enumerate(old):
        if re.match(r"labels\s*:", line):
            in_labels = True
            label_lines.add(n)
        elif in_labels and (line.startswith((" ", "-", "\t")) or not line.strip()):
            label_lines.add(n)
        else:
            in_labels = False
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        for i in range(i1, i2):
            assert i in label_lines or old[i].startswith("updated_date:"), (task.path, old[i])
        for j in range(j1, j2):
            assert new[j].startswith(("labels:", "updated_date:")), (task.path, new[j])


def test_corpus_round_trip(record_property: Callable[[str, object], None],
                           capsys: pytest.CaptureFixture[str]) -> None:
    repos = _repos()
    n_tasks = 0
    n_removed = 0
    errors: list[str] = []
    reasons: Counter[str] = Counter()
    styles: Counter[str] = Counter()
    for repo in repos:
        result = scan(repo)
        n_tasks += len(result.tasks)
        for err in result.errors:
            errors.append(str(err))
            reasons[err.message.split(" (")[0].split(":")[0]] += 1
        for task in result.tasks:
            raw = task.raw
            assert remove_label(raw, "no-such-label-anywhere") == raw
            assert set_status(raw, task.status) == raw
            for label in task.labels:
                assert add_label(raw, label.swapcase()) == raw
            if task.labels:
                m = re.search(rb"^labels[ \t]*:[ \t]*(\S?)", raw, re.MULTILINE)
                styles["flow" if m and m.group(1) == b"[" else "block"] += 1
                _check_remove(task)
                n_removed += 1
    summary = (f"backlog corpus: {len(repos)} repositories, {n_tasks} tasks read, "
               f"{len(errors)} files refused ({dict(reasons)}), label removals checked on "
               f"{n_removed} tasks ({dict(styles)})")
    record_property("backlog_corpus", summary)
    with capsys.disabled():
        print(f"\n{summary}")
        for line in errors:
            print(f"  refused: {line}")
    assert {"repos": len(repos), "tasks": n_tasks, "errors": len(errors)} == EXPECTED
    assert reasons == EXPECTED_ERRORS
