"""The committed backlog-fixtures: what we read from them, our edits on the hand-written edge
files (CRLF, BOM, flow labels, no final newline, legacy notes) read back by the real CLI, and the
fixtures being exactly what `backlog-fixtures/generate.py` makes with the CLI today."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from backlog_helpers import backlog_cli, git, run_cli
from project import FIXTURES

from jobs.backlog.edit import add_label, append_notes, remove_label, set_status, set_updated_date
from jobs.backlog.scan import (
    read_task,
    scan,
    write_task,
)

WHEN = datetime(2026, 11, 30, 7, 30, 45, tzinfo=UTC)
SUMMARY = "verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1 after 0.1s\n    boom"


def summary(root: Path) -> list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]]:
    return [(t.id, t.folder, t.status, t.labels, t.verify_cmd_lines) for t in scan(root).tasks]


def test_demo_fixture() -> None:
    result = scan(FIXTURES / "demo")
    assert result.errors == ()
    assert result.config.done_status == "Done" and result.config.reopen_status == "To Do"
    cmd = "verify-cmd: just verify-"
    assert summary(FIXTURES / "demo") == [
        ("TASK-1", "tasks", "Done", ("verify:2026-11-01", "infra"), (cmd + "disk",)),
        ("TASK-2", "tasks", "Done", ("verify:2026-11-15",), (cmd + "backup",)),
        ("TASK-3", "tasks", "Done", ("verify:2026-11-20",), (cmd + "slow",)),
        ("TASK-4", "tasks", "Done", ("verify:2099-01-01",), (cmd + "capacity",)),
        ("TASK-5", "tasks", "Done", ("verify:2026-11-01",), (cmd + "disk; touch pwned",)),
        ("TASK-6", "tasks", "In Progress", ("verify:2026-11-01",), (cmd + "disk",)),
        ("TASK-7", "completed", "Done", ("verify:2026-11-10",), (cmd + "logs",)),
    ]
    assert [t.title for t in result.tasks] == [
        "Rotate disk alerts", "Nightly backup restore", "Cache warmup",
        "Quarterly capacity review", "Hostile command", "Still in progress", "Log rotation"]


def test_case_fixtures() -> None:
    statuses = scan(FIXTURES / "cases/custom-statuses")
    assert statuses.config.statuses == ("Backlog", "Doing", "Verified")
    assert statuses.config.reopen_status == "Backlog"
    assert [(t.id, t.status, statuses.config.is_done(t.status)) for t in statuses.tasks] == [
        ("TASK-1", "Verified", True), ("TASK-2", "Doing", False)]
    prefix = scan(FIXTURES / "cases/custom-prefix")
    assert prefix.errors == ()
    assert [(t.id, t.verify_cmd_lines) for t in prefix.tasks] == [
        ("OPS-1", ("verify-cmd: just verify-disk",)),
        ("OPS-1.1", ("verify-cmd: just verify-sub",)),  # written as a "- " list item
        ("TASK-9", ())]  # outside the CLI's `ops-*.md`, yet a task file: the SPEC's `*.md`
    edge = scan(FIXTURES / "cases/edge")
    assert edge.errors == ()
    assert [(t.id, t.folder, t.status, t.labels) for t in edge.tasks] == [
        ("TASK-1", "tasks", "Done", ("verify:2026-11-01",)),
        ("TASK-2", "tasks", "Done", ("verify:2026-11-01", "infra", "a b")),
        ("TASK-3", "tasks", "Done", ("verify:2026-11-01",)),
        ("TASK-4", "tasks", "Done", ("verify:2026-11-02",)),
        ("TASK-5", "tasks", "Done", ("verify:2026-11-01", "docs")),
        ("task-6", "tasks", "done", ("verify:2026-11-01",)),
        ("TASK-007", "tasks", "To Do", ()),
        ("TASK-8", "completed", "Done", ("verify:2026-11-01",)),
    ]
    assert edge.tasks[5].title.startswith("A long title folded by a person")
    assert all(t.verify_cmd_lines for t in edge.tasks if t.labels)


def test_broken_fixture_reports_every_bad_file() -> None:
    result = scan(FIXTURES / "cases/broken")
    assert [t.id for t in result.tasks] == ["TASK-1", "TASK-7"]  # `*.md`: any file name
    got = {(e.path.name, e.line, e.message.split(" (")[0].split(":")[0]) for e in result.errors}
    assert got == {
        ("task-010 - Padded-ten.md", 2, "ambiguous id TASK-010"),
        ("task-10 - Ten.md", 2, "ambiguous id TASK-10"),
        ("task-2 - No-frontmatter.md", 1, "no frontmatter"),
        ("task-3 - Invalid-yaml.md", 3, "invalid YAML in frontmatter"),
        ("task-4 - Scalar-labels.md", 5, "labels is not a list"),
        ("task-5 - No-id.md", None, "missing id"),
        ("task-6 - Dup-A.md", 2, "ambiguous id TASK-6"),
        ("task-6 - Dup-B.md", 2, "ambiguous id TASK-6"),
        ("task-8 - Not-utf8.md", 5, "not valid UTF-8"),
        ("task-9 - Empty.md", None, "empty file"),
    }


def _fail_edit(data: bytes, label: str) -> bytes:
    out = append_notes(add_label(set_status(data, "To Do"), "verify-failed"), SUMMARY)
    return set_updated_date(out, WHEN)


def test_edge_edits_keep_file_style(tmp_path: Path) -> None:
    edge = FIXTURES / "cases/edge/backlog/tasks"
    crlf = (edge / "task-2 - Crlf-flow.md").read_bytes()
    out = _fail_edit(crlf, "verify:2026-11-01")
    assert out.count(b"\n") == out.count(b"\r\n")  # still CRLF everywhere
    assert b"labels: [verify:2026-11-01, \"infra\", 'a b', verify-failed]\r\n" in out
    assert b"verify-cmd: just verify-disk\r\n\r\nverify-failed 2026-11-30T07:30:12Z" in out
    assert b"updated_date: '2026-11-30 07:30'\r\n" in out
    bom = (edge / "task-3 - Bom.md").read_bytes()
    out = remove_label(bom, "verify:2026-11-01")
    assert out == bom.replace(b"labels:\n  - 'verify:2026-11-01'\n", b"labels: []\n")
    assert out.startswith(b"\xef\xbb\xbf---\n")
    no_nl = (edge / "task-4 - No-final-newline.md").read_bytes()
    out = _fail_edit(no_nl, "verify:2026-11-02")
    assert out.endswith(b"    boom\n<!-- SECTION:NOTES:END -->")
    assert b"updated_date" not in out  # the file never had one
    legacy = (edge / "task-5 - Legacy-notes.md").read_bytes()
    out = _fail_edit(legacy, "verify:2026-11-01")
    assert b"- verify:2026-11-01\n- docs\n- verify-failed\n" in out
    assert b"updated_date: 2026-11-30\n" in out  # date-only stays date-only
    # The CLI reads legacy notes up to the next heading it knows: the custom section is part of
    # them, and the summary goes after it, where --append-notes puts it.
    assert out.endswith(b"verify-cmd: just verify-disk\n\n## My Custom Section\n\nStays where "
                        b"it is.\n\nverify-failed 2026-11-30T07:30:12Z: `just verify-disk` "
                        b"exited 1 after 0.1s\n    boom\n")
    hand = (edge / "task-6 - Hand-keys.md").read_bytes()
    out = _fail_edit(hand, "verify:2026-11-01")
    assert out.startswith(hand.split(b"status:")[0])
    assert b"status: To Do\nassignee: @alice\nowner: someone\n" in out
    assert b"labels: [verify:2026-11-01, verify-failed]\n---\nverify-cmd: just verify-disk\n\n" \
        b"## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\nverify-failed" in out


def test_cli_reads_our_edits_of_edge_files(tmp_path: Path) -> None:
    backlog_cli()
    root = tmp_path / "edge"
    shutil.copytree(FIXTURES / "cases/edge", root)
    git(root, "init", "-q", "-b", "main")
    expected_notes = {}
    for name, label in [("task-2 - Crlf-flow.md", "verify:2026-11-01"),
                        ("task-3 - Bom.md", "verify:2026-11-01"),
                        ("task-4 - No-final-newline.md", "verify:2026-11-02"),
                        ("task-5 - Legacy-notes.md", "verify:2026-11-01")]:
        path = root / "backlog/tasks" / name
        before = read_task(root, path, "tasks")
        write_task(path, _fail_edit(path.read_bytes(), label))
        expected_notes[before.id] = before
    write_task(root / "backlog/tasks/task-1 - Made-by-the-CLI.md",
               remove_label((root / "backlog/tasks/task-1 - Made-by-the-CLI.md").read_bytes(),
                            "verify:2026-11-01"))
    payload = json.loads(run_cli(root, ["task", "list", "--json"]).stdout)
    listed = {t["id"]: t for t in payload["tasks"]}
    assert listed["TASK-1"]["status"] == "Done" and listed["TASK-1"]["labels"] == []
    for task_id, before in expected_notes.items():
        assert listed[task_id]["status"] == "To Do"
        assert listed[task_id]["labels"] == [*before.labels, "verify-failed"]
    view = json.loads(run_cli(root, ["task", "view", "TASK-2", "--json"]).stdout)
    task = view.get("task", view)
    assert task["implementationNotes"] == "verify-cmd: just verify-disk\n\n" + SUMMARY
    view = json.loads(run_cli(root, ["task", "view", "TASK-5", "--json"]).stdout)
    task = view.get("task", view)
    # the CLI reads a legacy section up to the next *known* heading, so it also shows the custom
    # one: the summary comes after it, as the CLI's own --append-notes puts it
    assert task["implementationNotes"] == ("verify-cmd: just verify-disk\n\n## My Custom Section"
                                           "\n\nStays where it is.\n\n" + SUMMARY)


# Every case generate.py makes (its CASES), each regenerated by its own test so that the suite's
# workers share the CLI calls.
GENERATED = ["demo", "cases/custom-statuses", "cases/custom-prefix", "cases/edge", "cases/broken"]


def _files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and p.name != "generate.py" and "__pycache__" not in p.parts)


@pytest.mark.slow
@pytest.mark.parametrize("case", GENERATED)
def test_generate_reproduces_the_committed_fixtures(tmp_path: Path, case: str) -> None:
    backlog_cli()
    out = tmp_path / "fixtures"
    proc = subprocess.run(
        [sys.executable, str(FIXTURES / "generate.py"), "--out", str(out), "--only", case],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    made = _files(out)
    assert made == [Path(case) / rel for rel in _files(FIXTURES / case)]
    for rel in made:
        assert (out / rel).read_bytes() == (FIXTURES / rel).read_bytes(), rel


def test_every_committed_fixture_is_a_generated_case() -> None:
    def case_of(rel: Path) -> str | None:
        return next((case for case in GENERATED
                     if rel.parts[:len(Path(case).parts)] == Path(case).parts), None)

    owners = [case_of(rel) for rel in _files(FIXTURES)]
    assert None not in owners  # nothing is committed that generate.py does not make
    assert set(owners) == set(GENERATED)  # and every case it makes is committed


@pytest.mark.parametrize("case", ["demo", "cases/custom-statuses", "cases/custom-prefix",
                                  "cases/edge"])
def test_noop_edits_leave_fixture_bytes_alone(case: str) -> None:
    for task in scan(FIXTURES / case).tasks:
        assert remove_label(task.raw, "no-such-label") == task.raw
        for label in task.labels:
            assert add_label(task.raw, label.upper()) == task.raw
        assert set_status(task.raw, task.status) == task.raw
