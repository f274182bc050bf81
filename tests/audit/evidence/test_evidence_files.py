"""Charters, the push log, record-push and the run directory: the inputs closeout trusts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from audit_helpers import (
    Run,
    env_with,
    git,
    isolate_git,
    make_repo_with_remote,
    moved_snapshots,
    run_cli,
    write_snapshot,
)

from audit.evidence.charter import charter_sha256, load_charter
from audit.evidence.pushlog import append_push, read_push_log, same_repo
from audit.evidence.rundir import BEFORE, PUSH_LOG, resolve_run_dir, write_json
from audit.evidence.snapshot_file import load_snapshot
from audit.main import main as audit_main
from audit.model import ZERO, Grant, grants_release_please
from jobs.core.errors import InputError, UsageError

SHA_A = "a" * 40
SHA_B = "b" * 40

CHARTER = """# Charter: loop-pi loop7

Some prose about the run. Note: prose with a colon is not a key.

- authority: release-please rknightion/loop-pi, release-please Acme/widgets
session: sess-123
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- charter ----------------------------------------------------------------------------------

def test_charter_is_parsed(tmp_path: Path) -> None:
    path = write(tmp_path / "charter.md", CHARTER)
    charter = load_charter(path)
    assert (charter.repo, charter.loop, charter.session) == ("loop-pi", 7, "sess-123")
    assert charter.grants == (Grant("release-please", "rknightion/loop-pi"),
                              Grant("release-please", "Acme/widgets"))
    assert charter.sha256 == charter_sha256(path)
    assert grants_release_please(charter, "acme/WIDGETS")
    assert not grants_release_please(charter, "acme/other")
    assert not grants_release_please(None, "acme/widgets")
    assert not grants_release_please(charter, None)


def test_charter_without_authority_grants_nothing(tmp_path: Path) -> None:
    charter = load_charter(write(tmp_path / "c.md", "# Charter: x loop1\n\nsome text\n"))
    assert charter.grants == () and charter.session is None


@pytest.mark.parametrize(("text", "line", "words"), [
    ("Charter: loop-pi loop7\nauthority: release-please a/b\n", 1, "first line"),
    ("# Charter: loop-pi\n", 1, "first line"),
    ("", 1, "empty charter"),
    ("# Charter: x loop1\n\nauthority: merge-anything a/b\n", 3, "unknown grant 'merge-anything'"),
    ("# Charter: x loop1\nauthority: release-please\n", 2, "malformed grant"),
    ("# Charter: x loop1\nauthority: release-please a/b c\n", 2, "malformed grant"),
    ("# Charter: x loop1\nauthority: release-please not-a-repo\n", 2, "malformed grant"),
    ("# Charter: x loop1\nauthority: release-please a/b,\n", 2, "empty grant"),
    # A clone URL's tail, or a name GitHub gives no repository: it would grant nothing, and the
    # release it was written for would fail the audit with the charter's mistake unsaid.
    ("# Charter: x loop1\nauthority: release-please acme/widgets.git\n", 2,
     "write `acme/widgets`"),
    ("# Charter: x loop1\nauthority: release-please acme/..\n", 2, "malformed grant"),
    ("# Charter: x loop1\nauthority: release-please acme/.\n", 2, "malformed grant"),
    ("# Charter: x loop1\nauthority: release-please a/b\nauthority: release-please c/d\n",
     3, "given twice"),
])
def test_bad_charter_names_file_and_line(tmp_path: Path, text: str, line: int,
                                         words: str) -> None:
    path = write(tmp_path / "charter.md", text)
    with pytest.raises(InputError) as err:
        load_charter(path)
    assert err.value.exit_code == 2
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert words in str(err.value)


def test_begin_with_bad_charter_exits_2_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    charter = write(tmp_path / "charter.md", "# Charter: x loop1\nauthority: push-all a/b\n")
    run_dir = tmp_path / "run"
    code = audit_main(["begin", str(clone), "--charter", str(charter), "--run-dir", str(run_dir)])
    assert code == 2
    assert f"{charter}:2: unknown grant 'push-all'" in capsys.readouterr().err
    assert not (run_dir / BEFORE).exists()


