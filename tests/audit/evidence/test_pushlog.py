"""The push log's lines: a final newline ends the last one, an empty file holds no push, and a
blank line or a path holding a NUL is a malformed line named with its number (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_helpers import (
    ZERO,
    Run,
    commit,
    compare_files,
    isolate_git,
    make_repo_with_remote,
    run_cli,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_a_nul_in_a_push_log_path_is_a_malformed_line_not_a_traceback(tmp_path: Path) -> None:
    """A push-log entry whose `repo` held a NUL reached os.path.realpath: `unexpected error:
    ValueError: embedded null byte`, exit 3. It is a malformed line: exit 2, file and line."""
    run = Run(tmp_path)
    commit(run.clone, "src/x.py", "x\n", "x")
    run.push()
    with run.log.open("a") as fh:
        fh.write(json.dumps({"repo": "/tmp/a\u0000b", "remote": "origin",
                             "ref": "refs/heads/main", "old": ZERO, "new": ZERO,
                             "at": "2026-11-30T07:00:00Z", "source": "test"}) + "\n")
    code, _, err, _, _ = compare_files(tmp_path, run.before, run.snapshot(), run.log)
    assert code == 2, err
    assert err == (f"loop-pi-audit: {run.log}:2: malformed push-log line: 'repo' holds a NUL "
                   "character\n")


def test_push_log_ends_empty_file_and_blank_lines(tmp_path: Path) -> None:
    """A final newline is the end of the last line; an empty file holds no push; a blank line
    is a malformed line, named as such with its number."""
    clone, _ = make_repo_with_remote(tmp_path)
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--out", str(snap), str(clone)).returncode == 0
    zero = "0" * 40
    line = json.dumps({"repo": str(clone), "remote": "origin", "ref": "refs/heads/x",
                       "old": zero, "new": "1" * 40, "at": "2026-11-30T07:00:00Z",
                       "source": "test"})
    log = tmp_path / "push-log.jsonl"
    for text in ("", line + "\n", line):
        log.write_text(text)
        done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
        assert (done.returncode, done.stdout) == (0, "audit: no remote changes\n"), done.stderr
    for text, number in ((line + "\n\n", 2), ("\n" + line + "\n", 1), ("\n", 1)):
        log.write_text(text)
        done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
        assert (done.returncode, done.stderr) == (
            2, f"loop-pi-audit: {log}:{number}: malformed push-log line: blank line "
               "(one JSON object per line)\n")


def test_a_key_given_twice_on_a_line_is_a_malformed_line(tmp_path: Path) -> None:
    """`{"repo": "/a", ..., "repo": "/b"}` is read as /b by Python and as /a by other readers (a
    person, jq's first-wins tools): a line that says two things explains nothing."""
    run = Run(tmp_path)
    commit(run.clone, "src/x.py", "x\n", "x")
    run.push()
    line = json.dumps({"repo": str(run.clone), "remote": "origin", "ref": "refs/heads/x",
                       "old": ZERO, "new": "1" * 40, "at": "2026-11-30T07:00:00Z",
                       "source": "test"})
    with run.log.open("a") as fh:
        fh.write(line[:-1] + ', "repo": "/elsewhere"}\n')
    code, _, err, _, _ = compare_files(tmp_path, run.before, run.snapshot(), run.log)
    assert code == 2, err
    assert err == (f"loop-pi-audit: {run.log}:2: malformed push-log line: key 'repo' given "
                   "twice\n")
