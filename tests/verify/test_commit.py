"""Verdict commits against hostile repositories: hooks that stage or change files, hooks that
refuse, a stale index.lock, signing that cannot work, an ignored backlog/ (issue 9 items 4-6).

Real repositories with bare remotes, real `just`, real hooks in .git/hooks and real gpg
configuration; `loop-verify` is called in-process (no signal is involved).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from verify_helpers import (
    VerifyRepo,
    hook,
    kill_marked,
    make_verify_repo,
    marked_pids,
    start_verify,
)

from jobs.config.load import load_config
from jobs.git import repo as git
from jobs.git.facts import CommitFacts
from jobs.ledger.model import Attempt
from jobs.ledger.store import Ledger
from jobs.main import main as verify_main

TODAY = ("--today", "2026-11-30")


def counting_repo(tmp_path: Path) -> tuple[VerifyRepo, Path]:
    """A repository whose recipe `verify-count` appends a line to a file outside it per run."""
    count = tmp_path / "recipe-runs.txt"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-count:\n    echo ran >> {count}\n\nverify-ok:\n    echo ok\n"))
    (repo.root / "VERSION").write_text("1\n")
    repo.commit_all("version")
    return repo, count


def runs(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def run_json(repo: VerifyRepo, capsys: pytest.CaptureFixture[str],
             *args: str) -> tuple[int, list[dict[str, Any]]]:
    capsys.readouterr()
    code = verify_main(["run", "--config", str(repo.config_path), *TODAY, "--json", *args])
    data = json.loads(capsys.readouterr().out)
    return code, list(data["results"])


def doctor(repo: VerifyRepo, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    verify_main(["doctor", "--config", str(repo.config_path)])
    return capsys.readouterr().out


# -- item 4: the verdict commit holds exactly the task file -----------------------------------

def test_a_hook_that_stages_another_file_gets_the_verdict_commit_undone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    hook(repo, "pre-commit", "echo 2 > VERSION\ngit add VERSION\n")
    head, before, remote = repo.head(), task.read_bytes(), repo.remote_refs()

    code, results = run_json(repo, capsys)

    assert code == 3
    [result] = results
    assert result["verdict"] == "error" and result["task_id"] == "TASK-1"
    assert "VERSION" in result["reason"] and "undone" in result["reason"], result["reason"]
    assert repo.head() == head and repo.remote_refs() == remote
    assert task.read_bytes() == before
    assert (repo.root / "VERSION").read_text() == "1\n"
    assert repo.status() == ""
    assert runs(count) == 1


def test_a_reopening_move_is_still_one_commit_of_both_paths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The check must accept the move out of completed/ it makes itself.
    repo = make_verify_repo(tmp_path, justfile="verify-bad:\n    exit 1\n")
    repo.add_task(1, folder="completed", notes="verify-cmd: just verify-bad")
    repo.commit_all("task")
    code, [result] = run_json(repo, capsys)
    assert code == 1 and result["verdict"] == "fail" and result["edit_state"] == "committed"
    assert sorted(repo.files_in_head_commit()) == [
        "backlog/completed/task-1 - Task-1.md", "backlog/tasks/task-1 - Task-1.md"]


# -- item 5: a commit hook that changes the work tree is the repository's error ----------------

def test_a_commit_hook_changing_the_tree_is_an_error_not_the_next_recipes_drift(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    first = repo.add_task(1, notes="verify-cmd: just verify-count")
    second = repo.add_task(2, notes="verify-cmd: just verify-count")
    repo.commit_all("tasks")
    hook(repo, "post-commit", "echo stamped > hook-stamp.txt\n")
    untouched = second.read_bytes()

    code, results = run_json(repo, capsys)

    assert code == 3
    verdicts = [(r["verdict"], r["task_id"]) for r in results]
    assert verdicts == [("pass", "TASK-1"), ("error", None), ("skipped", "TASK-2")], results
    assert results[1]["reason"] == "a commit hook changed the work tree: hook-stamp.txt"
    assert "a commit hook changed the work tree: hook-stamp.txt" in results[2]["reason"]
    assert all(r["verdict"] != "drift" for r in results)
    # The first verdict is committed (it holds only its task file); the second recipe never ran.
    assert repo.files_in_head_commit() == [str(first.relative_to(repo.root))]
    assert runs(count) == 1 and second.read_bytes() == untouched
    # What the hook left is left alone.
    assert (repo.root / "hook-stamp.txt").read_text() == "stamped\n"


# -- item 6: a repository that cannot take a commit runs no recipe ----------------------------

def assert_skipped_before_any_recipe(repo: VerifyRepo, count: Path, task: Path,
                                     capsys: pytest.CaptureFixture[str], *words: str) -> str:
    head, before = repo.head(), task.read_bytes()
    code, results = run_json(repo, capsys)
    assert code == 3, results
    [result] = results
    assert result["verdict"] == "skipped" and result["task_id"] is None
    reason = str(result["reason"])
    for word in words:
        assert word in reason, reason
    assert runs(count) == 0
    assert repo.head() == head and task.read_bytes() == before
    return reason


def test_a_stale_index_lock_skips_the_repository_before_any_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    lock = repo.root / ".git" / "index.lock"
    lock.write_text("")
    assert_skipped_before_any_recipe(repo, count, task, capsys, "index.lock")
    out = doctor(repo, capsys)
    assert f"FAIL repo {repo.root}:" in out and "index.lock" in out
    assert f"remove {lock}" in out


@pytest.mark.parametrize("name", ["HEAD.lock", "refs/heads/main.lock"])
def test_a_stale_ref_lock_skips_the_repository_before_any_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    # A git killed while it moved HEAD leaves HEAD.lock: every commit on the branch fails
    # ("cannot lock ref 'HEAD'") until the owner removes it, so the recipe's verdict could
    # not land.
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    lock = repo.root / ".git" / name
    lock.write_text("")
    assert_skipped_before_any_recipe(repo, count, task, capsys, name)
    out = doctor(repo, capsys)
    assert f"FAIL repo {repo.root}:" in out and f"remove {lock}" in out


def test_signing_with_no_usable_key_skips_the_repository_before_any_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(gnupg))   # an empty keyring: the key is nowhere
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    repo.git("config", "commit.gpgsign", "true")
    repo.git("config", "user.signingkey", "0xDEADBEEFDEADBEEF")
    assert_skipped_before_any_recipe(repo, count, task, capsys, "commit.gpgsign", "sign")
    out = doctor(repo, capsys)
    assert f"FAIL repo {repo.root}:" in out and "commit.gpgsign" in out
    assert "commit.gpgsign false" in out


def test_an_ignored_backlog_skips_the_repository_before_any_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    (repo.root / ".gitignore").write_text("ignored/\nbacklog/\n")
    repo.commit_all("ignore the backlog")
    # The task lives only on disk: git does not see it, so the tree looks clean.
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    assert repo.status() == ""
    reason = assert_skipped_before_any_recipe(repo, count, task, capsys, "backlog/", "ignored")
    assert ".gitignore" in reason
    out = doctor(repo, capsys)
    assert f"FAIL repo {repo.root}:" in out and "ignored" in out and ".gitignore" in out


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """`folder` that this process cannot write into: read-only by its mode, or for root (whom
    no mode stops) immutable (chattr +i); skipped where neither can be had."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("running as root on a file system without chattr +i: no folder can be "
                    "made unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("folder", ["tasks", "completed"])
