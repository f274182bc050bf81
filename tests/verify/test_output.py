"""Issue 9 item 8: output that fails gracefully and says what happened.

A closed stdout never stops verifying and is never a verdict; a refusing hook's own words reach
the reason; `just`'s multi-line diagnostics print on real lines; repositories that share a folder
name are told apart; the "no repositories" message and `doctor` name the config file they read.
Real repositories, real hooks, real `just`, `loop-verify` as a real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from project import ROOT
from verify_helpers import VerifyRepo, make_verify_repo, verify_argv

TODAY = ("--today", "2026-11-30")


def run_into_closed_pipe(repo: VerifyRepo, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`loop-verify ARGS | head -0`, deterministically: the pipe's reader is gone before the
    process starts, so its first write meets EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run(verify_argv(repo, *args), cwd=repo.root, stdout=write_end,
                              stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    finally:
        os.close(write_end)


def test_a_closed_stdout_never_stops_verifying(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.add_task(3)
    repo.commit_all("three tasks")
    proc = run_into_closed_pipe(repo, "run", *TODAY)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert proc.stderr == b"", proc.stderr.decode()
    assert proc.returncode == 1
    verdicts = {a["task_id"]: a["verdict"] for a in repo.history()}
    assert verdicts == {"TASK-1": "pass", "TASK-2": "fail", "TASK-3": "pass"}
    for args in (("history",), ("history", "--json"), ("list", *TODAY), ("run", *TODAY)):
        proc = run_into_closed_pipe(repo, *args)
        assert proc.stderr == b"", (args, proc.stderr.decode())
        assert proc.returncode == 0, args


def test_a_refusing_hooks_own_words_are_the_reason(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.commit_all("one task")
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'policy: stdout says no'\necho 'stderr says no' >&2\n"
                    "exit 1\n")
    hook.chmod(0o755)
    proc = repo.run("run", *TODAY)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (attempt,) = [a for a in repo.history() if a["task_id"] == "TASK-1"]
    assert "policy: stdout says no" in attempt["reason"], attempt
    assert "stderr says no" in attempt["reason"], attempt
    assert "policy: stdout says no" in proc.stdout


def test_a_justfile_syntax_error_prints_on_real_lines(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile="verify-ok:\n    echo ok\n\nverify-ok:\n"
                            "    echo again\n")
    repo.add_task(1)
    repo.commit_all("a broken justfile")
    proc = repo.run("run", *TODAY)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("fail ") and "redefined on line 4" in lines[0], lines
    assert "\\n" not in proc.stdout
    assert any(line.startswith("    ") and "justfile:4:1" in line for line in lines[1:]), lines
    history = repo.run("history").stdout
    assert "\\n" not in history and any("justfile:4:1" in line for line in history.splitlines())


def test_repositories_with_the_same_folder_name_are_told_apart(tmp_path: Path) -> None:
    first = make_verify_repo(tmp_path / "work" / "app-a", tasks=[1])
    second = make_verify_repo(tmp_path / "home" / "app-b", tasks=[1])
    config = yaml.safe_load(first.config_path.read_text())
    config["repos"] = [{"path": str(first.root)}, {"path": str(second.root)}]
    first.config_path.write_text(yaml.safe_dump(config))
    names = ("app-a/app", "app-b/app")
    dry = first.run("run", *TODAY, "--dry-run").stdout.splitlines()[:-1]
    assert [line.split()[2] for line in dry] == list(names), dry
    listed = first.run("list", *TODAY).stdout.splitlines()
    assert [line.split()[1] for line in listed] == list(names), listed
    ran = first.run("run", *TODAY).stdout.splitlines()[:-1]
    assert [line.split()[1] for line in ran] == list(names), ran
    history = first.run("history").stdout.splitlines()
    # timestamp, machine, verdict, repository
    assert [line.split()[3] for line in history] == list(names), history


def test_no_repositories_and_doctor_name_the_config_file(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    config = yaml.safe_load(repo.config_path.read_text())
    del config["repos"]
    repo.config_path.write_text(yaml.safe_dump(config))
    for verb in ("run", "list"):
        proc = repo.run(verb)
        assert proc.returncode == 2
        assert str(repo.config_path) in proc.stderr, proc.stderr
    doctor = repo.run("doctor").stdout
    (line,) = [line for line in doctor.splitlines() if line.startswith("FAIL repositories")]
    assert str(repo.config_path) in line, doctor
    # Without any file, the message names the file it looked for.
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "LOOP_JOBS_CONFIG": ""}
    proc = subprocess.run([sys.executable, "-m", "jobs.main", "list"],
                          cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    assert str(tmp_path / "xdg" / "loop-jobs" / "config.yaml") in proc.stderr, proc.stderr


def test_run_list_and_history_show_c1_controls_and_bidi_overrides_escaped(
        tmp_path: Path) -> None:
    # `one_line` escaped C0 controls but let the C1 ones through (U+009B is CSI, a terminal's
    # escape sequence in one character) and the bidirectional overrides, which reverse the rest
    # of the line: a file name a recipe leaves, or a task file's own name, reached the terminal.
    csi, rlo = "\x9b", "\u202e"
    name = f"a{csi}2J{rlo}txt.b"
    justfile = f"verify-mk:\n    touch '{name}'\n"
    repo = make_verify_repo(tmp_path, justfile=justfile)
    repo.add_task(1, notes="verify-cmd: just verify-mk")
    broken = repo.root / "backlog" / "tasks" / f"task-9 - x{csi}31m{rlo}gnp.md"
    broken.write_text("---\nid: [\n---\n", encoding="utf-8")
    repo.commit_all()

    outputs = [repo.run("list", *TODAY), repo.run("run", *TODAY), repo.run("history")]
    assert [p.returncode for p in outputs] == [0, 1, 0], [p.stderr for p in outputs]
    for proc in outputs:
        assert csi not in proc.stdout and rlo not in proc.stdout, proc.stdout
    assert "x\\x9b31m\\u202egnp.md" in outputs[0].stdout
    for proc in outputs[1:]:
        assert "a\\x9b2J\\u202etxt.b" in proc.stdout, proc.stdout


@pytest.mark.parametrize("closed", [">&-", "2>&-", ">&- 2>&-", "<&- >&- 2>&-"])
def test_a_run_started_with_its_standard_streams_closed_still_verifies_and_tells_the_truth(
        tmp_path: Path, closed: str) -> None:
    # Started with stdout closed (a supervisor or a script's `>&-`), Python has no sys.stdout:
    # the first printed line raised AttributeError after the verdict commit, the repository was
    # recorded as an unexpected error and `run` exited 3 for a pass; with stderr closed too,
    # nothing was verified at all.
    repo = make_verify_repo(tmp_path, tasks=[1])
    script = f'exec "$@" {closed}'
    done = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "jobs.main", "run",
                           "--config", str(repo.config_path), *TODAY],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    events = [e["event"] for e in repo.log_events()]
    assert "verify.passed" in events and not [e for e in events if "unexpected" in e], events
