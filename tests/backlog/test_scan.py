"""Reading Backlog.md task files and editing them line by line (no CLI needed here)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from backlog_helpers import CLI_TASK, CONFIG_YML, make_backlog

from jobs.backlog.edit import (
    add_label,
    append_notes,
    remove_label,
    set_status,
    set_updated_date,
    yaml_scalar,
)
from jobs.backlog.scan import (
    VERIFY_LABEL,
    BacklogConfig,
    BacklogError,
    TaskEditError,
    TaskParseError,
    id_key,
    parse_task,
    read_config,
    read_task,
    scan,
    write_task,
)

WHEN = datetime(2026, 11, 30, 7, 31, 12, tzinfo=UTC)


def parse(data: bytes | str, name: str = "task-1 - x.md") -> object:
    raw = data.encode() if isinstance(data, str) else data
    return parse_task(Path("/r/backlog/tasks") / name, raw, "tasks")


# --------------------------------------------------------------------------- reading


def test_reads_cli_task() -> None:
    task = parse(CLI_TASK)
    assert task.id == "TASK-1"  # type: ignore[attr-defined]
    assert task.title == "Rotate disk alerts"  # type: ignore[attr-defined]
    assert task.status == "Done"  # type: ignore[attr-defined]
    assert task.labels == ("verify:2026-11-01", "infra")  # type: ignore[attr-defined]
    assert task.verify_labels == ("verify:2026-11-01",)  # type: ignore[attr-defined]
    assert task.verify_cmd_lines == ("verify-cmd: just verify-disk",)  # type: ignore[attr-defined]
    assert task.raw == CLI_TASK.encode()  # type: ignore[attr-defined]


def test_reads_crlf_bom_flow_and_at_assignee() -> None:
    text = ("\ufeff---\r\nid: task-4\r\ntitle: Flow\r\nstatus: done\r\nassignee: @alice\r\n"
            "reporter: [@bob, carol]\r\nlabels: [verify:2026-11-01, \"infra\", 'yes', 123]\r\n"
            "---\r\n\r\n  - verify-cmd: just verify-x  \r\nverify-cmdx\r\n")
    task = parse(text)
    assert task.id == "task-4"  # type: ignore[attr-defined]
    assert task.labels == ("verify:2026-11-01", "infra", "yes", "123")  # type: ignore[attr-defined]
    assert task.verify_cmd_lines == ("verify-cmd: just verify-x  ",  # type: ignore[attr-defined]
                                     "verify-cmdx")


def test_verify_labels_include_malformed_ones() -> None:
    text = CLI_TASK.replace("  - infra\n",
                            "  - 'verify:2026-13-45'\n  - 'verify: soon'\n  - Verify:x\n")
    task = parse(text)
    assert task.verify_labels == (  # type: ignore[attr-defined]
        "verify:2026-11-01", "verify:2026-13-45", "verify: soon")
    assert VERIFY_LABEL.match("verify:2026-11-01")
    assert not VERIFY_LABEL.match("verify:2026-11-01 ")


@pytest.mark.parametrize(("data", "message", "line"), [
    (b"", "empty file", None),
    (b"# just a heading\n", "no frontmatter", 1),
    (b"---\nid: TASK-1\ntitle: Broken: yaml: here\n---\n", "invalid YAML", 3),
    (b"---\nid: TASK-1\nlabels: [unclosed\n---\n", "invalid YAML", None),
    (b"---\nid: TASK-1\nstatus: Done\nlabels: verify:2026-11-06\n---\n", "labels is not a list",
     4),
    (b"---\ntitle: no id\nstatus: Done\n---\n", "missing id", None),
    (b"---\nid: TASK-1\nid: TASK-2\n---\n", "duplicate key", 3),
    (b"---\nid: TASK-1\ntitle: caf\xe9\n---\n", "not valid UTF-8", 3),
    (b"---\n- a\n- b\n---\n", "not a YAML mapping", 2),
])
def test_bad_task_bytes(data: bytes, message: str, line: int | None) -> None:
    with pytest.raises(TaskParseError) as info:
        parse(data)
    assert message in info.value.reason
    assert "/r/backlog/tasks/task-1 - x.md" in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_config_defaults_and_custom(tmp_path: Path) -> None:
    make_backlog(tmp_path, {})
    cfg = read_config(tmp_path)
    assert cfg == BacklogConfig(("To Do", "In Progress", "Done"), "To Do", "task")
    assert cfg.done_status == "Done" and cfg.reopen_status == "To Do"
    assert cfg.is_done(" done ") and not cfg.is_done("Doing")
    (tmp_path / "backlog/config.yml").write_text(
        'default_status: "to do"\nstatuses: [Backlog, "Doing", Verified]\ntask_prefix: "ops"\n')
    cfg = read_config(tmp_path)
    assert cfg.statuses == ("Backlog", "Doing", "Verified")
    assert cfg.done_status == "Verified" and cfg.reopen_status == "Backlog"
    assert cfg.task_prefix == "ops"
    (tmp_path / "backlog/config.yml").write_text('default_status: "doing"\nstatuses:\n'
                                                 "  - Backlog\n  - Doing\n  - Verified\n")
    assert read_config(tmp_path).reopen_status == "Doing"


@pytest.mark.parametrize(("config", "message", "line"), [
    ("statuses: [unclosed\n", "invalid YAML", None),
    ("statuses: Done\n", "statuses must be a non-empty list", 1),
    ("project_name: x\nstatuses: []\n", "statuses must be a non-empty list", 2),
    ("task_prefix: 'a-b'\n", "letters only", 1),
])
def test_bad_config(tmp_path: Path, config: str, message: str, line: int | None) -> None:
    make_backlog(tmp_path, {}, config=config)
    with pytest.raises(BacklogError) as info:
        read_config(tmp_path)
    assert message in str(info.value)
    assert "config.yml" in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_no_backlog_folder(tmp_path: Path) -> None:
    with pytest.raises(BacklogError, match="no backlog/ folder"):
        scan(tmp_path)


def test_scan_reports_each_bad_file_and_reads_the_rest(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(CLI_TASK)
    root = tmp_path / "repo"
    good2 = CLI_TASK.replace("TASK-1", "TASK-2")
    make_backlog(root, {
        "tasks/task-1 - Good.md": CLI_TASK,
        "tasks/task-2 - Good.md": good2,
        "tasks/task-3 - Nofm.md": "# nothing\n",
        "tasks/task-4 - Yaml.md": "---\nid: TASK-4\ntitle: a: b: c\n---\n",
        "tasks/task-5 - Bin.md": b"---\nid: TASK-5\ntitle: \xff\n---\n",
        "tasks/task-6 - Empty.md": b"",
        "tasks/task-7 - Scalar.md": "---\nid: TASK-7\nlabels: verify:2026-11-06\n---\n",
        "tasks/task-8 - Noid.md": "---\ntitle: x\n---\n",
        "tasks/task-12 - Huge.md": "---\nid: TASK-12\n---\n" + "x" * (50 * 1024 * 1024),
        "tasks/TASK-13 - Upper.md": CLI_TASK.replace("TASK-1", "TASK-13"),
        "tasks/readme.md": "not a task",
        "drafts/task-14 - Draft.md": CLI_TASK.replace("TASK-1", "TASK-14"),
        "archive/tasks/task-15 - A.md": CLI_TASK.replace("TASK-1", "TASK-15"),
        "completed/task-16 - Done.md": CLI_TASK.replace("TASK-1", "TASK-16"),
        "completed/task-02 - Dup.md": CLI_TASK.replace("TASK-1", "task-02"),
    })
    (root / "backlog/tasks/task-9 - Dir.md").mkdir()
    os.symlink(outside, root / "backlog/tasks/task-10 - Link.md")
    os.symlink(root / "backlog/tasks/task-1 - Good.md", root / "backlog/tasks/task-11 - In.md")
    result = scan(root)
    assert [(t.id, t.folder[0]) for t in result.tasks] == [("TASK-13", "t"), ("TASK-16", "c")]
    reasons = {e.path.name: e.message for e in result.errors}
    assert reasons["readme.md"].startswith("no frontmatter")
    assert reasons["task-3 - Nofm.md"].startswith("no frontmatter")
    assert reasons["task-4 - Yaml.md"].startswith("invalid YAML")
    assert reasons["task-5 - Bin.md"] == "not valid UTF-8"
    assert reasons["task-6 - Empty.md"] == "empty file"
    assert reasons["task-7 - Scalar.md"].startswith("labels is not a list")
    assert reasons["task-8 - Noid.md"] == "missing id"
    assert reasons["task-9 - Dir.md"] == "not a regular file"
    assert reasons["task-10 - Link.md"] == "symbolic link to outside the repository"
    assert reasons["task-12 - Huge.md"].startswith("too large")
    # task-11 links inside the repo to task-1, so TASK-1 is in two files: both ambiguous
    assert reasons["task-1 - Good.md"].startswith("ambiguous id TASK-1: also in")
    assert reasons["task-11 - In.md"].startswith("ambiguous id TASK-1")
    # TASK-2 and task-02 (completed/) are the same id for the CLI
    assert "backlog/completed/task-02 - Dup.md" in reasons["task-2 - Good.md"]
    assert reasons["task-02 - Dup.md"].startswith("ambiguous id task-02")
    assert len(result.errors) == 14
    assert all(str(e).startswith(str(e.path)) for e in result.errors)
    assert str(result.errors[0]).count(":") >= 2 or result.errors[0].line is None


def test_every_md_file_in_tasks_and_completed_is_a_task_file(tmp_path: Path) -> None:
    names = {"tasks/ops-1 - A.md": "OPS-1", "tasks/task-2 - B.md": "TASK-2", "tasks/TASK-3.md":
             "TASK-3", "completed/fix.md": "TASK-4", "tasks/.t-5.md": "T-5", "tasks/t.txt": "T-6"}
    make_backlog(tmp_path, {n: CLI_TASK.replace("TASK-1", i) for n, i in names.items()},
                 config='task_prefix: "ops"\n')  # SPEC: `*.md`, whatever the task prefix
    for result in (scan(tmp_path), scan(tmp_path, verify_only=True)):
        assert [t.id for t in result.tasks] == ["OPS-1", "TASK-2", "TASK-3", "TASK-4"]


def test_read_task_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "backlog/tasks/task-1 - x.md"
    make_backlog(tmp_path, {"tasks/task-1 - x.md": CLI_TASK + "x" * (1024 * 1024)})
    with pytest.raises(TaskParseError, match="too large"):
        read_task(tmp_path, path, "tasks")


def test_id_key_is_numeric_and_case_insensitive() -> None:
    assert id_key("TASK-1") == id_key("task-01") == ("TASK", (1,))
    assert id_key("TASK-1.1") != id_key("TASK-1.10")
    assert id_key("TASK-1.01") == id_key("task-1.1")


# --------------------------------------------------------------------------- edits


def lines_diff(a: bytes, b: bytes) -> tuple[list[bytes], list[bytes]]:
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    return [x for x in la if x not in lb], [x for x in lb if x not in la]


def test_pass_edit_removes_only_the_label_line() -> None:
    before = CLI_TASK.encode()
    after = remove_label(before, "VERIFY:2026-11-01")
    assert lines_diff(before, after) == ([b"  - 'verify:2026-11-01'\n"], [])


def test_fail_edit_cli_shape() -> None:
    before = CLI_TASK.encode()
    after = append_notes(add_label(set_status(before, "To Do"), "verify-failed"),
                         "verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1\n"
                         "last lines of output:\n    boom")
    after = set_updated_date(after, WHEN)
    assert after == CLI_TASK.replace("status: Done", "status: To Do").replace(
        "updated_date: '2026-11-30 01:01'", "updated_date: '2026-11-30 07:31'").replace(
        "  - infra\n", "  - infra\n  - verify-failed\n").replace(
        "verify-cmd: just verify-disk\n",
        "verify-cmd: just verify-disk\n\nverify-failed 2026-11-30T07:30:12Z: `just verify-disk` "
        "exited 1\nlast lines of output:\n    boom\n").encode()


def test_remove_last_label_and_add_to_empty() -> None:
    one = CLI_TASK.replace("  - infra\n", "").encode()
    empty = remove_label(one, "verify:2026-11-01")
    assert b"labels: []\ndependencies" in empty
    again = add_label(empty, "verify:2026-11-01")
    assert again == one
    assert add_label(again, "VERIFY:2026-11-01") == again  # present (case-insensitive)
    assert remove_label(again, "absent") == again


def test_flow_labels_stay_flow_and_keep_quoting() -> None:
    text = ('---\r\nid: TASK-4\r\nstatus: Done\r\nlabels: ["infra", verify:2026-11-01, '
            "'b c']\r\n---\r\nbody")
    out = remove_label(text.encode(), "verify:2026-11-01")
    assert out == text.replace(", verify:2026-11-01", "").encode()
    out2 = add_label(out, "verify-failed")
    assert out2 == text.replace(", verify:2026-11-01", "").replace(
        "'b c']", "'b c', verify-failed]").encode()
    assert remove_label(remove_label(remove_label(text.encode(), "infra"), "b c"),
                        "verify:2026-11-01") == text.replace(
        '["infra", verify:2026-11-01, \'b c\']', "[]").encode()


def test_set_status_and_dates_keep_format() -> None:
    text = ("---\nid: TASK-1\nstatus: 'Done'  # done!\ncreated_date: 2026-11-01\n"
            "updated_date: 2026-11-02\nlabels: []\n---\nbody without newline")
    out = set_updated_date(set_status(text.encode(), "In Progress"), WHEN)
    assert out == text.replace("status: 'Done'  # done!", "status: In Progress").replace(
        "updated_date: 2026-11-02", "updated_date: 2026-11-30").encode()
    iso = text.replace("updated_date: 2026-11-02", 'updated_date: "2026-11-02T09:00:00Z"')
    assert b'updated_date: "2026-11-30T07:31:12Z"' in set_updated_date(iso.encode(), WHEN)
    no_updated = text.replace("updated_date: 2026-11-02\n", "").encode()
    assert set_updated_date(no_updated, WHEN) == no_updated
    assert b"created_date: 2026-11-01\nupdated_date: '2026-11-30 07:31'\nlabels" in (
        set_updated_date(no_updated, WHEN, insert=True))


@pytest.mark.parametrize(("value", "written"), [
    ("verify:2026-11-01", "'verify:2026-11-01'"), ("verify-failed", "verify-failed"),
    ("a b", "a b"), ("yes", "'yes'"), ("123", "'123'"), ("@x", "'@x'"), ("#x", "'#x'"),
    ("it's", "it's"), ("x: y", "'x: y'"), ("2026-12-01", "'2026-12-01'"), ("null", "'null'"),
    ("-x", "'-x'"), ("UPPER", "UPPER"), ("ü-label", "ü-label"), ("true", "'true'"),
    ("'q'", "'''q'''"), ("", "''"), ("1.5", "'1.5'"), ("To Do", "To Do"),
])
def test_yaml_scalar_matches_cli_quoting(value: str, written: str) -> None:
    assert yaml_scalar(value) == written


def test_append_notes_legacy_section_and_crlf() -> None:
    text = ("---\r\nid: TASK-20\r\nlabels: []\r\n---\r\n\r\n## Implementation Notes\r\n\r\n"
            "old note\r\n\r\n## My Custom Section\r\nkeep\r\n")
    out = append_notes(text.encode(), "new\nnote")
    # The CLI's legacy notes run to the next heading it knows: over the custom section.
    assert out == text.replace("keep\r\n", "keep\r\n\r\nnew\r\nnote\r\n").encode()


def test_append_notes_no_trailing_newline_and_no_section() -> None:
    text = "---\nid: TASK-1\n---\n\n## Description\n\nd"
    out = append_notes(text.encode(), "  n  \n\n\n\nm\r\n")
    assert out == (text + "\n\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
                   "n  \n\nm\n<!-- SECTION:NOTES:END -->").encode()
    bare = b"---\nid: TASK-1\n---\n\n\n"
    assert append_notes(bare, "x") == (b"---\nid: TASK-1\n---\n\n## Implementation Notes\n\n"
                                       b"<!-- SECTION:NOTES:BEGIN -->\nx\n"
                                       b"<!-- SECTION:NOTES:END -->\n")


def test_append_notes_before_comments_and_after_plan() -> None:
    body = ("## Implementation Plan\n\n<!-- SECTION:PLAN:BEGIN -->\n## step\np\n"
            "<!-- SECTION:PLAN:END -->\n\n## Final Summary\n\n<!-- SECTION:FINAL_SUMMARY:BEGIN -->"
            "\nfs\n<!-- SECTION:FINAL_SUMMARY:END -->\n")
    text = "---\nid: TASK-1\n---\n\n" + body
    out = append_notes(text.encode(), "x").decode()
    assert out == text.replace("<!-- SECTION:PLAN:END -->\n", "<!-- SECTION:PLAN:END -->\n\n"
                               "## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\nx\n"
                               "<!-- SECTION:NOTES:END -->\n")
    comments = ("---\nid: TASK-1\n---\n\n## Comments\n\n<!-- COMMENTS:BEGIN -->\nc\n"
                "<!-- COMMENTS:END -->\n")
    out = append_notes(comments.encode(), "x").decode()
    assert out.startswith("---\nid: TASK-1\n---\n\n## Implementation Notes\n\n"
                          "<!-- SECTION:NOTES:BEGIN -->\nx\n<!-- SECTION:NOTES:END -->\n\n"
                          "## Comments\n")


def test_edits_refuse_unsafe_files() -> None:
    with pytest.raises(TaskEditError, match="no frontmatter"):
        remove_label(b"# x\n", "a")
    with pytest.raises(TaskEditError, match="labels is not a list"):
        add_label(b"---\nid: T-1\nlabels: a\n---\n", "b")
    with pytest.raises(TaskEditError, match="marker"):
        append_notes(b"---\nid: T-1\n---\n## Implementation Notes\n<!-- SECTION:NOTES:BEGIN -->\n"
                     b"x <!-- SECTION:NOTES:END -->\n", "y")
    with pytest.raises(TaskEditError):
        add_label(b"---\nid: T-1\nlabels: [a,\n  b]\n---\n", "c")
    with pytest.raises(TaskEditError):
        add_label(CLI_TASK.encode(), "a,b")


def test_write_task_is_atomic_replace(tmp_path: Path) -> None:
    path = tmp_path / "task-1 - x.md"
    path.write_bytes(b"old")
    write_task(path, b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["task-1 - x.md"]


def test_config_constant_matches_cli_default() -> None:
    assert 'statuses: ["To Do", "In Progress", "Done"]' in CONFIG_YML


def test_appended_output_cannot_forge_markers_or_commands() -> None:
    hostile = ("verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1\n"
               "last lines of output:\n    <!-- SECTION:NOTES:END -->\n    verify-cmd: just evil\n"
               "    - verify-cmd: just evil2\n    not verify-cmd: fine")
    out = append_notes(CLI_TASK.encode(), hostile)
    task = parse(out)
    assert task.verify_cmd_lines == ("verify-cmd: just verify-disk",)  # type: ignore[attr-defined]
    assert out.count(b"<!-- SECTION:NOTES:END -->") == 1
    assert b"    < !-- SECTION:NOTES:END -->\n    > verify-cmd: just evil\n" in out
    assert b"    - > verify-cmd: just evil2\n    not verify-cmd: fine\n" in out
    # the note still ends inside the section, and a second append goes after it
    again = append_notes(out, "second")
    assert again.endswith(b"not verify-cmd: fine\n\nsecond\n<!-- SECTION:NOTES:END -->\n")


def test_appended_output_cannot_leave_a_code_block_open() -> None:
    # A fence the note opens and never closes would run to the end of the file: the END
    # marker after it would be text, and the next summary would go after the Comments.
    for fence in ("```", "    ```python", "~~~~", "  ~~~ text"):
        out = append_notes(CLI_TASK.encode(), f"verify-failed: exited 1\nlast lines of output:\n"
                                              f"{fence}\n    half a block")
        again = append_notes(out, "second")
        assert again.endswith(b"half a block\n\nsecond\n<!-- SECTION:NOTES:END -->\n"), fence
    # a block the note closes itself is left as it is
    closed = "output:\n```\n<!-- x -->\n```"
    assert b"```\n< !-- x -->\n```\n" in append_notes(CLI_TASK.encode(), closed)


def test_edit_refuses_anchors_and_aliases_quickly() -> None:
    laughs = "".join(f"k{n}: &k{n} [{', '.join([f'*k{n - 1}'] * 9)}]\n" for n in range(1, 10))
    text = ("---\nid: TASK-1\nstatus: Done\nk0: &k0 [lol, lol]\n" + laughs +
            "labels:\n  - 'verify:2026-11-01'\n---\nverify-cmd: just verify-x\n").encode()
    with pytest.raises(TaskEditError, match="anchors or aliases"):
        remove_label(text, "verify:2026-11-01")
    # a tab libyaml refuses (read as js-yaml reads it) hides no alias from the check
    tabbed = text.replace(b"status: Done\n", b"status: Done\n\t\n")
    with pytest.raises(TaskEditError, match="anchors or aliases"):
        remove_label(tabbed, "verify:2026-11-01")


def test_task_folder_linked_outside_the_repository(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "task-1 - x.md").write_text(CLI_TASK)
    root = tmp_path / "repo"
    make_backlog(root, {})
    (root / "backlog/tasks").rmdir()
    os.symlink(outside, root / "backlog/tasks")
    with pytest.raises(BacklogError, match="symbolic link to outside"):
        scan(root)
    inside = root / "kept"
    inside.mkdir()
    (inside / "task-2 - y.md").write_text(CLI_TASK.replace("TASK-1", "TASK-2"))
    os.unlink(root / "backlog/tasks")
    os.symlink(inside, root / "backlog/tasks")
    assert [t.id for t in scan(root).tasks] == ["TASK-2"]
