"""SIGTERM, SIGINT, SIGHUP and kill -9 at every step of a task, on a real `loop-verify run`.

Three due tasks; the signal comes while TASK-2 (or, before any recipe, the run) is held at one
step by a real blocking point the test controls — never a sleep:
  * before the recipe: a `just` wrapper blocks on `--dump`, which the run asks before any recipe;
  * during the recipe: the recipe blocks reading a FIFO (seen as its `cat` running);
  * after the recipe, in the ledger write: the test holds the SQLite ledger's write lock while it
    lets the recipe end, so the run's pending-edit write waits for it;
  * during the commit: a real `pre-commit` hook blocks on a FIFO;
  * after the commit: a real `post-commit` hook blocks on a FIFO.
A stop signal goes to the loop-verify process (as `kill`, launchd or systemd's main-process stop
send it); Ctrl-C is also tried as a terminal sends it, to the whole foreground process group.
The held point is then released. kill -9 is followed by the release (a git that outlived its
parent finishes its commit) and by a re-run.

Afterwards, and after a re-run of the rest: each due task verified exactly once (one verdict
commit), no stray commit, every task file whole, the exit codes of the table (3 for a stopped
run, 0 for the re-run), the ledger consistent with git and no edit left pending.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from verify_helpers import (
    ROOT,
    VerifyRepo,
    kill_marked,
    make_verify_repo,
    marked_pids,
    start_verify,
    verdict_commits,
    wait_for,
)

from jobs.backlog.scan import parse_task

TODAY = ("--today", "2026-11-30")
TASKS = ("TASK-1", "TASK-2", "TASK-3")
POINTS = ("before the recipe", "during the recipe", "after the recipe, in the ledger write",
          "during the commit", "after the commit")


@dataclass
class Bench:
    repo: VerifyRepo
    tasks: dict[str, Path]
    markers: Path
    counter: Path
    env: dict[str, str]


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def release(path: Path, timeout: float = 30.0) -> None:
    """Let the one reader blocked on (or about to open) this FIFO go on."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader has opened it yet
                raise
            assert time.monotonic() < deadline, f"nobody ever read {path}"
            time.sleep(0.01)
            continue
        os.close(fd)
        return


def blocked_on(mark: str, name: str, timeout: float = 30.0) -> None:
    """Wait until a process called `name` carrying the mark runs (blocked on its FIFO)."""
    deadline = time.monotonic() + timeout
    while True:
        for pid in marked_pids(mark):
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pid).name() == name:
                    return
        assert time.monotonic() < deadline, f"no {name} ever blocked"
        time.sleep(0.01)


def recipe_ended(mark: str, timeout: float = 30.0) -> None:
    """Wait until the recipe's `just` has exited. Its last line having run is not enough: a
    signal between that line and `just`'s exit stops a recipe still running."""
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for pid in marked_pids(mark):  # live ones: a zombie has exited
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pid).name() == "just":
                    running.append(pid)
        if not running:
            return
        assert time.monotonic() < deadline, "the recipe never ended"
        time.sleep(0.01)


def build(tmp_path: Path, point: str) -> Bench:
    markers = tmp_path / "m"
    markers.mkdir()
    counter = tmp_path / "counter"
    text = ""
    for x in "abc":
        text += f"verify-{x}:\n    echo {x} >> {counter}\n"
        if x == "b" and point in ("during the recipe", "after the recipe, in the ledger write"):
            hold = fifo(markers / "recipe-fifo")
            # Only while the FIFO exists (it is removed before any re-run).
            text += f"    if [ -p {hold} ]; then cat {hold} > /dev/null; fi\n"
            text += f"    touch {markers}/done-{x}\n"
        text += "\n"
    repo = make_verify_repo(tmp_path / "r", justfile=text)
    tasks = {t: repo.add_task(n, notes=f"verify-cmd: just verify-{x}")
             for n, (t, x) in enumerate(zip(TASKS, "abc", strict=True), start=1)}
    repo.commit_all("tasks")
    env: dict[str, str] = {}
    if point == "before the recipe":
        hold = fifo(markers / "dump-fifo")
        real = shutil.which("just")
        assert real is not None
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "just").write_text(
            f"#!/bin/sh\ncase \" $* \" in *\" --dump \"*)\n"
            f"  if [ -p {hold} ]; then cat {hold} > /dev/null; fi;;\nesac\n"
            f"exec {real} \"$@\"\n")
        (bindir / "just").chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    if point in ("during the commit", "after the commit"):
        kind = "pre-commit" if point == "during the commit" else "post-commit"
        hold = fifo(markers / "hook-fifo")
        calls = markers / "hook-calls"
        hook = repo.root / ".git" / "hooks" / kind
        # TASK-2's verdict is the second commit of the run: only that one is held.
        hook.write_text(f"#!/bin/sh\necho x >> {calls}\n"
                        f"if [ \"$(wc -l < {calls})\" -eq 2 ] && [ -p {hold} ]; then\n"
                        f"  cat {hold} > /dev/null\nfi\n")
        hook.chmod(0o755)
    return Bench(repo, tasks, markers, counter, env)


