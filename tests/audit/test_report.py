"""The audit's report: every line in the SPEC's shape and the summary line whatever the count,
consecutive passing commits as one finding, no line a commit subject could forge, and JSON byte
for byte what json.dumps writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from audit_helpers import Run, commit, git, isolate_git, make_repo_with_remote, rev, run_cli

from audit.model import PUSH_LOGGED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


LINE = re.compile(r"^( {4})?\[[^\]]+\] \S+ \S+: .+ [0-9a-f]{7}\.\.[0-9a-f]{7} "
                  r"\[(PUSH_LOGGED|BACKLOG_ONLY|RELEASE_PLEASE|FOREIGN|UNGRANTED|"
                  r"NON_FAST_FORWARD|UNVERIFIED)\] .+$")


def test_consecutive_passing_commits_are_one_finding_failing_ones_stay_alone(
        tmp_path: Path) -> None:
    from audit.report import render_json, render_text

    run = Run(tmp_path)
    logged = [commit(run.clone, f"src/l{i}.py", "x\n", f"logged {i}") for i in range(3)]
    run.push()
    tasks = [commit(run.clone, f"backlog/tasks/task-{i}.md", "x\n", f"task {i}")
             for i in range(2)]
    bad = [commit(run.clone, f"src/b{i}.py", "x\n", f"bad {i}") for i in range(2)]
    run.push(logged=False)
    findings = run.judge()
    text = render_text(findings)
    commit_lines = [line for line in text.splitlines() if line.startswith("    ")]
    assert len(commit_lines) == 4  # bad, bad, 2 tasks as one, 3 logged as one
    assert sum("commit " in line and "[UNGRANTED]" in line for line in commit_lines) == 2
    grouped = next(line for line in commit_lines if "3 commits" in line)
    assert f"{rev(run.clone, logged[0] + '~1')[:7]}..{logged[2][:7]}" in grouped
    assert "[PUSH_LOGGED] 3 commits in logged push" in grouped
    assert any("2 commits each changes only backlog/" in line for line in commit_lines)
    assert text.rstrip().endswith("audit: 6 findings, 4 failing")
    data = json.loads(render_json(findings))
    group = next(f for f in data["findings"] if f.get("count") == 3)
    assert (group["first"], group["last"], group["commit"]) == (logged[0], logged[2], logged[2])
    assert group["verdict"] == PUSH_LOGGED and group["kind"] == "commit"
    singles = [f for f in data["findings"] if f["kind"] == "commit" and "count" not in f]
    assert sorted(f["commit"] for f in singles) == sorted(bad)
    assert render_json(findings) == render_json(run.judge())  # byte-identical
    assert {f["commit"] for f in data["findings"] if f.get("count") == 2} == {tasks[1]}


def test_fast_writers_match_json_dumps_byte_for_byte() -> None:
    from audit.evidence.rundir import dump_json
    from audit.report import _finding_json

    odd = ["plain", "é ünïcödé", 'quote " and \\ backslash', "tab\tnew\nline\x00\x1f", "\u2028",
           "emoji 😀", ""]
    for text in odd:
        finding = {"repo": text, "remote": "origin", "ref": text, "kind": "commit",
                   "before": None, "after": "a" * 40, "commit": None, "verdict": "PUSH_LOGGED",
                   "reason": text, "count": 3, "first": text, "last": "b"}
        assert _finding_json(finding) == json.dumps(finding, sort_keys=True, ensure_ascii=False)
        snap = {"z": [text, 1, None, True, 2.5, {}, []], "a": {text: {"k": [text]}}, "e": {}}
        assert dump_json(snap) == json.dumps(snap, sort_keys=True, indent=2,
                                             ensure_ascii=False) + "\n"


def test_a_commit_subject_cannot_forge_lines_of_the_text_report(tmp_path: Path) -> None:
    """A subject (or a path) may hold a carriage return, terminal escapes or a Unicode line
    separator: printed raw, `...\\r\\x1b[2Kaudit: no remote changes` showed a clean report on a
    terminal, and a reader splitting lines saw findings that were never made."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    forged = "audit: no remote changes"
    (clone / "src").mkdir()
    (clone / "src" / f"x\r{forged}.py").write_text("x\n")
    git(clone, "add", "src")
    git(clone, "commit", "-q", "-m",
        f"sneak\r\x1b[2K{forged}\x1b[8m\u2028{forged}\x85{forged}\x0b{forged}")
    git(clone, "push", "-q", "origin", "main")
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode == 1
    for text in (done.stdout, (run_dir / "audit-report.txt").read_text(encoding="utf-8")):
        lines = text.splitlines()
        assert lines == text.split("\n")[:-1]  # no line break but "\n"
        assert all(line.isprintable() for line in lines), lines
        assert [line for line in lines if line.startswith("audit:")] == [lines[-1]]
        assert lines[-1] == "audit: 3 findings, 3 failing"
        assert "\\r" in text and "\\x1b" in text  # shown, escaped


def test_summary_says_findings_even_for_one(tmp_path: Path) -> None:
    """SPEC: the summary line is `audit: N findings, K failing`, whatever N is."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")  # one unlogged ref: one finding
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"
    again = run_cli("report", "--run-dir", str(run_dir))
    assert again.returncode == 1
    assert again.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"


def test_every_report_line_has_the_spec_shape(tmp_path: Path) -> None:
    """Even a finding about no ref at all (a vanished remote) keeps `<before>..<after>`."""
    clone, bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src.txt", "x\n", "unlogged work")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")
    git(clone, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    done = run_cli("closeout", "--run-dir", str(run_dir))
    lines = done.stdout.splitlines()
    assert done.returncode in (1, 3) and len(lines) >= 4, done.stdout
    # What the audit could judge only by its net change is said in `note:` lines before the
    # summary (the bare remote keeps no journal); every other line is a finding.
    notes = [line for line in lines[:-1] if line.startswith("note: ")]
    assert notes and all("net change only" in note for note in notes)
    for line in lines[:-1]:
        assert line in notes or LINE.match(line), line
    assert re.fullmatch(r"audit: \d+ findings, \d+ failing", lines[-1])