# --- run directory -----------------------------------------------------------------------------

def test_run_dir_from_option_then_env_else_usage_error(tmp_path: Path) -> None:
    assert resolve_run_dir(str(tmp_path / "a"), env={"LOOP_PI_RUN_DIR": "/x"}) == tmp_path / "a"
    assert resolve_run_dir(None, env={"LOOP_PI_RUN_DIR": str(tmp_path)}) == tmp_path
    with pytest.raises(UsageError) as err:
        resolve_run_dir(None, env={})
    assert err.value.exit_code == 2 and "LOOP_PI_RUN_DIR" in str(err.value)


def test_record_push_without_run_dir_exits_2(tmp_path: Path) -> None:
    env = env_with()
    env.pop("LOOP_PI_RUN_DIR", None)
    done = run_cli("record-push", "--repo", str(tmp_path), "--ref", "refs/heads/main",
                   "--old", ZERO, "--new", SHA_A, env=env)
    assert done.returncode == 2 and "--run-dir" in done.stderr


def test_write_json_is_sorted_indented_with_newline(tmp_path: Path) -> None:
    write_json(tmp_path / "x.json", {"b": 1, "a": [1]})
    assert (tmp_path / "x.json").read_text() == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'


# --- push log ----------------------------------------------------------------------------------

def entry(**over: str) -> dict[str, str]:
    base = {"repo": "/r", "remote": "origin", "ref": "refs/heads/main", "old": ZERO,
            "new": SHA_A, "at": "2026-11-30T07:00:00Z", "source": "test"}
    base.update(over)
    return base


def test_push_log_round_trip_and_missing_file(tmp_path: Path) -> None:
    assert read_push_log(tmp_path / PUSH_LOG) == []
    append_push(tmp_path, entry())
    append_push(tmp_path, entry(old=SHA_A, new=SHA_B, url="extra keys are kept out of the way"))
    entries = read_push_log(tmp_path / PUSH_LOG)
    assert [(e.old, e.new, e.line) for e in entries] == [(ZERO, SHA_A, 1), (SHA_A, SHA_B, 2)]
    assert entries[0].repo == "/r" and entries[0].source == "test"


@pytest.mark.parametrize(("bad", "words"), [
    ('{"repo": "/r", "remote": "origin"', "malformed push-log line"),
    ("[1, 2]", "not a JSON object"),
    (json.dumps({k: v for k, v in entry().items() if k != "new"}), "missing key 'new'"),
    (json.dumps(entry(old="abc")), "'old' is not a 40-hex SHA"),
    (json.dumps(entry(new="A" * 40)), "'new' is not a 40-hex SHA"),
    (json.dumps({**entry(), "remote": 3}), "'remote' must be a non-empty string"),
    (json.dumps(entry(ref="main")), "not a full ref name"),
    ("", "malformed push-log line"),
])
def test_malformed_push_log_line_is_reported_with_its_number(
        tmp_path: Path, bad: str, words: str) -> None:
    path = tmp_path / PUSH_LOG
    good = json.dumps(entry())
    path.write_text(f"{good}\n{good}\n{bad}\n{good}\n")
    with pytest.raises(InputError) as err:
        read_push_log(path)
    assert err.value.exit_code == 2
    assert str(err.value).startswith(f"{path}:3: ") and words in str(err.value)


def test_torn_last_line_without_newline_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / PUSH_LOG
    path.write_text(json.dumps(entry()) + "\n" + json.dumps(entry())[:30])
    with pytest.raises(InputError, match=r":2: malformed push-log line"):
        read_push_log(path)


def test_same_repo_counts_a_linked_worktree_but_not_another_clone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "other"))
    (tmp_path / "link").symlink_to(clone)
    assert same_repo(str(clone), str(tmp_path / "wt"))
    assert same_repo(str(tmp_path / "link"), str(clone) + "/")
    assert not same_repo(str(clone), str(tmp_path / "other"))
    assert not same_repo(str(tmp_path / "wt"), str(tmp_path / "other"))