@contextlib.contextmanager
def ledger_write_lock(repo: VerifyRepo) -> Iterator[None]:
    """Hold the SQLite ledger's write lock: another writer waits (busy) until it is let go."""
    db = sqlite3.connect(repo.state_dir / "ledger.db", timeout=30, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
        db.execute("ROLLBACK")
    finally:
        db.close()


def hold_and_signal(b: Bench, point: str, proc: subprocess.Popen[bytes], mark: str,
                    send: signal.Signals, group: bool) -> None:
    """Bring the run to the held point, signal it there, then release the point."""
    def deliver() -> None:
        if group:
            os.killpg(proc.pid, send)  # as a terminal's Ctrl-C: the whole foreground group
        else:
            proc.send_signal(send)

    if point == "before the recipe":
        blocked_on(mark, "cat")
        deliver()
        release(b.markers / "dump-fifo")
    elif point == "during the recipe":
        blocked_on(mark, "cat")
        deliver()
        if send == signal.SIGKILL:
            return  # the recipe outlives the run; the re-run must sweep it
    elif point == "after the recipe, in the ledger write":
        blocked_on(mark, "cat")
        with ledger_write_lock(b.repo):
            release(b.markers / "recipe-fifo")
            wait_for(b.markers / "done-b", proc)
            recipe_ended(mark)
            deliver()
    else:
        blocked_on(mark, "cat")
        deliver()
        if not group:  # a terminal's Ctrl-C reaches the hook as well, and it is gone
            release(b.markers / "hook-fifo")


def remove_holds(b: Bench) -> None:
    for name in ("dump-fifo", "recipe-fifo", "hook-fifo"):
        (b.markers / name).unlink(missing_ok=True)


def committed_in_first_run(point: str, group: bool) -> set[str]:
    """Tasks whose verdict a stopped run still commits: those before the held one, and the held
    one once its recipe had ended (its edit is finished, not thrown away) — unless a terminal's
    Ctrl-C also reached its pre-commit hook, which then refuses the commit."""
    if point == "before the recipe":
        return set()
    if point == "during the recipe" or (group and point == "during the commit"):
        return {"TASK-1"}
    return {"TASK-1", "TASK-2"}


def ledger_rows(repo: VerifyRepo) -> list[dict[str, str | None]]:
    """The ledger's attempts, read straight from its SQLite file (no process per look)."""
    db = sqlite3.connect(repo.state_dir / "ledger.db")
    try:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT task_id, verdict, edit_state, commit_sha, recipe "
                          "FROM attempts ORDER BY id").fetchall()
        return [dict(r) for r in rows]
    finally:
        db.close()


def check_consistent(b: Bench) -> None:
    repo = b.repo
    assert verdict_commits(repo) == {t: ["passed"] for t in TASKS}
    assert len(repo.subjects()) == 2 + len(TASKS)  # setup, tasks, one verdict each: no stray
    for tid, path in b.tasks.items():
        task = parse_task(path, path.read_bytes(), "tasks")
        assert task.status == "Done" and task.verify_labels == (), tid
        assert path.read_bytes().count(b"\n---\n") >= 1
    assert repo.status() == ""
    assert not (repo.root / ".git" / "index.lock").exists()
    assert [p for p in (repo.root / "backlog" / "tasks").glob(".*")] == []
    attempts = ledger_rows(repo)
    assert [a for a in attempts if a["edit_state"] == "pending"] == []
    committed = [a for a in attempts if a["edit_state"] == "committed"]
    assert sorted(a["task_id"] for a in committed) == list(TASKS)
    for a in committed:
        subject = repo.git("log", "-1", "--format=%s", a["commit_sha"]).strip()
        assert subject == f"loop-verify: {a['task_id']} passed (just {a['recipe']})"


# `run` handles the three stop signals with one handler (jobs/commands/run.py): SIGINT is sent
# at every step, SIGTERM and SIGHUP where the run holds a recipe or a commit, and SIGINT to the
# whole process group (Ctrl-C at a terminal) at those two steps too.
CASES = [(point, signal.SIGINT, False) for point in POINTS]
CASES += [(point, send, False) for send in (signal.SIGTERM, signal.SIGHUP)
          for point in ("during the recipe", "during the commit")]
CASES += [("during the recipe", signal.SIGINT, True), ("during the commit", signal.SIGINT, True)]


@pytest.mark.parametrize(("point", "send", "group"), CASES,
                         ids=[f"{s.name}{' to the group' if g else ''} {p}"
                              for p, s, g in CASES])
