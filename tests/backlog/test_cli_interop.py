"""Interop with the real Backlog.md CLI: our edits are the CLI's edits, byte for byte.

One repository is built with `backlog init` and `backlog task create/edit` (once per session); each
scenario then snapshots a task file, lets the CLI make an edit, makes the same edit with our
functions on the snapshot (with `when` = the CLI's new updated_date) and compares bytes. The CLI
then reads our files back (`task view --plain/--json`, `task list --plain/--json`).

Without `backlog` on PATH these tests fail, unless LOOP_JOBS_NO_BACKLOG_CLI=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from backlog_helpers import backlog_cli, git, make_backlog, run_cli

from jobs.backlog.edit import add_label, append_notes, remove_label, set_status, set_updated_date
from jobs.backlog.scan import (
    Scan,
    Task,
    read_task,
    scan,
    write_task,
)
from jobs.core.fs import exclusive_lock

SUMMARY = ("verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1 after 12.4s "
           "(timeout 30m)\nlast lines of output:\n    disk usage 97% > 90%\n    it's \"bad\" "
           "#1: [x]\nfull output: /state/runs/2026-11-30/TASK-1.log")


@dataclass(frozen=True)
class Scenario:
    """One task as the CLI creates it, and one edit made both ways."""

    title: str
    create: tuple[str, ...]  # extra `task create` args
    prepare: tuple[str, ...]  # a first `task edit` (gives the file an updated_date), or ()
    cli_edit: tuple[str, ...]  # the `task edit` args under test
    ours: Callable[[bytes], bytes]  # our edit (updated_date handled by the test)
    status: str
    labels: tuple[str, ...]
    notes: str | None


def _fail(label: str) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        return append_notes(add_label(set_status(data, "To Do"), "verify-failed"), SUMMARY)
    return edit


SCENARIOS = [
    Scenario(  # pass: the verify label goes, everything else stays
        "Rotate disk alerts", ("-d", "Tune the disk alert thresholds.", "--ac", "Alert fires"),
        ("-s", "Done", "--add-label", "verify:2026-11-01", "--add-label", "infra",
         "--notes", "verify-cmd: just verify-disk"),
        ("--remove-label", "verify:2026-11-01"),
        lambda d: remove_label(d, "verify:2026-11-01"),
        "Done", ("infra",), "verify-cmd: just verify-disk"),
    Scenario(  # fail with notes already there: reopen, add verify-failed, append the summary
        "Nightly backup restore", ("-l", "verify:2026-11-15", "--notes",
                                   "verify-cmd: just verify-backup"),
        ("-s", "Done"),
        ("-s", "To Do", "--add-label", "verify-failed", "--append-notes", SUMMARY),
        _fail("verify:2026-11-15"),
        "To Do", ("verify:2026-11-15", "verify-failed"),
        "verify-cmd: just verify-backup\n\n" + SUMMARY),
    Scenario(  # fail without a notes section: it is created after the plan, before the summary
        "Cache warmup", ("-d", "Warm it.", "--ac", "one", "--dod", "tests pass", "--plan",
                         "1. a\n2. b", "--final-summary", "Shipped.", "-l", "verify:2026-11-20"),
        ("-s", "Done"),
        ("-s", "To Do", "--add-label", "verify-failed", "--append-notes", SUMMARY),
        _fail("verify:2026-11-20"),
        "To Do", ("verify:2026-11-20", "verify-failed"), SUMMARY),
    Scenario(  # fail with AC + DoD and comments but no notes: notes go after the DoD
        "Log rotation", ("--ac", "a", "--dod", "d", "-l", "verify:2026-11-10,ops"),
        ("-s", "Done", "--comment", "looks good", "--comment-author", "bot"),
        ("-s", "To Do", "--add-label", "verify-failed", "--append-notes", SUMMARY),
        _fail("verify:2026-11-10"),
        "To Do", ("verify:2026-11-10", "ops", "verify-failed"), SUMMARY),
    Scenario(  # comments only: notes go before Comments; remove + add in one edit
        "Quoting zoo", ("-l", "yes,@x,a b,x: y,it's,123,2026-12-01,verify:2026-12-01,UPPER"),
        ("-s", "Done", "--comment", "c", "--comment-author", "bot"),
        ("--remove-label", "Upper", "--remove-label", "YES", "--add-label", "#tag",
         "--add-label", "true", "--append-notes", "first\n\n\n\nsecond  \n"),
        lambda d: append_notes(add_label(add_label(remove_label(remove_label(
            d, "Upper"), "YES"), "#tag"), "true"), "first\n\n\n\nsecond  \n"),
        "Done", ("@x", "a b", "x: y", "it's", "123", "2026-12-01", "verify:2026-12-01", "#tag",
                 "true"), "first\n\nsecond"),
    Scenario(  # the last label removed gives `labels: []`; status set back to In Progress
        "Still in progress", ("-l", "verify:2026-11-01"),
        ("-s", "In Progress"),
        ("--remove-label", "VERIFY:2026-11-01", "-s", "Done"),
        lambda d: set_status(remove_label(d, "VERIFY:2026-11-01"), "Done"),
        "Done", (), None),
    Scenario(  # a file the CLI created and never edited has no updated_date: the CLI adds one
        "Fresh task", ("-s", "Done", "-l", "verify:2026-11-01"),
        (),
        ("-s", "To Do", "--add-label", "verify-failed", "--append-notes", SUMMARY),
        _fail("verify:2026-11-01"),
        "To Do", ("verify:2026-11-01", "verify-failed"), SUMMARY),
]


@dataclass
class Repo:
    root: Path
    before: Path  # the repository as it was before the edits under test
    ids: list[str]
    originals: dict[str, bytes]
    cli_results: dict[str, bytes]
    list_json_before: list[dict[str, object]]
    scan_before: Scan


def _path_of(root: Path, task_id: str) -> Path:
    number = task_id.split("-", 1)[1]
    (path,) = (root / "backlog" / "tasks").glob(f"task-{number} - *.md")
    return path


def _updated(data: bytes) -> datetime:
    m = re.search(rb"^updated_date: '(\d{4}-\d{2}-\d{2} \d{2}:\d{2})'", data, re.MULTILINE)
    assert m is not None, data
    return datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _list_json(root: Path) -> list[dict[str, object]]:
    payload = json.loads(run_cli(root, ["task", "list", "--json"]).stdout)
    tasks: list[dict[str, object]] = payload["tasks"]
    return tasks


def _build(root: Path, before: Path) -> dict[str, object]:
    """The repository, made by the CLI at `root` (with a copy at `before` of how it was before
    the edits under test); what the tests need to know of it, as JSON."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    run_cli(root, ["init", "X", "--defaults", "--integration-mode", "none"])
    ids = []
    for sc in SCENARIOS:
        out = run_cli(root, ["task", "create", sc.title, *sc.create, "--plain"]).stdout
        m = re.search(r"Task (TASK-\d+)", out)
        assert m is not None, out
        ids.append(m.group(1))
        if sc.prepare:
            run_cli(root, ["task", "edit", m.group(1), *sc.prepare])
    list_before = _list_json(root)
    shutil.copytree(root, before, symlinks=True)
    for task_id, sc in zip(ids, SCENARIOS, strict=True):
        run_cli(root, ["task", "edit", task_id, *sc.cli_edit])
    return {"ids": ids, "list_before": list_before}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """Built once per test session, whichever pytest-xdist workers run this module: the CLI
    calls that make it are the most expensive part of the suite. Tests only read it (or copy
    it first)."""
    backlog_cli()
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's folder, above each worker's own
    home = shared / "backlog-cli-repo"
    state = home / "state.json"
    with exclusive_lock(shared / "backlog-cli-repo.lock", wait=True):
        if not state.exists():
            shutil.rmtree(home, ignore_errors=True)  # a build that failed half-way
            made = _build(home / "repo", home / "before")
            state.write_text(json.dumps(made))
    made = json.loads(state.read_text())
    root, before, ids = home / "repo", home / "before", list(made["ids"])
    return Repo(root, before, ids, {i: _path_of(before, i).read_bytes() for i in ids},
                {i: _path_of(root, i).read_bytes() for i in ids}, made["list_before"],
                scan(before))


