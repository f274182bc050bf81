"""Every verdict path of `loop-verify run`, end to end against real repositories and real `just`.

After each: the task file, the git log (one commit touching only that task file, or none), the
remote (never changed) and the ledger.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from verify_helpers import JUSTFILE, VerifyRepo, make_verify_repo

from jobs.backlog.scan import parse_task
from jobs.core.fs import exclusive_dir_lock

TODAY = ("--today", "2026-11-30")


@pytest.fixture
def repo(tmp_path: Path) -> VerifyRepo:
    return make_verify_repo(tmp_path)


def snapshot(repo: VerifyRepo) -> tuple[str, str, list[str]]:
    return repo.head(), repo.remote_refs(), repo.subjects()


def assert_untouched(repo: VerifyRepo, task: Path, before: bytes,
                     state: tuple[str, str, list[str]]) -> None:
    assert task.read_bytes() == before
    assert snapshot(repo) == state
    assert repo.status() == ""


def test_pass_removes_the_label_and_commits_only_that_file(repo: VerifyRepo) -> None:
    task = repo.add_task(1, labels=("verify:2026-11-01", "infra"))
    repo.commit_all("task 1")
    remote_before = repo.remote_refs()
    original = task.read_text()

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^pass\s+app TASK-1\s+just verify-ok", proc.stdout, re.M), proc.stdout
    text = task.read_text()
    assert "'verify:2026-11-01'" not in text
    assert "  - infra" in text and "status: Done" in text
    # Only the label line and updated_date changed.
    changed = [ln for ln in set(original.splitlines()) ^ set(text.splitlines())]
    assert all(ln.startswith(("updated_date:", "  - 'verify:")) for ln in changed), changed
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert repo.files_in_head_commit() == ["backlog/tasks/task-1 - Task-1.md"]
    assert repo.remote_refs() == remote_before
    assert repo.status() == ""
    [attempt] = repo.history()
    assert attempt["verdict"] == "pass" and attempt["task_id"] == "TASK-1"
    assert attempt["commit_sha"] == repo.head()
    assert attempt["exit_code"] == 0 and attempt["recipe"] == "verify-ok"
    assert attempt["label_date"] == "2026-11-01" and attempt["edit_state"] == "committed"
    assert Path(attempt["output_path"]).read_text() == "echo all good\nall good\n"
    events = [e["event"] for e in repo.log_events()]
    assert "verify.passed" in events
    assert all(e["timestamp"].endswith("Z") for e in repo.log_events())

    # Re-running is safe: the task is no longer eligible.
    again = repo.run("run", *TODAY)
    assert again.returncode == 0 and repo.subjects()[0].endswith("passed (just verify-ok)")
    assert len(repo.subjects()) == 3


def test_fail_reopens_with_label_and_summary(repo: VerifyRepo) -> None:
    task = repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all("task 1")
    remote_before = repo.remote_refs()

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 1, proc.stderr
    text = task.read_text()
    assert "status: To Do" in text
    assert "  - 'verify:2026-11-01'\n  - verify-failed\n" in text
    assert re.search(r"verify-failed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: `just verify-bad` exited 3 "
                     r"after \d+\.\ds \(timeout 10s\)\nlast lines of output:\n"
                     r"    echo disk usage 97% over 90%\n    disk usage 97% over 90%\n"
                     r"    exit 3\n    error: .*\nfull output: .+\.log\n"
                     r"<!-- SECTION:NOTES:END -->", text), text
    assert text.index("verify-cmd: just verify-bad\n\nverify-failed") > 0
    assert repo.subjects()[0] == "loop-verify: TASK-1 failed (just verify-bad)"
    assert repo.files_in_head_commit() == ["backlog/tasks/task-1 - Task-1.md"]
    assert repo.remote_refs() == remote_before
    [attempt] = repo.history()
    assert attempt["verdict"] == "fail" and attempt["exit_code"] == 3

    # A reopened task is not Done: the next run leaves it alone and adds nothing twice.
    assert repo.run("run", *TODAY).returncode == 0
    assert task.read_text() == text


def test_timeout_kills_and_reopens(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, timeout="1s")
    task = repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all("task 1")

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 1, proc.stderr
    assert "`just verify-slow` timed out after 1s" in task.read_text()
    assert repo.subjects()[0] == "loop-verify: TASK-1 failed (just verify-slow)"
    [attempt] = repo.history()
    assert attempt["verdict"] == "timeout"
    assert attempt["duration"] < 1 + 1 + 1.5


def test_missing_recipe_fails_without_running(repo: VerifyRepo) -> None:
    task = repo.add_task(1, notes="verify-cmd: just verify-nope")
    repo.commit_all("task 1")

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 1
    text = task.read_text()
    assert "`just verify-nope` not run: the justfile has no recipe verify-nope" in text
    assert "verify-failed" in text and "status: To Do" in text
    [attempt] = repo.history()
    assert attempt["verdict"] == "fail" and attempt["exit_code"] is None


def test_no_justfile_fails_even_with_one_in_a_parent_folder(tmp_path: Path) -> None:
    # A parent folder's justfile must never be used.
    (tmp_path / "justfile").write_text("verify-ok:\n    touch {}\n".format(tmp_path / "PARENT"))
    repo = make_verify_repo(tmp_path, justfile=None)
    task = repo.add_task(1)
    repo.commit_all("task 1")

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 1
    assert "not run: no justfile in the repository root" in task.read_text()
    assert not (tmp_path / "PARENT").exists()


@pytest.mark.parametrize("name", ["Justfile", ".justfile", "JustFile", "JUSTFILE"])
def test_other_justfile_names_are_found(tmp_path: Path, name: str) -> None:
    # A parent folder's justfile is never the one: the root's own is, in any letter case.
    (tmp_path / "justfile").write_text("verify-ok:\n    exit 9\n")
    repo = make_verify_repo(tmp_path, justfile=None)
    repo.write_justfile(JUSTFILE, name=name)
    repo.add_task(1)
    repo.commit_all("task 1")
    assert repo.run("run", *TODAY).returncode == 0
    assert repo.subjects()[0].endswith("passed (just verify-ok)")


def test_just_not_on_path_is_an_error_and_leaves_the_task(repo: VerifyRepo) -> None:
    task = repo.add_task(1)
    repo.commit_all("task 1")
    before, state = task.read_bytes(), snapshot(repo)
    git_dir = os.path.dirname(shutil.which("git") or "/usr/bin/git")

    proc = repo.run("run", *TODAY, env={"PATH": git_dir})

    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert_untouched(repo, task, before, state)
    [attempt] = repo.history()
    assert attempt["verdict"] == "error" and attempt["task_id"] == "TASK-1"
    # Tried again next time, and then it passes.
    assert repo.run("run", *TODAY).returncode == 0
    assert repo.subjects()[0].endswith("passed (just verify-ok)")


def test_a_shell_missing_on_this_machine_is_an_error_and_leaves_every_task(
        repo: VerifyRepo) -> None:
    # `set shell := ["zsh", "-cu"]` on a machine (or a scheduled job's PATH) without zsh: just
    # says the recipes "could not be run". No task may be reopened for it.
    repo.write_justfile('set shell := ["loop-verify-test-no-zsh", "-cu"]\n' + JUSTFILE)
    tasks = [repo.add_task(n) for n in (1, 2)]
    repo.commit_all("tasks")
    before, state = [t.read_bytes() for t in tasks], snapshot(repo)

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 3, proc.stdout + proc.stderr
    for task, old in zip(tasks, before, strict=True):
        assert_untouched(repo, task, old, state)
    attempts = repo.history()
    assert [a["verdict"] for a in attempts] == ["error", "error"]
    assert all("could not find the shell `loop-verify-test-no-zsh`" in a["reason"]
               for a in attempts)
    # Tried again next run, once the shell is there.
    repo.write_justfile(JUSTFILE)
    repo.commit_all("justfile")
    assert repo.run("run", *TODAY).returncode == 0
    assert [s for s in repo.subjects() if "passed" in s] == [
        "loop-verify: TASK-2 passed (just verify-ok)",
        "loop-verify: TASK-1 passed (just verify-ok)"]


def test_waiting_not_done_and_refused_run_nothing(repo: VerifyRepo) -> None:
    marker = repo.root.parent / "ran"
    repo.write_justfile(f"verify-ok:\n    touch {marker}\n")
    waiting = repo.add_task(1, labels=("verify:2026-12-01",))
    not_done = repo.add_task(2, status="In Progress")
    refused = repo.add_task(3, notes="verify-cmd: just verify-ok && touch pwned")
    repo.commit_all("tasks")
    before = {p: p.read_bytes() for p in (waiting, not_done, refused)}
    state = snapshot(repo)

    code, data = repo.run_json("run", *TODAY)

    assert code == 0
    assert [(r["task_id"], r["verdict"]) for r in data["results"]] == [("TASK-3", "refused")]
    assert "malformed verify-cmd" in data["results"][0]["reason"]
    assert not marker.exists() and not (repo.root / "pwned").exists()
    for p, b in before.items():
        assert p.read_bytes() == b
    assert snapshot(repo) == state

    listing = repo.run("list", *TODAY)
    assert listing.returncode == 0
    assert re.search(r"^waiting\s+app TASK-1\s+just verify-ok\s+\(2026-12-01\)$", listing.stdout,
                     re.M), listing.stdout
    assert re.search(r"^not done\s+app TASK-2", listing.stdout, re.M)
    assert re.search(r"^refused\s+app TASK-3.*malformed verify-cmd", listing.stdout, re.M)
    # On its date the waiting task is due.
    assert "due" in repo.run("list", "--today", "2026-12-01").stdout


def test_dry_run_changes_nothing(repo: VerifyRepo) -> None:
    marker = repo.root.parent / "ran"
    repo.write_justfile(f"verify-ok:\n    touch {marker}\n")
    task = repo.add_task(1)
    repo.commit_all("task 1")
    before, state = task.read_bytes(), snapshot(repo)

    proc = repo.run("run", *TODAY, "--dry-run")

    assert proc.returncode == 0
    assert "would run  app TASK-1: just verify-ok" in proc.stdout
    assert not marker.exists()
    assert_untouched(repo, task, before, state)
    assert not (repo.state_dir / "ledger.db").exists() or repo.history() == []


@pytest.mark.parametrize("how", ["untracked", "unstaged", "staged", "branch", "detached",
                                 "rebase"])
def test_repository_preconditions_skip(repo: VerifyRepo, how: str) -> None:
    task = repo.add_task(1)
    repo.commit_all("task 1")
    if how == "untracked":
        (repo.root / "notes.txt").write_text("x")
    elif how == "unstaged":
        (repo.root / "README.md").write_text("changed\n")
    elif how == "staged":
        (repo.root / "README.md").write_text("changed\n")
        repo.git("add", "README.md")
    elif how == "branch":
        repo.git("switch", "-q", "-c", "feature")
    elif how == "detached":
        repo.git("switch", "-q", "--detach", "HEAD")
    elif how == "rebase":
        repo.git("commit", "-q", "--allow-empty", "-m", "one more")
        repo.git("rebase", "-q", "--exec", "false", "HEAD~1", check=False)
        assert (repo.root / ".git" / "rebase-merge").is_dir()
    (repo.root / "ignored").mkdir()
    (repo.root / "ignored" / "cache.bin").write_text("ignored files are fine")
    before, head = task.read_bytes(), repo.head()

    code, data = repo.run_json("run", *TODAY)

    assert code == 3
    [result] = data["results"]
    assert result["verdict"] == "skipped"
    expected = {"untracked": "notes.txt", "unstaged": "README.md", "staged": "README.md",
                "branch": "not 'main'", "detached": "detached", "rebase": "rebase"}[how]
    assert expected in result["reason"]
    assert task.read_bytes() == before and repo.head() == head
    assert any(e["event"] == "repo.skipped" for e in repo.log_events())


def test_ignored_files_do_not_make_a_repository_dirty(repo: VerifyRepo) -> None:
    repo.add_task(1)
    repo.commit_all("task 1")
    (repo.root / "ignored").mkdir()
    (repo.root / "ignored" / "cache.bin").write_text("x")
    assert repo.run("run", *TODAY).returncode == 0


def test_locked_repository_is_skipped(repo: VerifyRepo) -> None:
    task = repo.add_task(1)
    repo.commit_all("task 1")
    before, state = task.read_bytes(), snapshot(repo)
    with exclusive_dir_lock(repo.root / ".git"):
        code, data = repo.run_json("run", *TODAY)
    assert code == 3
    assert [r["verdict"] for r in data["results"]] == ["locked"]
    assert_untouched(repo, task, before, state)


def test_drift_is_recorded_and_stops_the_repository(repo: VerifyRepo) -> None:
    first = repo.add_task(1, notes="verify-cmd: just verify-drift")
    second = repo.add_task(2)
    repo.commit_all("tasks")
    before = (first.read_bytes(), second.read_bytes())
    head = repo.head()

    code, data = repo.run_json("run", *TODAY)

    assert code == 1
    assert [(r["task_id"], r["verdict"]) for r in data["results"]] == [("TASK-1", "drift"),
                                                                       ("TASK-2", "skipped")]
    assert "TASK-1's recipe left the work tree changed" in data["results"][1]["reason"]
    assert "drifted.txt" in data["results"][0]["reason"]
    # The drift is left alone: never reset, never committed.
    assert (repo.root / "drifted.txt").exists()
    assert (first.read_bytes(), second.read_bytes()) == before and repo.head() == head


def test_commit_refused_by_a_hook_restores_the_file(repo: VerifyRepo) -> None:
    task = repo.add_task(1)
    repo.commit_all("task 1")
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by policy >&2\nexit 1\n")
    hook.chmod(0o755)
    before, state = task.read_bytes(), snapshot(repo)

    code, data = repo.run_json("run", *TODAY)

    assert code == 3
    [result] = data["results"]
    assert result["verdict"] == "pass" and "commit failed" in result["reason"]
    assert "refused by policy" in result["reason"]
    assert_untouched(repo, task, before, state)
    assert repo.history()[0]["edit_state"] == "restored"


def test_failure_in_completed_moves_the_task_back(repo: VerifyRepo) -> None:
    done = repo.add_task(7, notes="verify-cmd: just verify-bad", folder="completed")
    repo.commit_all("completed task")

    proc = repo.run("run", *TODAY)

    assert proc.returncode == 1
    moved = repo.root / "backlog" / "tasks" / done.name
    assert not done.exists() and moved.exists()
    assert "status: To Do" in moved.read_text()
    assert sorted(repo.files_in_head_commit()) == sorted(
        [f"backlog/completed/{done.name}", f"backlog/tasks/{done.name}"])
    assert repo.status() == ""


def test_pass_in_completed_stays_there(repo: VerifyRepo) -> None:
    done = repo.add_task(7, folder="completed")
    repo.commit_all("completed task")
    assert repo.run("run", *TODAY).returncode == 0
    assert done.exists() and "verify:" not in done.read_text()


def test_history_filters(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.commit_all("tasks")
    assert repo.run("run", *TODAY).returncode == 1

    text = repo.run("history")
    assert text.returncode == 0
    assert re.search(r"Z\s+\S+\s+pass\s+app TASK-1", text.stdout) and "fail" in text.stdout
    rc, data = repo.run_json("history", "--repo", str(repo.root))
    assert rc == 0 and len(data["attempts"]) == 2
    # A path or a name the ledger holds no attempt of is said so (exit 2), never an empty list.
    elsewhere = repo.run("history", "--repo", str(tmp_path / "elsewhere"))
    assert elsewhere.returncode == 2
    assert "no attempt recorded for the repository at" in elsewhere.stderr
    assert "(it knows " + str(repo.root) in elsewhere.stderr
    rc, data = repo.run_json("history", "--repo", "app")
    assert rc == 0 and len(data["attempts"]) == 2
    nameless = repo.run("history", "--repo", "nosuchapp")
    assert nameless.returncode == 2 and "no repository of that name" in nameless.stderr
    rc, data = repo.run_json("history", "--since", "2999-01-01")
    assert data["attempts"] == []
    bad = repo.run("history", "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_bad_configuration_is_exit_2_and_runs_nothing(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    repo.add_task(1)
    repo.commit_all("task")
    for text, needle in [("timeout: 5x\n", "timeout"), ("colour: blue\n", "colour"),
                         ("repos: [{path: /nonexistent}]\n", "not a git work tree"),
                         ("kill_grace: [1]\n", "kill_grace"), ("timezone: Mars/Base\n", "Mars"),
                         ("repos: {\n", "not valid YAML")]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        proc = repo.run("run", "--config", str(bad))
        assert proc.returncode == 2, (text, proc.stderr)
        assert str(bad) in proc.stderr and needle in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert repo.subjects() == ["task", "setup"]


def test_json_output_and_console_lines(repo: VerifyRepo) -> None:
    repo.add_task(1)
    repo.commit_all("task")
    code, data = repo.run_json("run", *TODAY)
    assert code == 0 and data["exit_code"] == 0 and data["today"] == "2026-11-30"
    [r] = data["results"]
    assert r["verdict"] == "pass" and r["commit_sha"] and r["started_at"].endswith("Z")


def test_repo_option_replaces_the_configured_list(tmp_path: Path) -> None:
    a = make_verify_repo(tmp_path / "a")
    b = make_verify_repo(tmp_path / "b")
    b.add_task(1)
    b.commit_all("task")
    proc = a.run("run", *TODAY, "--repo", str(b.root))
    assert proc.returncode == 0
    assert b.subjects()[0].endswith("passed (just verify-ok)")


def test_a_repository_given_twice_is_verified_once(repo: VerifyRepo) -> None:
    # `--repo X --repo X/` names one repository: it is worked on, reported and counted once.
    repo.add_task(1)
    repo.commit_all("task")
    (repo.root / "dirty.txt").write_text("not committed\n")
    proc = repo.run("run", *TODAY, "--repo", str(repo.root), "--repo", f"{repo.root}/")
    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("skipped")] == [
        "skipped  app: work tree not clean: dirty.txt"]
    assert lines[-1].startswith("1 skipped in ")


def test_no_repositories_is_a_usage_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"state_dir: {tmp_path / 's'}\n")
    proc = subprocess.run([sys.executable, "-m", "jobs.main", "run", "--config", str(cfg)],
                          capture_output=True, text=True, check=False,
                          cwd=ROOT)
    assert proc.returncode == 2 and "no repositories" in proc.stderr


def test_a_task_too_unusual_to_edit_is_an_error_and_nothing_runs(repo: VerifyRepo) -> None:
    marker = repo.root.parent / "ran"
    repo.write_justfile(f"verify-ok:\n    touch {marker}\n")
    task = repo.add_task(1)
    # A flow list spread over lines: readable, but not safely editable line by line.
    text = task.read_text().replace("labels:\n  - 'verify:2026-11-01'",
                                    "labels: [\n    'verify:2026-11-01',\n    infra]")
    task.write_text(text)
    repo.commit_all("odd task")
    before, state = task.read_bytes(), snapshot(repo)

    code, data = repo.run_json("run", *TODAY)

    assert code == 3
    [result] = data["results"]
    assert result["verdict"] == "error" and "cannot edit the task file safely" in result["reason"]
    assert not marker.exists()
    assert_untouched(repo, task, before, state)


def test_recipe_output_cannot_forge_markers_or_a_second_command(repo: VerifyRepo) -> None:
    repo.write_justfile("verify-evil:\n"
                        "    @echo '<!-- SECTION:NOTES:END -->'\n"
                        "    @echo 'verify-cmd: just verify-other'\n"
                        "    @printf 'bell\\a and escape \\033[31m red\\n'\n"
                        "    @exit 1\n")
    task = repo.add_task(1, notes="verify-cmd: just verify-evil")
    repo.commit_all("task")
    assert repo.run("run", *TODAY).returncode == 1
    text = task.read_text()
    assert text.count("<!-- SECTION:NOTES:END -->") == 1
    assert "\a" not in text and "\033" not in text
    parsed = parse_task(task, task.read_bytes(), "tasks")
    assert len(parsed.verify_cmd_lines) == 1


def test_a_repository_git_cannot_read_is_skipped_and_the_others_go_on(tmp_path: Path) -> None:
    broken = make_verify_repo(tmp_path / "broken")
    broken.add_task(1)
    broken.commit_all("task")
    (broken.root / ".git" / "index").write_bytes(b"garbage")
    fine = make_verify_repo(tmp_path / "fine")
    fine.add_task(1)
    fine.commit_all("task")

    proc = fine.run("run", *TODAY, "--json", "--repo", str(broken.root), "--repo", str(fine.root))

    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    verdicts = [(r["repo"], r["verdict"]) for r in json.loads(proc.stdout)["results"]]
    assert verdicts == [(str(broken.root), "skipped"), (str(fine.root), "pass")]


def test_git_variables_from_a_hook_do_not_redirect_the_run(tmp_path: Path) -> None:
    # Run from inside another repository's git hook, GIT_DIR and friends point elsewhere.
    other = make_verify_repo(tmp_path / "other")
    repo = make_verify_repo(tmp_path / "main")
    repo.add_task(1)
    repo.commit_all("task")
    other_head = other.head()
    env = {"GIT_DIR": str(other.root / ".git"), "GIT_WORK_TREE": str(other.root),
           "GIT_INDEX_FILE": str(other.root / ".git" / "index")}

    proc = repo.run("run", *TODAY, env=env)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert other.head() == other_head and other.status() == ""


def test_timeout_option_overrides_the_configured_limit(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, timeout="10m",
                            extra_config={"repos": [{"path": str(tmp_path / "app"),
                                                     "timeout": "10m"}]})
    task = repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all("task")

    proc = repo.run("run", *TODAY, "--timeout", "1s")

    assert proc.returncode == 1, proc.stderr
    assert "`just verify-slow` timed out after 1s" in task.read_text()
    [attempt] = repo.history()
    assert attempt["verdict"] == "timeout" and attempt["duration"] < 5
    bad = repo.run("run", *TODAY, "--timeout", "soon")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_a_just_that_rejects_our_arguments_is_an_error_not_a_failure(tmp_path: Path) -> None:
    # An old `just`, or another program named just: the infrastructure, never the task's fault.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "just").write_text("#!/bin/sh\necho \"error: unexpected argument '--dump-format' "
                               "found\" >&2\nexit 2\n")
    (fake / "just").chmod(0o755)
    repo = make_verify_repo(tmp_path / "r")
    tasks = [repo.add_task(n) for n in (1, 2)]
    repo.commit_all("tasks")
    before = [t.read_bytes() for t in tasks]
    git_dir = os.path.dirname(shutil.which("git") or "/usr/bin/git")

    code, data = repo.run_json("run", *TODAY, env={"PATH": f"{fake}:{git_dir}"})

    assert code == 3
    assert [r["verdict"] for r in data["results"]] == ["error", "error"]
    assert "rejected `--dump --dump-format json`" in data["results"][0]["reason"]
    assert [t.read_bytes() for t in tasks] == before
    assert repo.subjects() == ["tasks", "setup"]