def test_an_unwritable_backlog_folder_skips_the_repository_before_any_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count", folder=folder)
    repo.commit_all("task")
    with unwritable(task.parent):
        reason = assert_skipped_before_any_recipe(repo, count, task, capsys,
                                                  f"backlog/{folder}", "cannot be written")
        out = doctor(repo, capsys)
    assert "cannot take a commit" in reason
    assert f"FAIL repo {repo.root}:" in out and f"backlog/{folder}" in out, out
    assert "cannot be written" in out and "the account the scheduler runs as" in out


# -- item 6: a verdict refused by a hook is kept and committed later without the recipe --------

def test_a_refused_verdict_is_committed_later_without_running_the_recipe_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    refusing = hook(repo, "commit-msg", "echo 'commit-msg: no ticket number' >&2\nexit 1\n")
    head, before = repo.head(), task.read_bytes()

    code, [first] = run_json(repo, capsys)
    assert code == 3 and first["verdict"] == "pass" and first["edit_state"] == "restored"
    assert "no ticket number" in first["reason"]
    assert runs(count) == 1 and task.read_bytes() == before and repo.head() == head

    # Still refused: the recipe is not run again for a verdict it already gave.
    code, [second] = run_json(repo, capsys)
    assert code == 3 and second["verdict"] == "error" and second["task_id"] == "TASK-1"
    assert "no ticket number" in second["reason"]
    assert runs(count) == 1 and task.read_bytes() == before and repo.head() == head
    out = doctor(repo, capsys)
    assert "verdict" in out and "no ticket number" in out and "TASK-1" in out

    refusing.unlink()
    code, [third] = run_json(repo, capsys)
    assert code == 0 and third["verdict"] == "pass" and third["edit_state"] == "committed"
    assert runs(count) == 1
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-count)"
    assert repo.files_in_head_commit() == [str(task.relative_to(repo.root))]
    assert "verify:2026-11-01" not in task.read_text() and repo.status() == ""
    assert third["commit_sha"] == repo.head()

    # Nothing is left to commit and nothing is due: a fourth run does nothing at all.
    code, results = run_json(repo, capsys)
    assert code == 0 and results == [] and runs(count) == 1