def _ours(repo: Repo, n: int) -> bytes:
    task_id = repo.ids[n]
    sc = SCENARIOS[n]
    original = repo.originals[task_id]
    when = _updated(repo.cli_results[task_id])
    # the CLI inserts updated_date into a never-edited file; the job only updates an existing one
    return set_updated_date(sc.ours(original), when, insert=not sc.prepare)


@pytest.mark.parametrize("n", range(len(SCENARIOS)), ids=[s.title for s in SCENARIOS])
def test_our_edit_is_byte_identical_to_the_cli(repo: Repo, n: int) -> None:
    task_id = repo.ids[n]
    ours = _ours(repo, n)
    assert ours.decode() == repo.cli_results[task_id].decode()
    assert ours == repo.cli_results[task_id]


@pytest.mark.slow
def test_cli_reads_our_edits_back(repo: Repo, tmp_path: Path) -> None:
    # Put our own bytes in a copy of the repo (not the CLI's, even though they are equal).
    root = tmp_path / "ours"
    shutil.copytree(repo.root, root, symlinks=True)
    for n, task_id in enumerate(repo.ids):
        write_task(_path_of(root, task_id), _ours(repo, n))
    listed = {t["id"]: t for t in _list_json(root)}
    plain = run_cli(root, ["task", "list", "--plain"]).stdout
    # Each CLI call costs a quarter of a second: every file is listed (status, labels), each
    # one with notes is viewed as JSON, and a pass, a failure and the emptied labels are viewed
    # as a person sees them.
    viewed = {0, 1, 5}
    for n, task_id in enumerate(repo.ids):
        sc = SCENARIOS[n]
        assert listed[task_id]["status"] == sc.status
        assert tuple(listed[task_id]["labels"]) == sc.labels  # type: ignore[arg-type]
        if n in viewed:
            view = run_cli(root, ["task", "view", task_id, "--plain"]).stdout
            assert "\nStatus: " in view and f" {sc.status}\n" in view.split("Status:", 1)[1][:40]
            labels_line = re.search(r"^Labels: (.*)$", view, re.MULTILINE)
            shown = labels_line.group(1) if labels_line else ""
            assert shown == ", ".join(sc.labels) or (not sc.labels and shown in ("", "None"))
        if sc.notes is not None or n in viewed:
            detail = json.loads(run_cli(root, ["task", "view", task_id, "--json"]).stdout)
            task = detail.get("task", detail)
            assert (task.get("implementationNotes") or None) == sc.notes
        assert f"{task_id} - {sc.title}" in plain
        # and our reader agrees with the CLI on the edited file
        ours = read_task(root, _path_of(root, task_id), "tasks")
        assert (ours.status, ours.labels) == (sc.status, sc.labels)
    # statuses are grouped as the CLI groups them
    assert plain.index("To Do:") < plain.index("Done:")


