"""The scan's fast frontmatter reader must say exactly what the YAML loader says, or step aside.

`fast_frontmatter` / `fast_fields` recognise the simple YAML subset the CLI writes and return
None for anything else; `split_frontmatter` replaces the lazy FRONTMATTER_RE. Checked on generated
text built from the characters and shapes that matter to YAML, on the committed fixtures and on
the real corpora (where the fast path must cover nearly every file, or the scan is slow).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from budget import examples
from frontmatter_strategies import KEYS, cli_like_frontmatter, frontmatter_lines, yaml_view
from hypothesis import given, settings
from hypothesis import strategies as st
from project import CORPORA, FIXTURES

import jobs.backlog.scan as backlog_module
from jobs.backlog.scan import (
    FRONTMATTER_RE,
    TaskParseError,
    fast_fields,
    fast_frontmatter,
    has_verify_label,
    id_key,
    may_clash,
    parse_task,
    scan,
    split_frontmatter,
)
from jobs.backlog.task import verify_cmd_lines


def check(fm: str) -> tuple[bool, bool]:
    """Assert the fast readers agree with YAML whenever they answer; say whether they did."""
    full = fast_frontmatter(fm)
    fields = fast_fields(fm)
    expected = yaml_view(fm) if full is not None or fields is not None else None
    if full is not None:
        assert full == expected, fm
    if fields is not None:
        assert expected is not None, fm
        assert fields == tuple(expected.get(k, "") for k in ("id", "title", "status", "labels")), fm
    return full is not None, fields is not None


@settings(max_examples=examples(1500), deadline=None)
@given(fm=frontmatter_lines())
def test_fast_readers_agree_with_yaml_on_generated_text(fm: str) -> None:
    check(fm)


@settings(max_examples=examples(1500), deadline=None)
@given(fm=cli_like_frontmatter())
def test_fast_readers_agree_with_yaml_on_cli_like_text(fm: str) -> None:
    check(fm)


@settings(max_examples=examples(800), deadline=None)
@given(text=st.text(alphabet="-\r\n\ufeffab ", max_size=30))
def test_split_frontmatter_matches_the_regex(text: str) -> None:
    m = FRONTMATTER_RE.match(text)
    span = split_frontmatter(text)
    if m is None:
        assert span is None
    else:
        assert span == (m.start(1), m.end(1), m.end())


@pytest.mark.parametrize("fm", [
    "id: TASK-1\ntitle: A: b\n", "id: TASK-1\ntitle: x # c\n", "id: 'it''s'\n",
    "labels: [a, 'b', \"c\"]\n", "labels:\n- a\n  - b\n", "labels:\n  - a\n\n  - b\n",
    "title: >-\n  folded\n", "id: x\nid: y\n", "assignee: @a\n", "labels: []\nx: [ ]\n",
    "labels:\n", "status: To Do  \r\nid: T-1\r\n", "a: b\tc\n", "a: \u2028\n",
    "title: >-\n  A long title\n  folded: here # not a comment\nid: T-1\n",
    "title: >-\n  a\n   b\n", "title: >-\n  a \n  b\n", "title: >-\n  a\n\n  b\n",
    "refs:\n  - >-\n      https://x\n      y\n  - z\nlabels: [a]\n",
    "labels:\n  - a\n  - >-\n    long\n", "assignee: @alice  \nreporter: @bob\nid: x\n",
    "assignee: [@a, b]\n", "assignee:\n  - @a\n",
])
def test_fast_readers_agree_on_known_shapes(fm: str) -> None:
    check(fm)


# The deliberately odd cases (invalid YAML, hand-written keys) exist to reach the slow path.
ODD_CASES = ("broken", "edge")


def _typical_fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.md")
                  if not any(part in ODD_CASES for part in p.relative_to(FIXTURES).parts))


def _corpus_files() -> list[Path]:
    if not CORPORA.is_dir():
        pytest.skip(f"the Backlog.md corpora are not beside the project ({CORPORA})")
    return sorted(CORPORA.glob("*/backlog/**/*.md"))


def _assert_fast_readers_cover(files: list[Path], minimum: int) -> None:
    full_hits = field_hits = total = 0
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        span = split_frontmatter(text)
        if span is None:
            continue
        total += 1
        full, fields = check(text[span[0]:span[1]])
        full_hits += full
        field_hits += fields
    assert total >= minimum
    # nearly every real file is in the subset, or the scan would fall back to YAML (slow)
    assert field_hits >= 0.99 * total, (field_hits, total)
    # the line-by-line reader (used by edits) leaves folded titles to YAML
    assert full_hits >= 0.8 * total, (full_hits, total)


def test_fast_readers_on_fixtures() -> None:
    _assert_fast_readers_cover(_typical_fixture_files(), minimum=10)


def test_fast_readers_on_corpora() -> None:
    _assert_fast_readers_cover(_corpus_files(), minimum=20)


# --------------------------------------------------------------------------- scan == per file


def _reference_cmd_lines(body: str) -> list[str]:
    found = []
    for raw_line in body.split("\n"):
        line = raw_line.rstrip("\r").lstrip(" ")
        if line.startswith("- "):
            line = line[2:]
        if line.startswith("verify-cmd"):
            found.append(line)
    return found


@settings(max_examples=examples(500), deadline=None)
@given(body=st.text(alphabet=" -\r\nverify-cmd:xj\t", max_size=60))
def test_verify_cmd_lines_match_the_line_rule(body: str) -> None:
    text = "---\nid: T-1\n---\n" + body
    task = parse_task(Path("/r/backlog/tasks/task-1 - x.md"), text.encode(), "tasks")
    assert list(task.verify_cmd_lines) == _reference_cmd_lines(body)


def assert_scan_matches_per_file(root: Path) -> None:
    """Every task `scan` returns is what `parse_task` makes of its bytes; every error it reports
    (other than an ambiguous id) is the error `parse_task` raises; no task file is left out."""
    result = scan(root)
    files = {p for folder in ("tasks", "completed")
             for p in (root / "backlog" / folder).glob("*.md") if not p.name.startswith(".")}
    seen = set()
    for task in result.tasks:
        assert task == parse_task(task.path, task.path.read_bytes(), task.folder), task.path
        seen.add(task.path)
    for err in result.errors:
        seen.add(err.path)
        if err.message.startswith("ambiguous id") or not err.path.is_file() or \
                err.path.is_symlink():
            continue
        try:
            parse_task(err.path, err.path.read_bytes(), err.path.parent.name)
        except TaskParseError as exc:
            assert (exc.reason, exc.line) == (err.message, err.line), err.path
        else:
            raise AssertionError(f"scan refused {err.path} but parse_task reads it")
    assert seen == files
    # what `list` reads: the same errors, only the tasks a label marks for verification
    lean = scan(root, verify_only=True)
    assert lean.tasks == tuple(t for t in result.tasks if has_verify_label(t))
    assert lean.errors == result.errors
    # a big backlog's first pass (the CLI's key order, then the general pattern): the same
    canonical_from = backlog_module._CANONICAL_FROM
    backlog_module._CANONICAL_FROM = 0
    try:
        assert scan(root) == result
        assert scan(root, verify_only=True) == lean
    finally:
        backlog_module._CANONICAL_FROM = canonical_from


def test_scan_matches_per_file_on_fixtures() -> None:
    roots = [p.parent for p in FIXTURES.rglob("backlog") if (p / "config.yml").exists()]
    assert len(roots) >= 5
    for root in roots:
        assert_scan_matches_per_file(root)


def test_scan_matches_per_file_on_corpora() -> None:
    _corpus_files()  # skips without them
    roots = sorted(p for p in CORPORA.iterdir() if (p / "backlog").is_dir())
    assert roots
    for root in roots:
        assert_scan_matches_per_file(root)


BODY = st.sampled_from(["", "\n", "\n## Notes\n\nverify-cmd: just verify-a\n",
                        "\r\n  - verify-cmd: just x\r\n", "\nverify-cmd", "no newline",
                        "\n---\nverify-cmd: just verify-b\n---\n",
                        "\nvérify é\nverify-cmd: just c\n",
                        "\nnul \x00 verify-cmd: just verify-d\n"])


@settings(max_examples=examples(150), deadline=None)
@given(files=st.lists(st.one_of(
    st.tuples(cli_like_frontmatter(), BODY, st.just(False)),
    st.tuples(cli_like_frontmatter(keys_from=tuple(KEYS[3:])), BODY, st.just(True))),
    min_size=1, max_size=6))
def test_scan_matches_per_file_on_generated_repos(files: list[tuple[str, str, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "backlog" / "tasks").mkdir(parents=True)
        (root / "backlog" / "config.yml").write_text("task_prefix: task\n")
        for n, (fm, body, head) in enumerate(files):
            if head:  # the CLI's first three keys, so the bulk path takes the file
                fm = f"id: TASK-{n}\ntitle: T {n}\nstatus: Done\n" + fm
            eol = "\r\n" if "\r\n" in fm else "\n"
            text = f"---{eol}{fm}{eol}---{eol}{body}" if fm else f"---{eol}---{eol}{body}"
            (root / "backlog" / "tasks" / f"task-{n} - x.md").write_text(text, newline="")
        assert_scan_matches_per_file(root)


@pytest.mark.parametrize("many", [False, True], ids=["few files", "canonical pass"])
def test_the_scan_checks_each_file_whole_not_only_its_frontmatter(tmp_path: Path,
                                                                  many: bool) -> None:
    """The patterns read each file up to its frontmatter's closing line; a body that is not
    UTF-8, or holds a NUL, still makes the file one `parse_task` judges (as it was when the
    patterns read whole files), and a verify-cmd line after a second `---` line is found."""
    tasks = tmp_path / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    (tmp_path / "backlog" / "config.yml").write_text("task_prefix: task\n")
    head = "---\nid: TASK-{n}\ntitle: T\nstatus: Done\nlabels:\n  - 'verify:2026-01-01'\n---\n"
    bodies = [b"\nnot utf-8 \xff\xfe\n", b"\nnul \x00\n", b"\n---\nverify-cmd: just verify-a\n",
              "\nnon-ascii é\nverify-cmd: just verify-b\n".encode(), b"\r\nverify-cmd: just x\r\n"]
    count = 600 if many else len(bodies)
    for n in range(1, count + 1):
        body = bodies[(n - 1) % len(bodies)]
        (tasks / f"task-{n} - x.md").write_bytes(head.format(n=n).encode() + body)
    assert_scan_matches_per_file(tmp_path)
    found = {t.id: t.verify_cmd_lines for t in scan(tmp_path, verify_only=True).tasks}
    assert found["TASK-3"] == ("verify-cmd: just verify-a",)
    assert found["TASK-4"] == ("verify-cmd: just verify-b",)
    assert "TASK-1" not in found  # not UTF-8: an error, as parse_task says


def test_verify_only_scan_keeps_every_error_and_ambiguity(tmp_path: Path) -> None:
    """Tasks without a verify label cost no Task in `scan(verify_only=True)`, yet their ids still
    make others ambiguous and their errors are still reported, in the same order and words."""
    tasks = tmp_path / "backlog" / "tasks"
    done = tmp_path / "backlog" / "completed"
    tasks.mkdir(parents=True)
    done.mkdir()
    (tmp_path / "backlog" / "config.yml").write_text("task_prefix: task\n")

    def write(folder: Path, name: str, task_id: str, labels: str) -> None:
        (folder / name).write_text(f"---\nid: {task_id}\ntitle: T\nstatus: Done\n{labels}"
                                   "---\n\nverify-cmd: just verify-a\n")

    write(tasks, "task-1 - a.md", "TASK-1", "labels: []\n")
    write(done, "task-01 - b.md", "task-01", "labels:\n  - 'verify:2026-01-01'\n")
    write(tasks, "task-2 - c.md", "TASK-2", "labels:\n  - 'VERIFY:2026-01-01'\n")
    write(tasks, "task-3 - d.md", "TASK-3", "labels:\n  - xverify:1\n  - Verify:x\n")
    write(tasks, "task-4 - e.md", "TASK-4", "labels:\n  - infra\n")
    write(tasks, "task-5 - f.md", "TASK-5", "labels:\n  - xverify:1\n")
    write(done, "task-5 - g.md", "task-5", "")
    (tasks / "task-6 - broken.md").write_text("---\nid: TASK-6\nlabels: [\n---\n")
    full, lean = scan(tmp_path), scan(tmp_path, verify_only=True)
    assert [t.id for t in lean.tasks] == ["TASK-2", "TASK-3"]
    assert lean.tasks == tuple(t for t in full.tasks if has_verify_label(t))
    assert lean.errors == full.errors
    assert sorted(e.path.name for e in lean.errors) == [
        "task-01 - b.md", "task-1 - a.md", "task-5 - f.md", "task-5 - g.md",
        "task-6 - broken.md"]


@pytest.mark.parametrize("fm", [
    "id: >-\n 0\n\n  ",            # found by hypothesis: YAML reads '0\n\n '
    "id: >-\n 0\n  \n",
    "labels:\n- >-\n  a\n\n   \n",
])
def test_spaces_after_a_fold_are_left_to_yaml(fm: str) -> None:
    full, _ = check(fm)
    assert not full


@settings(max_examples=examples(1500), deadline=None)
@given(ids=st.lists(st.from_regex(r"[A-Za-z\u0131\u0130]{1,3}-0?[0-9]{1,3}(\.0?[0-9]{1,2})?|"
                                  r"[a-zA-Z\u00df\u0131 -]{1,4}|[0-9]{1,2}", fullmatch=True),
                    max_size=6))
def test_may_clash_misses_no_ambiguous_pair(ids: list[str]) -> None:
    """The scan keys ids only when `may_clash` says two might name one task: it must never say
    no when `id_key` finds two that do."""
    keys = [id_key(i.strip()) for i in ids]
    if len(set(keys)) != len(keys):
        assert may_clash([i.strip() for i in ids]), ids


def test_may_clash_on_known_pairs() -> None:
    assert may_clash(["TASK-1", "task-1"])
    assert may_clash(["TASK-1", "TASK-01"])
    assert may_clash(["TASK-1.2", "TASK-1.02"])
    assert not may_clash(["TASK-1", "TASK-10", "BACK-1", "task-1.1"])
    assert not may_clash(["TASK-001", "TASK-010", "TASK-100", "TASK-001.02"])  # zero-padded
    assert may_clash(["TASK-001", "task-1"])
    assert may_clash(["TASK-010", "TASK-10.0", "TASK-10"])


CLI_ORDER = ["assignee", "reporter", "created_date", "updated_date", "due_date", "labels",
             "milestone", "dependencies", "references", "documentation", "modified_files",
             "parent_task_id", "subtasks", "priority", "type", "ordinal", "onStatusChange"]
CLI_VALUE = st.sampled_from([" []", " 'a: b'", " x", ":\n  - a\n  - 'verify:2026-01-01'",
                             " >-\n  long\n  folded", ":", " ''", ":\n  - >-\n    f", " [a]",
                             " 'it''s'", " @me", ":\n - a", " ~", " a b", " '\u00e9'",
                             ":\n  - a b", " 2026-11-01", " -x"])


@settings(max_examples=examples(300), deadline=None)
@given(files=st.lists(st.tuples(st.lists(st.sampled_from(CLI_ORDER), max_size=6, unique=True),
                                st.booleans(), st.lists(CLI_VALUE, min_size=6, max_size=6),
                                st.sampled_from(["", "labels: []\n", "title: again\n"])),
                      min_size=1, max_size=5))
def test_scan_in_the_cli_key_order(files: list[tuple[list[str], bool, list[str], str]]) -> None:
    """Frontmatter in the CLI's key order (and not quite: shuffled, a repeated key, odd value
    shapes) reads as per file, whichever pattern takes it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "backlog" / "tasks").mkdir(parents=True)
        (root / "backlog" / "config.yml").write_text("task_prefix: task\n")
        for n, (keys, ordered, values, extra) in enumerate(files):
            if ordered:
                keys = sorted(keys, key=CLI_ORDER.index)
            fm = "".join(f"{key}{value}\n" for key, value in zip(keys, values, strict=False))
            text = f"---\nid: TASK-{n}\ntitle: T {n}\nstatus: Done\n{fm}{extra}---\nbody\n"
            (root / "backlog" / "tasks" / f"task-{n} - x.md").write_text(text)
        assert_scan_matches_per_file(root)