def test_a_stop_signal_at_any_step(tmp_path: Path, point: str, send: signal.Signals,
                                   group: bool) -> None:
    b = build(tmp_path, point)
    mark = uuid.uuid4().hex
    proc = start_verify(b.repo, "run", *TODAY, mark=mark, out=tmp_path / "first", env=b.env)
    try:
        hold_and_signal(b, point, proc, mark, send, group)
        assert proc.wait(timeout=60) == 3
        # Nothing of the run outlives it: the recipe's tree was killed, no hook is left waiting.
        assert marked_pids(mark) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_marked(mark)
    stderr = (tmp_path / "first.stderr").read_text()
    assert "Traceback" not in stderr, stderr
    done = committed_in_first_run(point, group)
    # The edit a refused commit rolled back: the task file restored, the verdict kept.
    restored = {"TASK-2"} if group and point == "during the commit" else set()
    assert set(verdict_commits(b.repo)) == done
    first = ledger_rows(b.repo)
    assert {a["task_id"] for a in first if a["edit_state"] == "restored"} == restored
    assert {a["task_id"] for a in first if a["verdict"] == "interrupted"} == (
        set(TASKS) - done - restored)
    assert {a["task_id"] for a in first if a["edit_state"] == "committed"} == done
    lines = (tmp_path / "first.stdout").read_text().splitlines()
    assert sorted(ln.split()[2] for ln in lines if ln.startswith("interrupted")) == sorted(
        set(TASKS) - done - restored), lines
    assert b.repo.status() == ""
    assert any(e["event"] == "run.interrupted" for e in b.repo.log_events())

    remove_holds(b)
    rerun = b.repo.run("run", *TODAY)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    check_consistent(b)
    runs = b.counter.read_text().split()
    # A recipe the stop cut short ran again; every other recipe ran once, or never before.
    assert runs.count("a") == 1 and runs.count("c") == 1
    # A verdict whose commit was refused is committed by the re-run without its recipe.
    assert runs.count("b") == (2 if point == "during the recipe" else 1)


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_of_the_run_at_any_step_then_rerun(tmp_path: Path, point: str) -> None:
    b = build(tmp_path, point)
    mark = uuid.uuid4().hex
    proc = start_verify(b.repo, "run", *TODAY, mark=mark, out=tmp_path / "killed", env=b.env)
    try:
        hold_and_signal(b, point, proc, mark, signal.SIGKILL, False)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        if point != "during the recipe":
            # What outlived the run and was released finishes by itself: the `just --dump`
            # of the wrapper, or a `git commit` that then completes its commit.
            deadline = time.monotonic() + 30
            while marked_pids(mark):
                assert time.monotonic() < deadline, marked_pids(mark)
                time.sleep(0.01)
    except BaseException:
        kill_marked(mark)
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if point == "during the recipe":
        assert marked_pids(mark)  # the held recipe lives on, in its own session
    remove_holds(b)
    try:
        rerun = b.repo.run("run", *TODAY)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        if point == "during the recipe":
            # The re-run, not the test, ended what the killed run's recipe left running.
            assert marked_pids(mark) == []
            assert any(e["event"] == "run.swept_abandoned" for e in b.repo.log_events())
    finally:
        kill_marked(mark)
    check_consistent(b)
    runs = b.counter.read_text().split()
    # The killed run threw away a verdict it had not yet put in the ledger: that recipe ran twice.
    twice = point in ("during the recipe", "after the recipe, in the ledger write")
    assert runs.count("a") == 1 and runs.count("c") == 1
    assert runs.count("b") == (2 if twice else 1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_run_leaves_no_recipe_behind(tmp_path: Path, sig: int) -> None:
    started = tmp_path / "started"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-slow:\n    touch {started}\n    sleep 60\n"))
    task = repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all()
    before, head = task.read_bytes(), repo.head()
    mark = f"review-term-{sig}-{os.getpid()}"
    proc = start_verify(repo, "run", "--today", "2026-11-30", mark=mark, out=tmp_path / "out")
    try:
        wait_for(started, proc)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 3
        # Nothing the recipe started outlives the run it belonged to.
        assert marked_pids(mark) == []
    finally:
        kill_marked(mark)
    out = (tmp_path / "out.stdout").read_text()
    assert out.startswith("interrupted app TASK-1  just verify-slow"), out
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""


def test_nohup_still_ignores_sighup(tmp_path: Path) -> None:
    started = tmp_path / "started"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-slow:\n    touch {started}\n    sleep 60\n"))
    repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all()
    mark = f"review-nohup-{os.getpid()}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOOP_VERIFY_TEST_MARK=mark)
    argv = ["nohup", sys.executable, "-m", "jobs.main", "run", "--config", str(repo.config_path),
            "--today", "2026-11-30"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for(started, proc)
        proc.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 3
        assert marked_pids(mark) == []
    finally:
        proc.kill()
        kill_marked(mark)