def test_our_reader_agrees_with_cli_json(repo: Repo) -> None:
    """Every file the CLI wrote (before and after the edits) parses as the CLI parses it."""
    def compare(root: Path, result: Scan, listed: list[dict[str, object]]) -> None:
        assert result.errors == ()
        ours = {t.id: t for t in result.tasks}
        assert set(ours) == {str(t["id"]) for t in listed}
        for item in listed:
            task: Task = ours[str(item["id"])]
            assert (task.title, task.status, list(task.labels)) == (
                item["title"], item["status"], item["labels"])
            assert task.folder == "tasks"
            assert task.path == _path_of(root, task.id)

    assert len(repo.list_json_before) == len(SCENARIOS)
    compare(repo.before, repo.scan_before, repo.list_json_before)
    compare(repo.root, scan(repo.root), _list_json(repo.root))


def test_completed_task_and_notes_from_view(repo: Repo, tmp_path: Path) -> None:
    """A task moved by `backlog task complete` is read from completed/ with its verify-cmd."""
    root = tmp_path / "done"
    shutil.copytree(repo.root, root, symlinks=True)
    task_id = repo.ids[0]
    run_cli(root, ["task", "edit", task_id, "-s", "Done", "--add-label", "verify:2026-11-10"])
    run_cli(root, ["task", "complete", task_id])
    result = scan(root)
    (done,) = [t for t in result.tasks if t.id == task_id]
    assert done.folder == "completed"
    assert done.path.parent == root / "backlog" / "completed"
    assert done.verify_labels == ("verify:2026-11-10",)
    assert done.verify_cmd_lines == ("verify-cmd: just verify-disk",)
    detail = json.loads(run_cli(root, ["task", "view", task_id, "--json"]).stdout)
    task = detail.get("task", detail)
    assert task["implementationNotes"] == "verify-cmd: just verify-disk"


# Fences the CLI reads although they are not a bare `---` line: js-yaml's front matter ends at the
# first line that starts with `---` (gray-matter looks for "\n---"), and an opening line may carry
# trailing blanks. Each of these is a Done task with a verify label to the CLI.
ODD_FENCES = {
    "trailing space on the closing line": "---\n{fm}--- \n{body}",
    "trailing tab on the closing line": "---\n{fm}---\t\n{body}",
    "trailing space on the opening line": "--- \n{fm}---\n{body}",
    "four dashes closing": "---\n{fm}----\n{body}",
    "CRLF, trailing space on the closing line": "---\r\n{fm_crlf}--- \r\n{body}",
    "BOM, trailing space on the closing line": "\ufeff---\n{fm}--- \n{body}",
}