def _cmd_lines_by_comment_spans(body: str) -> list[str]:
    """The rule spelled out: every match of the line pattern not inside a comment's span."""
    spans = [(c.start(), c.end()) for c in re.finditer(r"<!--.*?(?:-->|\Z)", body, re.DOTALL)]
    return [m.group(1) for m in re.finditer(r"^ *(?:- )?(verify-cmd[^\n]*?)\r*$", body,
                                            re.MULTILINE)
            if not any(lo <= m.start() < hi for lo, hi in spans)]


@settings(max_examples=examples(1500), deadline=None)
@given(body=st.lists(st.sampled_from(["<!--", "-->", "\n", "verify-cmd: just verify-a", " ",
                                      "- ", "x", "<!-- SECTION:NOTES:BEGIN -->", "\r", "->"]),
                     max_size=14).map("".join))
def test_verify_cmd_lines_leave_out_only_what_comments_hide(body: str) -> None:
    assert verify_cmd_lines(body) == _cmd_lines_by_comment_spans(body), body
    text = "---\nid: T-1\n---\n" + body
    assert verify_cmd_lines(text, 15, len(text)) == _cmd_lines_by_comment_spans(body), body


def test_scan_reads_a_backlog_where_a_file_holds_a_nul(tmp_path: Path) -> None:
    """A NUL inside one file (the scan joins files with NULs) makes it read the files one by one:
    the same tasks and errors as per file, in every pass."""
    tasks = tmp_path / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    (tmp_path / "backlog" / "config.yml").write_text("task_prefix: task\n")
    for n in range(4):
        (tasks / f"task-{n} - x.md").write_text(
            f"---\nid: TASK-{n}\ntitle: T\nstatus: Done\nlabels:\n  - 'verify:2026-01-01'\n---\n"
            "verify-cmd: just verify-a\n")
    (tasks / "task-9 - nul.md").write_bytes(
        b"---\nid: TASK-9\ntitle: T\nstatus: Done\n---\na\x00b\n")
    (tasks / "task-8 - nul-fm.md").write_bytes(b"---\nid: TASK-8\ntitle: \x00\nstatus: Done\n---\n")
    assert_scan_matches_per_file(tmp_path)
    assert {t.id for t in scan(tmp_path).tasks} >= {"TASK-0", "TASK-3"}