def test_a_refused_commit_never_puts_back_a_task_file_someone_edited_while_it_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The owner edits the task while a slow pre-commit hook runs, and the hook then refuses the
    # commit (the hook does both here, so the edit lands at a known moment). Putting the task's
    # old bytes back would throw the owner's edit away, and the next run would commit the kept
    # verdict over it: the file is left as the owner made it, and nothing commits over it.
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    hook(repo, "pre-commit", f"echo 'A note of the owner.' >> '{task}'\n"
         "echo 'pre-commit: refused' >&2\nexit 1\n")
    head = repo.head()

    code, results = run_json(repo, capsys)

    assert code == 3 and runs(count) == 1 and repo.head() == head
    assert task.read_text().endswith("A note of the owner.\n")
    assert "verify:" not in task.read_text()  # the verdict was in it when the owner edited it
    assert [r["verdict"] for r in results] == ["pass", "error"], results
    assert "a commit hook changed the work tree" in results[1]["reason"]
    owners = task.read_bytes()

    (repo.root / ".git" / "hooks" / "pre-commit").unlink()
    _, results = run_json(repo, capsys)
    assert task.read_bytes() == owners and repo.head() == head, results
    assert runs(count) == 1


def test_a_kept_verdict_is_dropped_when_the_task_file_changed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    refusing = hook(repo, "pre-commit", "echo 'pre-commit: refused' >&2\nexit 1\n")
    code, _ = run_json(repo, capsys)
    assert code == 3 and runs(count) == 1
    refusing.unlink()
    # The owner edits the task: the verdict kept for the old text no longer applies.
    task.write_text(task.read_text().replace("Task 1\n<!-- SECTION:DESCRIPTION:END",
                                             "Task 1, reworded\n<!-- SECTION:DESCRIPTION:END"))
    repo.commit_all("reword")

    code, [result] = run_json(repo, capsys)
    assert code == 0 and result["verdict"] == "pass" and result["edit_state"] == "committed"
    assert runs(count) == 2
    assert "reworded" in task.read_text()
    history = [(a["verdict"], a["edit_state"]) for a in repo.history()]
    assert history == [("pass", "abandoned"), ("pass", "committed")], history


def test_doctor_says_ok_for_a_repository_that_can_take_a_commit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    out = doctor(repo, capsys)
    assert f"ok   repo {repo.root}: clean on main, backlog found" in out