def test_record_push_appends_a_valid_entry(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    done = run_cli("record-push", "--repo", str(tmp_path), "--ref", "refs/tags/v1",
                   "--old", ZERO, "--new", SHA_A.upper(), "--remote", "upstream",
                   "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    [e] = read_push_log(run_dir / PUSH_LOG)
    assert (e.repo, e.remote, e.ref, e.old, e.new, e.source) == (
        str(tmp_path.resolve()), "upstream", "refs/tags/v1", ZERO, SHA_A, "record-push")


@pytest.mark.parametrize(("args", "words"), [
    (["--old", "abc", "--new", SHA_A, "--ref", "refs/heads/x"], "--old must be a 40-hex SHA"),
    (["--old", ZERO, "--new", SHA_A, "--ref", "main"], "--ref must be a full ref name"),
])
def test_record_push_rejects_bad_values_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    code = audit_main(["record-push", "--repo", str(tmp_path), "--run-dir", str(tmp_path), *args])
    assert code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / PUSH_LOG).exists()


def test_record_push_refuses_a_missing_run_dir(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = audit_main(["record-push", "--repo", str(tmp_path), "--ref", "refs/heads/main",
                       "--old", ZERO, "--new", SHA_A, "--run-dir", str(tmp_path / "typo")])
    assert code == 2 and "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


# Enough processes started at once to contend for the run directory's lock on two cores.
CONCURRENT_PUSHES = 8


def test_concurrent_record_push_processes_lose_no_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "audit.main", "record-push", "--repo", str(tmp_path),
         "--ref", f"refs/heads/b{i}", "--old", ZERO, "--new", f"{i:040x}",
         "--run-dir", str(run_dir)], stderr=subprocess.PIPE) for i in range(CONCURRENT_PUSHES)]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    entries = read_push_log(run_dir / PUSH_LOG)
    assert sorted(e.ref for e in entries) == sorted(f"refs/heads/b{i}"
                                                    for i in range(CONCURRENT_PUSHES))
    assert {e.new for e in entries} == {f"{i:040x}" for i in range(CONCURRENT_PUSHES)}


# --- snapshots on disk ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "words", "line"), [
    ('{"taken_at": "x",\n "repos": {\n', "malformed snapshot JSON", 3),
    ("[]", "top level is not a JSON object", None),
    ('{"taken_at": "x", "charter_sha256": null}', "`repos` missing", None),
    ('{"taken_at": "x", "charter_sha256": null, "repos": {"/r": {"remotes": {"o": {}}}}}',
     "remotes['o'] is not an object with a boolean `available`", None),
    ('{"taken_at": "x", "charter_sha256": null, "repos": {"/r": {"remotes": {}, '
     '"tags": {"available": false}, "releases": {"available": true, "releases": []}}}}',
     "tags is unavailable without a `reason`", None),
    ('{"taken_at": "x", "charter_sha256": null, "repos": {"/r": {"remotes": {}, '
     '"tags": {"available": true, "tags": {}}, "releases": {"available": true, '
     '"releases": [{"tag_name": "v1"}]}}}}', "releases[0] needs tag_name", None),
])
def test_malformed_snapshot_is_an_input_error(tmp_path: Path, text: str, words: str,
                                              line: int | None) -> None:
    path = write(tmp_path / "before.json", text)
    with pytest.raises(InputError) as err:
        load_snapshot(path)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert err.value.exit_code == 2
    assert str(err.value).startswith(where) and words in str(err.value)


def test_add_to_a_run_directory_never_armed_exits_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    before = write(run_dir / BEFORE, '{"taken_at": "x",\n  "repos": oops}\n')
    assert audit_main(["add", str(clone), "--run-dir", str(run_dir)]) == 2
    assert "was never armed in the ledger" in capsys.readouterr().err
    assert before.read_text() == '{"taken_at": "x",\n  "repos": oops}\n'