def _read_alike(tmp_path: Path, files: dict[str, str]) -> tuple[Path, dict[str, Task]]:
    """A backlog of `files`, read by us with no error and by the CLI (`task list`): each task's
    status and labels the same to both. Returns its root and our tasks by id."""
    root = make_backlog(tmp_path, files)
    listed = {str(t["id"]): t for t in _list_json(root)}
    result = scan(root)
    assert result.errors == ()
    ours = {t.id: t for t in result.tasks}
    assert set(ours) == set(listed)
    for task in ours.values():
        cli = listed[task.id]
        assert (task.status, list(task.labels)) == (cli["status"], cli["labels"]), task.path.name
    return root, ours


def test_the_fences_the_cli_reads_are_read_and_kept_by_an_edit(tmp_path: Path) -> None:
    fm = "id: TASK-{n}\ntitle: Fence {n}\nstatus: Done\nlabels: [verify:2026-01-01, infra]\n"
    body = "\n## Implementation Notes\n\nverify-cmd: just verify-a\n"
    files = {}
    for n, shape in enumerate(ODD_FENCES.values(), start=1):
        text = shape.format(fm=fm.format(n=n), fm_crlf=fm.format(n=n).replace("\n", "\r\n"),
                            body=body)
        files[f"tasks/task-{n} - Fence-{n}.md"] = text
    _, ours = _read_alike(tmp_path, files)
    for n, name in enumerate(ODD_FENCES, start=1):
        task = ours[f"TASK-{n}"]
        assert task.verify_cmd_lines == ("verify-cmd: just verify-a",), name
        # a pass edit changes the labels line alone; both fences stay as they were
        data = task.raw
        edited = remove_label(data, "verify:2026-01-01")
        assert edited == data.replace(b"[verify:2026-01-01, infra]", b"[infra]"), name


# Before parsing, the CLI double-quotes every `assignee:`/`reporter:` value that does not start
# with `[`, a quote or `-` (and each `@` item of a one-line list): text that is not valid YAML as
# written is a name to it, and the task is read.
ODD_PEOPLE = {
    "a colon and a space": "reporter: Jane Doe: lead",
    "a backquote": "assignee: `bob`",
    "an alias": "reporter: *me",
    "an indicator": "assignee: %ops",
    "a comment after @": "assignee: [@ann, bob] # the pair",
}


def test_people_values_the_cli_quotes_leave_the_task_readable(tmp_path: Path) -> None:
    files = {
        f"tasks/task-{n} - P-{n}.md": (
            f"---\nid: TASK-{n}\ntitle: P {n}\nstatus: Done\n{line}\n"
            "labels: [verify:2026-01-01]\n---\n\nverify-cmd: just verify-a\n")
        for n, line in enumerate(ODD_PEOPLE.values(), start=1)}
    _, ours = _read_alike(tmp_path, files)
    assert len(ours) == len(ODD_PEOPLE)


# Tabs js-yaml takes as blanks where libyaml refuses them: a line holding only a tab (an editor's
# auto-indent), a tab after a list item's dash. Each of these is a Done task with a verify label to
# the CLI, so it must be one to us too, and our edits must leave it one the CLI reads.
TABBED = {
    "a tab-only line between keys": "title: T\n\t\nstatus: Done\nlabels: [verify:2026-01-01]\n",
    "a tab after the dash": "title: T\nstatus: Done\nlabels:\n  -\t'verify:2026-01-01'\n",
    "a space and a tab after the dash": "title: T\nstatus: Done\nlabels:\n  - \tinfra\n"
                                        "  - verify:2026-01-01\n",
    "an indented tab-only line after the list": "title: T\nstatus: Done\nlabels:\n"
                                                "  - verify:2026-01-01\n  \t\n",
}


def test_tabs_the_cli_reads_leave_the_task_readable_and_editable(tmp_path: Path) -> None:
    files = {f"tasks/task-{n} - T-{n}.md":
             f"---\nid: TASK-{n}\n{fm}---\n\nverify-cmd: just verify-a\n"
             for n, fm in enumerate(TABBED.values(), start=1)}
    files["tasks/task-9 - T-9.md"] = ("\ufeff" + files["tasks/task-1 - T-1.md"]).replace(
        "TASK-1", "TASK-9").replace("\n", "\r\n")
    root, ours = _read_alike(tmp_path, files)
    listed = {str(t["id"]): t for t in _list_json(root)}
    for task in ours.values():
        write_task(task.path, _fail("verify:2026-01-01")(task.raw))
    for item in _list_json(root):
        assert item["status"] == "To Do"
        assert item["labels"] == [*listed[str(item["id"])]["labels"], "verify-failed"]
