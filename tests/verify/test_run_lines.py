"""What `run` says on a terminal (SPEC `run`'s output): one line per task it acted on (a failure
with its exit code or its limit), ids in natural order, a closing summary line; `--quiet` and
`--verbose`; `--dry-run` and `list` saying when a recipe is not in the justfile."""

from __future__ import annotations

import re
from pathlib import Path

from verify_helpers import JUSTFILE, make_verify_repo

from jobs.verify.summary import closing_line, elapsed
from jobs.verify.terminal import natural_key

TODAY = ("--today", "2026-11-30")
JUST_SLOW = JUSTFILE + "\nverify-sleepy:\n    sleep 5\n"


def test_the_closing_line_names_each_verdict_and_the_time() -> None:
    assert closing_line({"pass": 3, "fail": 1, "skipped": 1}, 134.2) == \
        "3 passed, 1 failed, 1 skipped in 2m14s"
    assert closing_line({"timeout": 1, "refused": 2}, 0.42) == "1 timed out, 2 refused in 0.4s"
    assert [elapsed(s) for s in (9.96, 12, 3599, 3600 * 2 + 61)] == \
        ["10.0s", "12s", "59m59s", "2h01m"]
    assert sorted(["TASK-10", "TASK-5", "TASK-5.1", "TASK-2"], key=natural_key) == \
        ["TASK-2", "TASK-5", "TASK-5.1", "TASK-10"]


def test_lines_in_natural_order_with_exit_codes_limits_and_a_summary(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile=JUST_SLOW, timeout="1s")
    for n in (10, 5):
        repo.add_task(n)
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.add_task(7, notes="verify-cmd: just verify-sleepy")
    repo.commit_all("tasks")
    done = repo.run("run", *TODAY)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[2] for line in lines[:-1]] == ["TASK-2", "TASK-5", "TASK-7", "TASK-10"]
    assert re.fullmatch(r"fail     app TASK-2  just verify-bad  \S+s: exited 3 \[\w{10}\]",
                        lines[0]), lines[0]
    assert re.fullmatch(r"timeout  app TASK-7  just verify-sleepy  \S+s: timed out after 1s "
                        r"\[\w{10}\]", lines[2]), lines[2]
    assert re.fullmatch(r"2 passed, 1 failed, 1 timed out in \S+", lines[-1]), lines[-1]
    levels = {e["event"]: e["level"] for e in repo.log_events()
              if e["event"].startswith("verify.") and e["event"] != "verify.started"}
    assert levels == {"verify.failed": "error", "verify.timeout": "error",
                      "verify.passed": "info"}


def test_a_refused_task_takes_its_natural_place_among_the_verified_ones(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    for n in (1, 7):
        repo.add_task(n)
    repo.add_task(5, notes="verify-cmd: just verify-ok; touch pwned")
    repo.commit_all("tasks")
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stderr  # a refusal is an answer, not "could not check"
    lines = done.stdout.splitlines()
    assert [line.split()[:3] for line in lines[:-1]] == [
        ["pass", "app", "TASK-1"], ["refused", "app", "TASK-5:"], ["pass", "app", "TASK-7"]]
    # The ledger holds them in the same order.
    assert [e["task"] for e in repo.log_events()
            if e["event"] in ("verify.passed", "verify.refused")] == ["TASK-1", "TASK-5", "TASK-7"]


def test_quiet_prints_only_what_did_not_pass_and_verbose_what_was_left_alone(
        tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.add_task(3, labels=("verify:2026-12-24",))
    repo.add_task(4, status="In Progress")
    repo.commit_all("tasks")
    verbose = repo.run("run", *TODAY, "--verbose", "--dry-run")
    assert verbose.returncode == 0, verbose.stderr
    assert "waiting  app TASK-3  just verify-ok: due 2026-12-24" in verbose.stdout
    assert "not done app TASK-4: status is 'In Progress', not 'Done'" in verbose.stdout
    plain = repo.run("run", *TODAY, "--dry-run")
    assert "TASK-3" not in plain.stdout and "TASK-4" not in plain.stdout
    quiet = repo.run("run", *TODAY, "--quiet")
    assert quiet.returncode == 1
    [line] = quiet.stdout.splitlines()
    assert line.startswith("fail     app TASK-2")
    both = repo.run("run", *TODAY, "--quiet", "--verbose")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_quiet_names_a_pass_whose_commit_was_refused(tmp_path: Path) -> None:
    # Silence means all passed: a pass that never reached its task (exit 3) is not silent.
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.commit_all("task")
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by policy >&2\nexit 1\n")
    hook.chmod(0o755)
    quiet = repo.run("run", *TODAY, "--quiet")
    assert quiet.returncode == 3, quiet.stderr
    assert quiet.stdout.startswith("pass     app TASK-1  just verify-ok"), quiet.stdout
    assert "commit failed" in quiet.stdout


def test_dry_run_and_list_say_when_a_recipe_is_not_in_the_justfile(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.add_task(2, notes="verify-cmd: just verify-gone")
    repo.commit_all("tasks")
    dry = repo.run("run", *TODAY, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[:2] == [
        "would run  app TASK-1: just verify-ok",
        "would fail app TASK-2: just verify-gone: the justfile has no recipe verify-gone"]
    listed = repo.run("list", *TODAY)
    assert "due       app TASK-2  just verify-gone  (2026-11-01): the justfile has no recipe " \
        "verify-gone" in listed.stdout, listed.stdout
    assert re.search(r"^due       app TASK-1  just verify-ok  \(2026-11-01\)$", listed.stdout,
                     re.MULTILINE)
    (repo.root / "justfile").unlink()
    repo.commit_all("no justfile")
    listed = repo.run("list", *TODAY)
    assert listed.stdout.count(": no justfile in the repository root") == 2