def test_add_to_an_edited_before_snapshot_is_refused_and_seals_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`add` re-seals the before-snapshot: one the run edited must not be sealed anew."""
    isolate_git(monkeypatch, tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 0
    before = write(run_dir / BEFORE, '{"taken_at": "x",\n  "repos": oops}\n')
    assert audit_main(["add", str(other), "--run-dir", str(run_dir)]) == 1
    assert "does not match its seal" in capsys.readouterr().err
    assert before.read_text() == '{"taken_at": "x",\n  "repos": oops}\n'


def test_a_number_too_long_for_python_is_a_malformed_input_named_with_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python refuses to convert an integer of more than 4,300 digits (a ValueError that is not
    a JSONDecodeError): a charter, push log or snapshot holding one stopped the audit with
    exit 3, "unexpected error", and no file named."""
    isolate_git(monkeypatch, tmp_path)
    huge = "9" * 5000
    clone, before, _, _ = moved_snapshots(tmp_path)
    good = write_snapshot(tmp_path / "good.json", before)
    snap = tmp_path / "huge.json"
    snap.write_text(json.dumps(before)[:-1] + f', "n": {huge}}}')
    log = tmp_path / "push-log.jsonl"
    entry = {"repo": str(clone), "remote": "origin", "ref": "refs/heads/main", "old": "0" * 40,
             "new": "1" * 40, "at": "2026-11-30T07:00:00Z", "source": "test"}
    log.write_text(json.dumps(entry) + "\n" + json.dumps(entry)[:-1] + f', "n": {huge}}}\n')
    charter = tmp_path / "charter.md"
    charter.write_text(f"# Charter: acme/widgets loop{huge}\n")
    for args, bad, where in (
            (["compare", str(snap), str(good)], snap, ""),
            (["compare", str(good), str(good), "--push-log", str(log)], log, ":2"),
            (["compare", str(good), str(good), "--charter", str(charter)], charter, ":1")):
        done = run_cli(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"loop-pi-audit: {bad}{where}: "), done.stderr
        assert "unexpected" not in done.stderr


@pytest.mark.parametrize("which", ["push-log.jsonl", "audit-before.json", "charter.md"])
def test_a_fifo_in_place_of_an_input_file_is_refused_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    """The run directory is the run's to write: a FIFO as its push log (or before-snapshot, or
    a charter) made closeout wait forever on the read. Only a regular file is read; anything
    else is a usage error naming it (exit 2)."""
    isolate_git(monkeypatch, tmp_path)
    run = Run(tmp_path)
    run_dir = tmp_path / "run"
    charter = tmp_path / "charter.md"
    done = run_cli("begin", str(run.clone), "--run-dir", str(run_dir), "--charter", str(charter))
    assert done.returncode == 0, done.stderr
    fifo = charter if which == "charter.md" else run_dir / which
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    closed = subprocess.run(
        [sys.executable, "-m", "audit.main", "closeout", "--run-dir", str(run_dir),
         "--charter", str(charter)], capture_output=True, text=True, timeout=60, check=False)
    assert closed.returncode == 2, closed.stderr
    assert closed.stderr.startswith(f"loop-pi-audit: {fifo}: ")
    assert "not a regular file" in closed.stderr


def test_deeply_nested_json_is_a_malformed_line_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--out", str(snap), str(clone)).returncode == 0
    deep = "[" * 100_000 + "\n"
    log = tmp_path / "push-log.jsonl"
    log.write_text('{"not": "a push"}\n' + deep)
    done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
    assert (done.returncode, done.stderr) == (
        2, f"loop-pi-audit: {log}:1: malformed push-log line: missing key 'repo'\n")
    log.write_text(deep)
    done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
    assert done.returncode == 2 and f"{log}:1: malformed push-log line" in done.stderr
    bad = tmp_path / "deep.json"
    bad.write_text(deep)
    done = run_cli("compare", str(bad), str(snap))
    assert done.returncode == 2 and f"{bad}: malformed snapshot JSON" in done.stderr


def test_a_run_directory_that_cannot_be_created_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for args in (("begin", str(clone), "--run-dir", str(blocker / "run")),
                 ("snapshot", "--out", str(blocker / "snap.json"), str(clone))):
        done = run_cli(*args)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith("loop-pi-audit: ")
