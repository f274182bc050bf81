"""Fuzz (issue 9 item 2): no frontmatter, however odd, crashes the reader, the editor, `list` or
`run`.

Frontmatters are generated from YAML's less common corners — quoted and complex keys, flow
mappings, anchors and aliases, tags, document markers, odd indentation, tabs, stray text — around
the keys a task needs. The reader must return a task or a `TaskParseError`; every edit must
return bytes that read back as the intended change or raise `TaskEditError`, and never touch the
body or the line endings; `list` and `run`, called through `jobs.main`, must never report an
unexpected error.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_helpers import make_verify_repo

from jobs import main as cli
from jobs.backlog.edit import add_label, remove_label, set_status, set_updated_date
from jobs.backlog.scan import Task, TaskEditError, TaskParseError, parse_task
from jobs.backlog.task import BacklogConfig
from jobs.verify.rules import eligibility
from jobs.verify.rules import transition as verdicts

LABEL = "verify:2026-11-01"
KEYS = ["id", "title", "status", "labels", "updated_date", "assignee", "other"]
VALUES = {
    "id": ["TASK-1", "'TASK-1'", '"TASK-1"', "!!str TASK-1", "&i TASK-1", "[TASK-1]", ""],
    "title": ["A title", "'it''s'", "*i", "!t x", "{a: b}", "|\n  block\n  text", ">-\n  folded"],
    "status": ["Done", "'Done'", "!!str Done", "&s Done", "*s", "To Do", "[Done]"],
    "labels": [f"['{LABEL}']", f"\n  - '{LABEL}'\n  - keep", f'["{LABEL}", x]',
               f"!!seq ['{LABEL}']", f"&l ['{LABEL}']", "*l", f"\n- {LABEL}", "[]", "",
               f"\n    - '{LABEL}'", f"\n\t- '{LABEL}'", f"[ '{LABEL}' ,keep ]", "{a: 1}"],
    "updated_date": ["'2026-11-01 08:00'", "", "2026-11-01", "!!timestamp 2026-11-01", "# c"],
    "assignee": ["[]", "'@alice'", "@bob", "[@carol, dan]"],
    "other": ["x", "&o {a: [1, 2]}", "*o", "? y", "~", "null", "'a: b'"],
}
KEY_FORMS = ["{k}", "'{k}'", '"{k}"', "? {k}\n", "{k} ", "!!str {k}"]
EXTRA = ["", "# a comment", "%YAML 1.1", "...", "  ", "\t", "- stray", "key only", ": v",
         "&a", "? [a, b]\n: c", "'unterminated", "x: [1,\n  2]", "!!binary aGk="]


@st.composite
def frontmatters(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=0, max_size=7, unique=True))
    for needed in ("id", "status", "labels"):
        if needed not in keys and draw(st.integers(0, 9)) < 8:
            keys.insert(draw(st.integers(0, len(keys))), needed)
    if draw(st.integers(0, 6)) == 0:
        # the whole mapping as one flow mapping
        items = [f"{k}: {draw(st.sampled_from(VALUES[k])).strip() or '~'}" for k in keys]
        return "{" + ", ".join(i.replace("\n", " ") for i in items) + "}"
    lines: list[str] = []
    for k in keys:
        form = draw(st.sampled_from(KEY_FORMS))
        value = draw(st.sampled_from(VALUES[k]))
        key = form.format(k=k)
        if key.endswith("\n"):
            lines.append(key.rstrip("\n"))
            lines.append(":" + (" " + value if value and not value.startswith("\n") else value))
        else:
            sep = draw(st.sampled_from([": ", ":", ":  ", " : "]))
            lines.append(key + (sep if value and not value.startswith("\n") else ":") + value)
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(EXTRA)))
    indent = draw(st.sampled_from(["", "", "", " "]))
    return "\n".join(indent + line if i == 0 else line for i, line in enumerate(lines))


@st.composite
def task_files(draw: st.DrawFn) -> bytes:
    fm = draw(frontmatters())
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    body = draw(st.sampled_from([
        "\nverify-cmd: just verify-nope\n",
        "\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-nope"
        "\n<!-- SECTION:NOTES:END -->\n",
        "\nverify-cmd: just verify-nope",
    ]))
    text = "---\n" + fm + "\n---\n" + body
    return text.replace("\n", eol).encode()


# How an unexpected fault is reported (a task's reason, a file's problem, the CLI's one line);
# YAML's own messages ("found unexpected end of stream") are expected errors.
CRASH = re.compile(r"unexpected (error|[A-Z]\w*)")
CONFIG = BacklogConfig()
AT = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)


def body_of(data: bytes) -> bytes:
    return data.split(b"\n---", 1)[1].split(b"\n", 1)[1]


def read(data: bytes) -> Task | None:
    try:
        return parse_task(Path("task-1 - fuzz.md"), data, "tasks")
    except TaskParseError:
        return None


@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(task_files())
def test_reader_and_editor_never_crash_and_never_corrupt(data: bytes) -> None:
    task = read(data)
    if task is None:
        return
    eligibility.classify(task, CONFIG, date(2026, 11, 30))
    edits = [
        (lambda d: remove_label(d, LABEL), lambda t: LABEL not in t.labels),
        (lambda d: add_label(d, "verify-failed"), lambda t: "verify-failed" in t.labels),
        (lambda d: set_status(d, "To Do"), lambda t: t.status == "To Do"),
        (lambda d: set_updated_date(d, AT), lambda t: True),
    ]
    for edit, holds in edits:
        try:
            out = edit(data)
        except TaskEditError:
            continue
        after = read(out)
        assert after is not None, out
        assert holds(after), out
        assert after.id == task.id
        assert body_of(out) == body_of(data)
        assert out.count(b"\r\n") == out.count(b"\n") or b"\r\n" not in data
    for verdict in (verdicts.PASS, verdicts.FAIL):
        outcome = verdicts.Outcome(verdict, "verify-nope", exit_code=1, timeout=60)
        try:
            verdicts.apply(data, outcome, LABEL, "To Do", AT)
        except TaskEditError:
            pass


@pytest.fixture(scope="module")
def fuzz_repo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_verify_repo(tmp_path_factory.mktemp("fuzz"), tasks=[])


def put(repo_root: Path, data: bytes) -> None:
    path = repo_root / "backlog" / "tasks" / "task-1 - fuzz.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    subprocess.run(["git", "add", "-A"], cwd=repo_root, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "fuzz"], cwd=repo_root,
                   check=True)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=task_files())
def test_list_never_crashes(fuzz_repo, data: bytes,  # type: ignore[no-untyped-def]
                            capsys: pytest.CaptureFixture[str]) -> None:
    (fuzz_repo.root / "backlog" / "tasks").mkdir(parents=True, exist_ok=True)
    (fuzz_repo.root / "backlog" / "tasks" / "task-1 - fuzz.md").write_bytes(data)
    capsys.readouterr()
    rc = cli.main(["list", "--config", str(fuzz_repo.config_path), "--today", "2026-11-30",
                   "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    listing = json.loads(out)
    assert len(listing["tasks"]) + len(listing["unreadable"]) <= 1
    assert not CRASH.search(out + err), out + err


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=task_files())
def test_run_never_crashes(fuzz_repo, data: bytes,  # type: ignore[no-untyped-def]
                           capsys: pytest.CaptureFixture[str]) -> None:
    put(fuzz_repo.root, data)
    capsys.readouterr()
    rc = cli.main(["run", "--config", str(fuzz_repo.config_path), "--today", "2026-11-30",
                   "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 3), err
    assert out.strip(), err
    results = json.loads(out)["results"]
    assert not [r for r in results if CRASH.search(r["reason"] or "")], results
    assert not CRASH.search(err), err
    assert fuzz_repo.status() == ""
