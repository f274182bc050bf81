"""kill -9 of a real `loop-verify run` at each step, then a re-run: every task ends in exactly one
correct state, nothing is applied twice, no task file is corrupted, no stray commit.

The steps: at start-up; holding the lock while it checks the recipe (a `just` wrapper pauses on
`--dump`); during a recipe (it touches a marker, then sleeps); after the task edit but before the
commit (a real `pre-commit` hook pauses), for a passing and a failing recipe and for a failure that
moves a task out of completed/; after the commit (a real `post-commit` hook pauses). The killed run
is started in its own session and its whole process group is killed, hooks included; anything it
left (a recipe's sleep lives in the recipe's own session) is found by a mark in its environment,
left running while the re-run works, and killed by the test afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from verify_helpers import (
    VerifyRepo,
    kill_marked,
    make_verify_repo,
    marked_pids,
    start_verify,
    wait_for,
)

from jobs.backlog import parse_task

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
    body = (f"{name}:\n    echo {name} >> {counter}\n    touch {markers}/started-{name}\n"
            f"    if [ -e {hold}-{name} ]; then sleep 30; fi\n")
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


def commits_per_task(repo: VerifyRepo) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for subject in repo.subjects():
        m = re.fullmatch(r"loop-verify: (TASK-\d+) (passed|failed) \(just verify-\w\)", subject)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


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
    order = sorted(tasks, key=lambda t: str(tasks[t]))
    done_before = order[:order.index(sc.paused_task)] if sc.paused_task else []
    if sc.pause in ("pre-commit", "post-commit"):
        hooks.append(install_hook(repo, sc.pause,
                                  pausing_hook(markers, sc.pause, len(done_before) + 1)))

    proc = start_verify(repo, "run", *TODAY, mark=mark, out=tmp_path / "killed", env=env)
    try:
        if sc.pause == "start":
            time.sleep(0.1)
        elif sc.pause == "recipe":
            wait_for(markers / "started-verify-b", proc)
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
    before_rerun = commits_per_task(repo)
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
        assert "index.lock" in rerun.stdout, rerun.stdout
        assert commits_per_task(repo) == before_rerun
        assert [(a["task_id"], a["edit_state"]) for a in repo.history()
                if a["edit_state"] != "none"] == [
            *((t, "committed") for t in done_before), (sc.paused_task, "pending")]
        for stale in [git_dir / "index.lock", *git_dir.glob("next-index-*.lock")]:
            stale.unlink()
        rerun = repo.run("run", *TODAY)

    expected_code = 1 if sc.bad else 0
    assert rerun.returncode == expected_code, rerun.stdout + rerun.stderr
    assert "Traceback" not in rerun.stderr
    # The re-run was not disturbed by what the killed run left; now the test cleans it up.
    kill_marked(mark)
    assert marked_pids(mark) == []

    # Every task in exactly one correct state, applied exactly once.
    verdicts = commits_per_task(repo)
    assert verdicts == {t: ["failed" if t == sc.bad else "passed"] for t in tasks}
    assert len(repo.subjects()) == 2 + len(tasks)  # setup, tasks, one per task: no stray commit
    for tid, original in tasks.items():
        failed = tid == sc.bad
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
        last = repo.git("log", "-1", "--format=%s", "--name-only", "--", str(path)).split("\n")
        assert last[0].startswith(f"loop-verify: {tid} ")
    assert leftover_temp_files(repo) == []
    assert repo.status() == ""
    assert not (git_dir / "index.lock").exists()
    assert repo.remote_refs() == remote_before

    # The ledger: no edit left pending; the one the crash interrupted was finished, not redone.
    attempts = repo.history()
    assert not [a for a in attempts if a["edit_state"] == "pending"]
    committed = [a for a in attempts if a["edit_state"] == "committed"]
    assert sorted(a["task_id"] for a in committed) == sorted(tasks)
    shas = {a["task_id"]: a["commit_sha"] for a in committed}
    for tid, sha in shas.items():
        subject = repo.git("log", "-1", "--format=%s", sha).strip()
        assert subject.startswith(f"loop-verify: {tid} "), (tid, subject)
    if sc.paused_task is not None and sc.pause in ("pre-commit", "post-commit"):
        [interrupted] = [a for a in committed if a["task_id"] == sc.paused_task]
        assert interrupted["run_id"] != attempts[-1]["run_id"]
        events = [e for e in repo.log_events() if e["event"] == "verify.recovered"]
        assert [e["task"] for e in events] == [sc.paused_task]
    # How often each recipe really ran: once, except the one killed mid-run (then once more).
    runs = counter.read_text().split()
    for tid, x in (("TASK-1", "a"), ("TASK-2", "b"), ("TASK-3", "c")):
        again = sc.pause == "recipe" and tid == sc.paused_task
        assert runs.count(f"verify-{x}") == (2 if again else 1), runs