def test_a_refused_reopening_is_kept_and_later_committed_as_the_move(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    count = tmp_path / "recipe-runs.txt"
    repo = make_verify_repo(tmp_path, justfile=f"verify-bad:\n    echo ran >> {count}\n"
                            "    exit 1\n")
    done = repo.add_task(1, folder="completed", notes="verify-cmd: just verify-bad")
    repo.commit_all("task")
    refusing = hook(repo, "pre-commit", "echo 'pre-commit: frozen' >&2\nexit 1\n")
    code, [first] = run_json(repo, capsys)
    assert code == 1 and first["verdict"] == "fail" and first["edit_state"] == "restored"
    reopened = repo.root / "backlog" / "tasks" / done.name
    assert done.exists() and not reopened.exists() and repo.status() == ""

    refusing.unlink()
    code, [second] = run_json(repo, capsys)
    assert code == 1 and second["verdict"] == "fail" and second["edit_state"] == "committed"
    assert runs(count) == 1
    assert sorted(repo.files_in_head_commit()) == [
        str(done.relative_to(repo.root)), str(reopened.relative_to(repo.root))]
    assert not done.exists() and "status: To Do" in reopened.read_text()
    assert repo.status() == ""


def test_a_dry_run_reports_a_repository_that_cannot_take_a_commit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    (repo.root / ".git" / "index.lock").write_text("")
    code, [result] = run_json(repo, capsys, "--dry-run")
    assert code == 3 and result["verdict"] == "skipped" and "index.lock" in result["reason"]
    assert runs(count) == 0


def test_a_recovered_pending_edit_is_checked_like_any_verdict_commit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What a run killed between writing a verdict and committing it leaves: the edited file and
    # a pending ledger row. Its commit by the next run meets a hook that stages VERSION.
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    head, before = repo.head(), task.read_bytes()
    after = before.replace(b"  - 'verify:2026-11-01'\n", b"")
    assert after != before
    ledger = Ledger(load_config(repo.config_path).ledger)
    rel = str(task.relative_to(repo.root))
    ledger.record(Attempt(
        run_id="killed", started_at=datetime(2026, 11, 30, 7, 30, tzinfo=UTC),
        repo=str(repo.root), verdict="pass", task_id="TASK-1", task_path=rel,
        recipe="verify-count", label_date="2026-11-01", edit_state="pending",
        before_sha256=hashlib.sha256(before).hexdigest(),
        after_sha256=hashlib.sha256(after).hexdigest(), edit_paths=[rel],
        commit_message="loop-verify: TASK-1 passed (just verify-count)"))
    ledger.close()
    task.write_bytes(after)
    hook(repo, "pre-commit", "echo 2 > VERSION\ngit add VERSION\n")

    code, results = run_json(repo, capsys)

    assert code == 3
    assert results[0]["verdict"] == "error" and "VERSION" in results[0]["reason"], results
    assert repo.head() == head and task.read_bytes() == before
    assert (repo.root / "VERSION").read_text() == "1\n" and repo.status() == ""
    states = {a["run_id"]: a["edit_state"] for a in repo.history()}
    assert states["killed"] == "abandoned"


def test_a_hook_in_core_hookspath_is_checked_for_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, count = counting_repo(tmp_path)
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    (shared / "pre-commit").write_text("#!/bin/sh\necho 2 > VERSION\ngit add VERSION\n")
    (shared / "pre-commit").chmod(0o755)
    repo.git("config", "core.hooksPath", str(shared))
    head, before = repo.head(), task.read_bytes()
    code, [result] = run_json(repo, capsys)
    assert code == 3 and result["verdict"] == "error" and "VERSION" in result["reason"]
    assert repo.head() == head and task.read_bytes() == before and repo.status() == ""


@pytest.mark.parametrize("how", ["a hook file", "core.hooksPath"])
def test_a_hook_the_recipe_installs_is_checked_for_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    # No hook when the run looks at the repository; the recipe adds one (outside the work tree,
    # so no drift): the verdict commit it stages into must still be caught and undone.
    hooks = tmp_path / "recipe-hooks"
    hooks.mkdir()
    body = "#!/bin/sh\necho 2 > VERSION\ngit add VERSION\n"
    if how == "a hook file":
        escaped = body.replace("\n", "\\n")  # printf's escapes: one line in the justfile
        install = (f"printf '{escaped}' > .git/hooks/pre-commit\n"
                   "    chmod +x .git/hooks/pre-commit")
    else:
        (hooks / "pre-commit").write_text(body)
        (hooks / "pre-commit").chmod(0o755)
        install = f"git config core.hooksPath {hooks}"
    repo = make_verify_repo(tmp_path / "app", justfile=f"verify-sneak:\n    {install}\n")
    (repo.root / "VERSION").write_text("1\n")
    task = repo.add_task(1, notes="verify-cmd: just verify-sneak")
    repo.commit_all("task")
    head, before = repo.head(), task.read_bytes()
    code, [result] = run_json(repo, capsys)
    assert code == 3 and result["verdict"] == "error", result
    assert "VERSION" in result["reason"] and "undone" in result["reason"], result["reason"]
    assert repo.head() == head and task.read_bytes() == before and repo.status() == ""
    assert (repo.root / "VERSION").read_text() == "1\n"


def test_a_post_commit_hook_the_recipe_installs_is_the_repositorys_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The first recipe installs a hook that changes the tree after each commit: the change is
    # seen right after the first verdict commit, never blamed on the second recipe as drift.
    repo = make_verify_repo(tmp_path, justfile=(
        "verify-sneak:\n    printf '#!/bin/sh\\necho x > stamp.txt\\n' > .git/hooks/post-commit\n"
        "    chmod +x .git/hooks/post-commit\n\nverify-ok:\n    true\n"))
    repo.add_task(1, notes="verify-cmd: just verify-sneak")
    second = repo.add_task(2, notes="verify-cmd: just verify-ok")
    repo.commit_all("tasks")
    untouched = second.read_bytes()
    code, results = run_json(repo, capsys)
    assert code == 3
    assert [(r["verdict"], r["task_id"]) for r in results] == [
        ("pass", "TASK-1"), ("error", None), ("skipped", "TASK-2")], results
    assert results[1]["reason"] == "a commit hook changed the work tree: stamp.txt"
    assert second.read_bytes() == untouched


def git_verbs(trace: Path) -> list[str]:
    """The git command of every git process started, from git's own trace (trace2)."""
    verbs = []
    for event in map(json.loads, trace.read_text().splitlines()):
        if event["event"] == "start":
            args = event["argv"][1:]
            while args[0] == "-c":  # `git -c key=value <command>`
                args = args[2:]
            verbs.append(args[0])
    return verbs


@pytest.mark.parametrize("alone", [True, False])
def test_a_verdict_commit_is_checked_unless_nothing_else_started_while_it_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        alone: bool) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    monkeypatch.setattr(git, "started_nothing_after", lambda pid: alone)
    trace = tmp_path / "trace2.jsonl"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    code, results = run_json(repo, capsys)
    assert code == 0 and [r["verdict"] for r in results] == ["pass", "pass"], results
    verbs = git_verbs(trace)
    assert verbs.count("commit") == 2
    # Two commits, each checked (its paths, then the tree) or not at all.
    assert verbs.count("diff-tree") == (0 if alone else 2)
    # The readiness check and one per recipe, plus one per commit when checked.
    assert verbs.count("status") == 3 + (0 if alone else 2)


