"""kill -9 of a real `loop-verify run` at each step, then a re-run: every task ends in exactly one
correct state, nothing is applied twice, no task file is corrupted, no stray commit.

The steps: at start-up; holding the lock while it checks the recipe (a `just` wrapper pauses on
`--dump`); during a recipe (it touches a marker, then sleeps); after the task edit but before the
commit (a real `pre-commit` hook pauses), for a passing and a failing recipe and for a failure that
moves a task out of completed/; after the commit (a real `post-commit` hook pauses). The killed run
is started in its own session and its whole process group is killed, hooks included; anything it
left (a recipe's sleep lives in the recipe's own session) is found by a mark in its environment
and left running for the re-run: the re-run must not be disturbed by it, and it sweeps a killed
run's recipe itself; the test kills anything else (the paused `just --dump` wrapper).

A `git commit` killed inside its pre-commit hook leaves `.git/index.lock`; only the owner can tell
a stale lock from a live git, so the first re-run skips the repository (one line saying why) and
the test then removes the lock as the owner would. Two steps no outside observer can wait for are
hit exactly by a process that SIGKILLs itself at the call: inside the atomic write of the task
file (temporary sibling written, not renamed) and after the edit just before git is called (the
pending edit is then committed by the re-run with no help at all).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from verify_helpers import (
    CRASHER,
    ROOT,
    VerifyRepo,
    git_show,
    kill_marked,
    make_verify_repo,
    marked_pids,
    start_verify,
    verdict_commits,
    verify_argv,
    wait_for,
)

from jobs.backlog.scan import parse_task
from jobs.ledger.store import Ledger
from jobs.verify.terminal import natural_key

TODAY = ("--today", "2026-11-30")


@dataclass(frozen=True)
class Scenario:
    name: str
    bad: str | None = None        # the task whose recipe fails, if any
    bad_folder: str = "tasks"
    pause: str = "start"          # start, dump, recipe, pre-commit, post-commit
    paused_task: str | None = None


SCENARIOS = [
    Scenario("at start-up"),
    Scenario("while checking the recipe", pause="dump"),
    Scenario("during the recipe", pause="recipe", paused_task="TASK-2"),
    Scenario("after the edit, before the commit (pass)", pause="pre-commit",
             paused_task="TASK-2"),
    Scenario("after the edit, before the commit (fail)", bad="TASK-2", pause="pre-commit",
             paused_task="TASK-2"),
    Scenario("after the edit, before the commit (fail, moved from completed/)", bad="TASK-2",
             bad_folder="completed", pause="pre-commit", paused_task="TASK-2"),
    Scenario("after the commit", pause="post-commit", paused_task="TASK-2"),
]


def recipe(name: str, *, counter: Path, markers: Path, hold: Path, exit_code: int = 0) -> str:
    # One shell line: the "holding" marker exists only once the recipe has seen its hold file,
    # so a test that waits for it cannot race the check (the hold file is removed after a kill).
    body = (f"{name}:\n    echo {name} >> {counter}\n    touch {markers}/started-{name}\n"
            f"    if [ -e {hold}-{name} ]; then touch {markers}/holding-{name}; sleep 30; fi\n")
    if exit_code:
        body += f"    exit {exit_code}\n"
    return body + "\n"


def pausing_hook(markers: Path, kind: str, at_call: int) -> str:
    # Pauses on its at_call-th invocation only, so earlier commits of the same run go through.
    calls = markers / f"{kind}-calls"
    return (f"#!/bin/sh\necho x >> {calls}\n"
            f"if [ \"$(wc -l < {calls})\" -eq {at_call} ]; then\n"
            f"  touch {markers}/{kind}-paused\n  sleep 30\nfi\n")


def just_wrapper(markers: Path) -> str:
    real = shutil.which("just")
    assert real is not None
    return ("#!/bin/sh\ncase \" $* \" in *\" --dump \"*)\n"
            f"  touch {markers}/dump-paused\n  sleep 30;;\nesac\nexec {real} \"$@\"\n")


def build(tmp_path: Path, sc: Scenario) -> tuple[VerifyRepo, dict[str, Path], Path, Path]:
    markers = tmp_path / "markers"
    markers.mkdir()
    counter = tmp_path / "counter"
    hold = tmp_path / "hold"
    text = "".join(recipe(f"verify-{x}", counter=counter, markers=markers, hold=hold,
                          exit_code=3 if sc.bad == f"TASK-{n}" else 0)
                   for n, x in ((1, "a"), (2, "b"), (3, "c")))
    repo = make_verify_repo(tmp_path / "r", justfile=text)
    tasks = {}
    for n, x in ((1, "a"), (2, "b"), (3, "c")):
        folder = sc.bad_folder if sc.bad == f"TASK-{n}" else "tasks"
        tasks[f"TASK-{n}"] = repo.add_task(n, notes=f"verify-cmd: just verify-{x}",
                                           folder=folder)
    repo.commit_all("tasks")
    if sc.pause == "recipe":
        # Only the killed run's recipe sleeps; the re-run's returns at once.
        Path(f"{hold}-verify-b").touch()
    return repo, tasks, markers, counter


def install_hook(repo: VerifyRepo, kind: str, text: str) -> Path:
    hook = repo.root / ".git" / "hooks" / kind
    hook.write_text(text)
    hook.chmod(0o755)
    return hook


def leftover_temp_files(repo: VerifyRepo) -> list[Path]:
    backlog = repo.root / "backlog"
    return [p for d in ("tasks", "completed") for p in (backlog / d).glob(".*")]


def final_path(repo: VerifyRepo, original: Path, failed: bool) -> Path:
    if failed and original.parent.name == "completed":
        return repo.root / "backlog" / "tasks" / original.name
    return original


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_9_then_rerun(tmp_path: Path, sc: Scenario) -> None:
    repo, tasks, markers, counter = build(tmp_path, sc)
    remote_before = repo.remote_refs()
    mark = uuid.uuid4().hex
    env: dict[str, str] = {}
    hooks: list[Path] = []
    if sc.pause == "dump":
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "just").write_text(just_wrapper(markers))
        (bindir / "just").chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    # Tasks are verified in path order (completed/ before tasks/).
    order = sorted(tasks, key=natural_key)  # the run's order: TASK-2 before TASK-10
    done_before = order[:order.index(sc.paused_task)] if sc.paused_task else []
    if sc.pause in ("pre-commit", "post-commit"):
        hooks.append(install_hook(repo, sc.pause,
                                  pausing_hook(markers, sc.pause, len(done_before) + 1)))

    proc = start_verify(repo, "run", *TODAY, mark=mark, out=tmp_path / "killed", env=env)
    try:
        if sc.pause == "start":
            pass  # killed at once: still importing, before any recipe could start
        elif sc.pause == "recipe":
            wait_for(markers / "holding-verify-b", proc)
        else:
            wait_for(markers / f"{sc.pause}-paused", proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    # What the killed run left: the paused task edited (pre-commit) or committed (post-commit).
    before_rerun = verdict_commits(repo)
    if sc.pause == "post-commit":
        done_before.append(sc.paused_task or "")
    assert before_rerun == {t: ["failed" if t == sc.bad else "passed"] for t in done_before}
    if sc.pause in ("start", "dump"):
        assert not list(markers.glob("started-*"))
    if sc.pause == "pre-commit":
        assert repo.status() != ""
    survivors = marked_pids(mark)
    if sc.pause in ("recipe", "dump"):
        # `just` runs in its own session: SIGKILL to the run's group does not reach it.
        assert survivors
    else:
        deadline = time.monotonic() + 5
        while survivors and time.monotonic() < deadline:
            time.sleep(0.02)  # the group's members take a moment to die
            survivors = marked_pids(mark)
        assert survivors == []

    for hook in hooks:
        hook.unlink()
    Path(f"{tmp_path / 'hold'}-verify-b").unlink(missing_ok=True)
    git_dir = repo.root / ".git"
    rerun = repo.run("run", *TODAY)
    if sc.pause == "pre-commit":
        # git was killed inside `git commit` and left its index.lock. Only the owner can tell a
        # stale lock from a live git process, so the run skips the repository and says why;
        # the task keeps its written verdict, pending, and nothing else is touched.
        assert rerun.returncode == 3, rerun.stdout + rerun.stderr
        line, closing = rerun.stdout.splitlines()
        assert closing.startswith("1 skipped in "), closing
        assert re.match(f"skipped  app: cannot commit the pending edit of {sc.paused_task}: "
                        "git (add|commit) failed", line), line
        assert "index.lock': File exists" in line
        assert verdict_commits(repo) == before_rerun
        assert [(a["task_id"], a["edit_state"]) for a in repo.history()
                if a["edit_state"] != "none"] == [
            *((t, "committed") for t in done_before), (sc.paused_task, "pending")]
        for stale in [git_dir / "index.lock", *git_dir.glob("next-index-*.lock")]:
            stale.unlink()
        rerun = repo.run("run", *TODAY)

    if sc.pause == "recipe":
        # The re-run, not the test, ended what the killed run's recipe left running.
        assert marked_pids(mark) == []
        assert any(e["event"] == "run.swept_abandoned" for e in repo.log_events())
    kill_marked(mark)  # whatever else it left (a `just --dump` of the wrapper) is the test's
    recovered = sc.paused_task if sc.pause in ("pre-commit", "post-commit") else None
    check_final(repo, tasks, rerun, bad=sc.bad, counter=counter, remote_before=remote_before,
                recovered=recovered, ran_twice=sc.paused_task if sc.pause == "recipe" else None)
    assert marked_pids(mark) == []


def check_final(repo: VerifyRepo, tasks: dict[str, Path], rerun: subprocess.CompletedProcess[str],
                *, bad: str | None, counter: Path, remote_before: str,
                recovered: str | None = None, abandoned: str | None = None,
                ran_twice: str | None = None) -> None:
    """After the re-run: every task in exactly one correct state, applied exactly once."""
    assert rerun.returncode == (1 if bad else 0), rerun.stdout + rerun.stderr
    assert "Traceback" not in rerun.stderr
    if recovered is not None:
        # The re-run reports the verdict the killed run never got to report.
        assert re.search(rf"^\w+\s+app {recovered}\b.*interrupted run", rerun.stdout,
                         re.M), rerun.stdout
    verdicts = verdict_commits(repo)
    assert verdicts == {t: ["failed" if t == bad else "passed"] for t in tasks}
    assert len(repo.subjects()) == 2 + len(tasks)  # setup, tasks, one per task: no stray commit
    for tid, original in tasks.items():
        failed = tid == bad
        path = final_path(repo, original, failed)
        data = path.read_bytes()
        task = parse_task(path, data, path.parent.name)
        if failed:
            assert task.status == "To Do"
            assert task.labels.count("verify-failed") == 1
            assert task.verify_labels == ("verify:2026-11-01",)
            assert data.count(b"verify-failed 20") == 1, data.decode()
            assert data.count(b"<!-- SECTION:NOTES:BEGIN -->") == 1
            if path != original:
                assert not original.exists()
        else:
            assert task.status == "Done" and task.verify_labels == ()
        files = repo.git("show", "--name-only", "--format=%s",
                         repo.git("log", "-1", "--format=%H", "--", str(path)).strip())
        subject, *touched = [ln for ln in files.splitlines() if ln]
        assert subject.startswith(f"loop-verify: {tid} ")
        expected = {str(path.relative_to(repo.root)), str(original.relative_to(repo.root))}
        assert set(touched) == expected
    assert leftover_temp_files(repo) == []
    assert repo.status() == ""
    assert not (repo.root / ".git" / "index.lock").exists()
    assert repo.remote_refs() == remote_before

    # The ledger: no edit left pending; the interrupted one finished (or abandoned), not redone.
    attempts = repo.history()
    assert not [a for a in attempts if a["edit_state"] == "pending"]
    committed = [a for a in attempts if a["edit_state"] == "committed"]
    assert sorted(a["task_id"] for a in committed) == sorted(tasks)
    for a in committed:
        subject = repo.git("log", "-1", "--format=%s", a["commit_sha"]).strip()
        assert subject.startswith(f"loop-verify: {a['task_id']} "), (a, subject)
    assert [a["task_id"] for a in attempts if a["edit_state"] == "abandoned"] == (
        [abandoned] if abandoned else [])
    events = {e["task"] for e in repo.log_events() if e["event"] == "verify.recovered"}
    assert events == {t for t in (recovered, abandoned) if t}
    if recovered is not None:
        [finished] = [a for a in committed if a["task_id"] == recovered]
        assert finished["run_id"] != attempts[-1]["run_id"]
    # How often each recipe really ran: once, unless the crash threw its verdict away.
    runs = counter.read_text().split()
    for tid, x in (("TASK-1", "a"), ("TASK-2", "b"), ("TASK-3", "c")):
        assert runs.count(f"verify-{x}") == (2 if tid in (ran_twice, abandoned) else 1), runs


INJECTED = [
    ("inside the atomic write (pass)", "rename", None, "tasks"),
    ("inside the atomic write (fail, moved from completed/)", "rename", "TASK-2", "completed"),
    ("after the edit, before git is called (pass)", "commit", None, "tasks"),
    ("after the edit, before git is called (fail, moved from completed/)", "commit", "TASK-2",
     "completed"),
]


@pytest.mark.parametrize(("point", "bad", "bad_folder"), [c[1:] for c in INJECTED],
                         ids=[c[0] for c in INJECTED])
def test_kill_9_at_an_exact_step_then_rerun(tmp_path: Path, point: str, bad: str | None,
                                            bad_folder: str) -> None:
    sc = Scenario(point, bad=bad, bad_folder=bad_folder)
    repo, tasks, _markers, counter = build(tmp_path, sc)
    remote_before = repo.remote_refs()
    order = sorted(tasks, key=natural_key)  # the run's order: TASK-2 before TASK-10
    victim = "TASK-2"
    nth = order.index(victim) + 1
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, *verify_argv(repo, "run", *TODAY)[3:]],
        cwd=repo.root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CRASH_AT": point, "CRASH_NTH": str(nth)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr

    done_before = order[:nth - 1]
    assert verdict_commits(repo) == {t: ["failed" if t == bad else "passed"]
                                      for t in done_before}
    pending = [a for a in repo.history() if a["edit_state"] == "pending"]
    assert [a["task_id"] for a in pending] == [victim]
    if point == "rename":
        # The old file is whole and a temporary sibling is left behind: never a mix.
        assert tasks[victim].read_bytes().count(b"verify:2026-11-01") == 1
        assert len(leftover_temp_files(repo)) == 1
    else:
        assert repo.status() != "" and leftover_temp_files(repo) == []

    rerun = repo.run("run", *TODAY)
    check_final(repo, tasks, rerun, bad=bad, counter=counter, remote_before=remote_before,
                recovered=victim if point == "commit" else None,
                abandoned=victim if point == "rename" else None)


def crash_before_commit(repo: VerifyRepo) -> None:
    """A real `loop-verify run` SIGKILLed after it wrote the first verdict, before git ran."""
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, *verify_argv(repo, "run", *TODAY)[3:]],
        cwd=repo.root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CRASH_AT": "commit", "CRASH_NTH": "1"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert [a["edit_state"] for a in repo.history()] == ["pending"]


@pytest.mark.parametrize("leave", [("switch", "-q", "-c", "feature"),
                                   ("switch", "-q", "--detach")], ids=["branch", "detached"])
def test_a_pending_edit_is_not_committed_onto_another_checkout(
        tmp_path: Path, leave: tuple[str, ...]) -> None:
    # A run died between writing a verdict and committing it; the owner then switched to a
    # branch of their own (git carries the changed task file along). The verdict belongs on
    # main: the repository is skipped, and the edit stays pending for when main is back.
    repo = make_verify_repo(tmp_path, tasks=[1])
    main_before = repo.head()
    crash_before_commit(repo)
    repo.git(*leave)
    here = repo.head()

    proc = repo.run("run", *TODAY, "--json")

    [result] = json.loads(proc.stdout)["results"]
    assert result["verdict"] == "skipped", result
    assert proc.returncode == 3
    assert repo.head() == here and repo.git("rev-parse", "main").strip() == main_before
    assert [a["edit_state"] for a in repo.history() if a["task_id"]] == ["pending"]

    # Back on main, the next run finishes the edit without running the recipe again.
    repo.git("switch", "-q", "main")
    proc = repo.run("run", *TODAY, "--json")
    assert proc.returncode == 0, proc.stdout
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert repo.status() == ""


def test_crash_recovery_keeps_a_commit_git_made_before_it_failed(tmp_path: Path) -> None:
    # The verdict commit's rule holds for crash recovery's commit too: a run died before its
    # commit, and the next run's commit of the pending edit moves the branch, then git is
    # killed in its post-commit hook. The edit is committed: it is recorded so, never put back.
    repo = make_verify_repo(tmp_path, tasks=[1])
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before = repo.head()
    crash_before_commit(repo)
    install_hook(repo, "post-commit", "#!/bin/sh\nkill -INT $PPID\n")

    proc = repo.run("run", *TODAY, "--json")

    assert repo.git("rev-parse", "HEAD~1").strip() == before
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    assert repo.status() == "" and task.read_bytes() == git_show(repo, "HEAD", task)
    assert [a["edit_state"] for a in repo.history() if a["task_id"]] == ["committed"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verify:" not in task.read_text()


@pytest.mark.parametrize("attributes", [None, "*.md text eol=crlf\n"],
                         ids=["plain", "checked out with CRLF"])
def test_a_committed_verdict_never_reads_abandoned(tmp_path: Path,
                                                   attributes: str | None) -> None:
    repo = make_verify_repo(tmp_path)
    path = repo.add_task(1)
    if attributes is not None:
        # git keeps LF and writes CRLF into the work tree: the verdict's bytes are not the
        # blob's.
        (repo.root / ".gitattributes").write_text(attributes)
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    repo.commit_all("one task")
    if attributes is not None:
        assert repo.status() == "" and b"\r\n" in path.read_bytes()
        assert b"\r\n" not in git_show(repo, "HEAD", path)
    assert repo.run("run", *TODAY).returncode == 0
    verdict_commit = repo.head()
    # The state a kill -9 right after the verdict commit leaves: the row still pending.
    ledger = Ledger(f"sqlite:///{repo.state_dir / 'ledger.db'}")
    try:
        (row,) = ledger.history()
        assert row.edit_state == "committed" and row.commit_sha == verdict_commit
        row.edit_state, row.commit_sha = "pending", None
        ledger.update(row)
    finally:
        ledger.close()
    # Then the owner edits the task (and commits it) before the next run.
    path.write_text(path.read_text().replace("Task 1", "Task one"))
    repo.git("commit", "-qam", "owner's edit")
    proc = repo.run("run", *TODAY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = repo.history()
    assert [r["edit_state"] for r in rows] == ["committed"], rows
    assert rows[0]["commit_sha"] == verdict_commit


@pytest.mark.parametrize("edited", ["completed", "tasks"])
def test_recovery_of_a_move_never_deletes_a_task_file_the_owner_edited(
        tmp_path: Path, edited: str) -> None:
    # A run died after it moved a reopened task out of completed/ and before its commit. The
    # owner, seeing completed/ lose a file, restored it (`git checkout -- <path>`) and edited one
    # of the two copies. Neither copy is the run's to delete any more: both stay as the owner
    # left them, and nothing is run or committed (an edited old file leaves the edit pending and
    # the repository skipped; an edited new one is no longer the edit, and the two files now
    # share an id, which makes the task unreadable).
    repo = make_verify_repo(tmp_path)
    original = repo.add_task(1, notes="verify-cmd: just verify-bad", folder="completed")
    repo.commit_all("a done task")
    target = repo.root / "backlog" / "tasks" / original.name
    crash_before_commit(repo)
    assert target.exists() and not original.exists()
    repo.git("checkout", "--", str(original.relative_to(repo.root)))
    owners = original if edited == "completed" else target
    owners.write_bytes(owners.read_bytes() + b"\nThe owner's own note.\n")
    kept = {p: p.read_bytes() for p in (original, target)}
    head = repo.head()

    proc = repo.run("run", *TODAY, "--json")

    assert {p: p.read_bytes() for p in (original, target) if p.exists()} == kept
    assert repo.head() == head
    results = json.loads(proc.stdout)["results"]
    assert all(r["verdict"] == "skipped" for r in results), results
    assert len(list(repo.state_dir.glob("runs/*/*.log"))) == 1, "the recipe ran again"