def test_started_nothing_after_is_false_once_another_process_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = subprocess.Popen(["git", "--version"], stdout=subprocess.DEVNULL)
    done.wait()
    subprocess.run(["git", "--version"], capture_output=True, check=True)  # a process after it
    assert git.started_nothing_after(done.pid) is False
    # Without the counter (macOS, a /proc that hides it) the answer is always the safe one.
    monkeypatch.setattr(git, "_LAST_PID", tmp_path / "no-such-file")
    assert git.started_nothing_after(done.pid) is False
    counter = tmp_path / "ns_last_pid"
    counter.write_text(f"{done.pid}\n")
    monkeypatch.setattr(git, "_LAST_PID", counter)
    assert git.started_nothing_after(done.pid) is True


def test_signing_is_read_as_git_reads_a_boolean(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    assert git.commit_facts(repo.root, "main", []) == CommitFacts()
    repo.git("config", "commit.gpgSign", "no")
    assert git.commit_facts(repo.root, "main", []).signing is False
    repo.git("config", "commit.gpgSign", "1")
    repo.git("config", "gpg.program", str(tmp_path / "no-such-gpg"))
    facts = git.commit_facts(repo.root, "main", [])
    assert facts.signing is True and facts.signing_error is not None


def test_git_auto_maintenance_runs_once_per_repository_not_once_per_verdict(
        tmp_path: Path) -> None:
    # Every git process the run starts writes its argv to git's own trace (trace2).
    repo = make_verify_repo(tmp_path, tasks=[1, 2, 3])
    trace = tmp_path / "trace2.jsonl"
    done = repo.run("run", *TODAY, env={"GIT_TRACE2_EVENT": str(trace)})
    assert done.returncode == 0, done.stdout + done.stderr
    started = [event["argv"] for event in map(json.loads, trace.read_text().splitlines())
               if event["event"] == "start"]
    assert len([argv for argv in started if "commit" in argv]) == 3
    assert len([argv for argv in started if "maintenance" in argv]) == 1
    verdicts = [s for s in repo.subjects() if s.startswith("loop-verify: ")]
    assert len(verdicts) == 3 and all(" passed " in s for s in verdicts), verdicts


def test_failed_auto_maintenance_is_logged_and_changes_no_verdict(tmp_path: Path) -> None:
    # A setting only `git maintenance` reads, and rejects: the verdict commits still go through.
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    repo.git("config", "maintenance.gc.enabled", "notabool")
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[:-1]] == ["pass", "pass"]
    assert done.stdout.splitlines()[-1].startswith("2 passed in ")
    assert repo.status() == ""
    failed = [e for e in repo.log_events() if e["event"] == "repo.maintenance_failed"]
    assert len(failed) == 1 and "notabool" in failed[0]["reason"]


# -- a commit hook that never ends ------------------------------------------------------------

def test_a_commit_hook_that_never_ends_is_stopped_at_the_timeout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hook that hangs holds the run no longer than the repository's timeout: git and the
    hook are stopped (git removes its own locks), the task file is restored and the verdict
    kept, and the next run commits it without running the recipe again."""
    count = tmp_path / "recipe-runs.txt"
    repo = make_verify_repo(tmp_path, timeout="4s",
                            justfile=f"verify-count:\n    echo ran >> {count}\n")
    task = repo.add_task(1, notes="verify-cmd: just verify-count")
    repo.commit_all("task")
    hanging = hook(repo, "pre-commit", f"echo $$ > {tmp_path / 'hook.pid'}\nexec sleep 600\n")
    head, before = repo.head(), task.read_bytes()
    mark = f"hanging-hook-{tmp_path.name}"
    proc = start_verify(repo, "run", *TODAY, "--json", mark=mark, out=tmp_path / "run")
    try:
        code: int | None = proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        code = None
    left = marked_pids(mark)  # the run has ended: nothing it started may still run
    kill_marked(mark)
    proc.wait()

    assert code == 3, (code, (tmp_path / "run.stderr").read_text())
    assert left == [], left
    [result] = json.loads((tmp_path / "run.stdout").read_text())["results"]
    assert result["verdict"] == "pass" and result["edit_state"] == "restored", result
    assert "4 s" in result["reason"] and "stopped" in result["reason"], result["reason"]
    assert (tmp_path / "hook.pid").exists()  # the hook did run, and hang
    assert runs(count) == 1 and task.read_bytes() == before and repo.head() == head
    assert not (repo.root / ".git" / "index.lock").exists()
    assert repo.status() == ""

    hanging.unlink()
    code, [second] = run_json(repo, capsys)
    assert code == 0 and second["edit_state"] == "committed", second
    assert runs(count) == 1
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-count)"


# -- a claim outlives a slow verdict commit ----------------------------------------------------

@pytest.mark.parametrize("ran_long", [True, False], ids=["recipe ran long", "quick recipe"])
def test_the_claim_is_extended_before_the_verdict_commit_only_after_a_long_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        ran_long: bool) -> None:
    """The commit, hooks included, may take up to the timeout: a claim taken before a long
    recipe could run out while it commits, and another machine would verify the task again.
    A recipe counts as long past half the claim's margin (made 0 here, so that every recipe
    is); a quick one costs no extra write."""
    import sqlalchemy as sa

    from jobs.ledger.store import claims as claims_table
    from jobs.verify import claims

    if ran_long:
        monkeypatch.setattr(claims, "CLAIM_MARGIN", 0.0)
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = load_config(repo.config_path)
    ttl = config.timeout + config.kill_grace + claims.CLAIM_MARGIN

    code, [result] = run_json(repo, capsys)

    assert code == 0 and result["edit_state"] == "committed", result
    engine = sa.create_engine(config.ledger)
    with engine.connect() as conn:
        [row] = conn.execute(sa.select(claims_table)).all()
    engine.dispose()
    assert row.finished_at is not None and row.verdict == "pass"
    lifetime = (row.expires_at - row.claimed_at).total_seconds()
    if ran_long:
        # extended after the recipe: from a later moment than the claim was taken
        assert lifetime > ttl, (lifetime, ttl)
        # (finished_at is kept to the second)
        assert row.expires_at < row.finished_at + timedelta(seconds=ttl + 1)
    else:
        assert lifetime == ttl, (lifetime, ttl)
