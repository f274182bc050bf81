"""`loop-verify run` signals only what it started: a recipe killed from outside is an `error`
(never a failure that reopens the task), and the start-of-run sweep spares every process that is
not provably a dead run's of the same state directory — another state directory's, another PID
namespace's (a container's)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from verify_helpers import (
    MARK_VAR,
    ROOT,
    VerifyRepo,
    kill_marked,
    make_verify_repo,
    marked_pids,
    start_verify,
    unshare_available,
    verify_argv,
    wait_for,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

TODAY = ("--today", "2026-11-30")


def blocking_recipe(name: str, where: Path) -> str:
    """A recipe that records the pids of its line's shell and of `just`, then blocks on a FIFO
    nobody writes to: it ends only when something kills it. The pids are written (and renamed
    into place) before the block, in the same shell, so seeing them means it is blocked or
    about to be."""
    fifo = where / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return (f"{name}:\n    echo $$ $PPID > {where}/pids.tmp && mv {where}/pids.tmp {where}/pids"
            f" && cat {fifo} > /dev/null\n\n")


def blocked(mark: str) -> list[int]:
    """Wait until the blocking recipe's `cat` runs; every process carrying the mark then."""
    deadline = time.monotonic() + 30
    while True:
        pids = marked_pids(mark)
        names = []
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                names.append(psutil.Process(pid).name())
        if "cat" in names:
            return pids
        assert time.monotonic() < deadline, "the recipe never blocked"
        time.sleep(0.01)


def read_pids(where: Path) -> tuple[int, int]:
    shell, just = (where / "pids").read_text().split()
    return int(shell), int(just)


@pytest.mark.parametrize("victim", ["the recipe line's shell", "just itself"])
def test_a_recipe_killed_from_outside_is_an_error_and_the_task_is_untouched(
        tmp_path: Path, victim: str) -> None:
    markers = tmp_path / "m"
    markers.mkdir()
    repo = make_verify_repo(tmp_path / "r", justfile=blocking_recipe("verify-x", markers))
    task = repo.add_task(1, notes="verify-cmd: just verify-x")
    repo.commit_all()
    before, head = task.read_bytes(), repo.head()
    mark = f"sweep-ext-{os.getpid()}-{victim[:4]}"
    proc = start_verify(repo, "run", *TODAY, mark=mark, out=tmp_path / "out")
    try:
        wait_for(markers / "pids", proc)
        shell, just = read_pids(markers)
        # What the OOM killer or a user's `kill -9` would do.
        os.kill(shell if victim.startswith("the recipe") else just, signal.SIGKILL)
        assert proc.wait(timeout=30) == 3
        assert marked_pids(mark) == []  # and what the dead process left is gone too
    finally:
        kill_marked(mark)
    out = (tmp_path / "out.stdout").read_text()
    assert out.startswith("error    app TASK-1  just verify-x"), out
    assert "killed by SIGKILL, which loop-verify did not send" in out
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""
    [attempt] = repo.history()
    assert (attempt["verdict"], attempt["edit_state"]) == ("error", "none")
    assert any(e["event"] == "verify.error" for e in repo.log_events())


@pytest.mark.parametrize("justfile", [
    # A dependency the recipe runs first, killed as the OOM killer would (its shell SIGKILLs
    # itself: a signal loop-verify did not send). `just` names the dependency, not the recipe.
    "verify-x: build\n    echo ok\n\nbuild:\n    kill -KILL $$\n",
    # ... a dependency of a dependency, and one run after the recipe (`&&`).
    "verify-x: mid\n    echo ok\n\nmid: build\n\nbuild:\n    kill -KILL $$\n",
    "verify-x: && post\n    echo ok\n\npost:\n    kill -KILL $$\n",
])
def test_a_dependency_killed_from_outside_is_an_error_not_a_failure(
        tmp_path: Path, justfile: str) -> None:
    repo = make_verify_repo(tmp_path, justfile=justfile)
    task = repo.add_task(1, notes="verify-cmd: just verify-x")
    repo.commit_all()
    before, head = task.read_bytes(), repo.head()
    done = repo.run("run", *TODAY)
    assert done.stdout.startswith("error    app TASK-1  just verify-x"), done.stdout
    assert "killed by SIGKILL, which loop-verify did not send" in done.stdout
    assert task.read_bytes() == before and repo.head() == head


def test_a_nested_just_killed_is_the_recipe_s_exit_code(tmp_path: Path) -> None:
    # A recipe that runs another `just` (its exit message off) reports that one's death as an
    # exit code, as a shell does: the recipe's failure, whatever recipe the inner `just` named.
    repo = make_verify_repo(tmp_path, justfile=(
        "[no-exit-message]\nverify-x:\n    just --justfile inner.just inner\n"))
    (repo.root / "inner.just").write_text("inner:\n    kill -KILL $$\n")
    task = repo.add_task(1, notes="verify-cmd: just verify-x")
    repo.commit_all()
    done = repo.run("run", *TODAY)
    assert done.stdout.startswith("fail     app TASK-1  just verify-x"), done.stdout
    assert b"verify-failed" in task.read_bytes()


def due_repo(base: Path, state: Path, justfile: str) -> VerifyRepo:
    repo = make_verify_repo(base, justfile=justfile, extra_config={"state_dir": str(state)})
    repo.state_dir = state  # where its log is
    repo.add_task(1, notes="verify-cmd: just verify-x")
    repo.commit_all()
    return repo


def test_another_state_directorys_abandoned_recipe_is_left_alone(tmp_path: Path) -> None:
    markers = tmp_path / "m"
    markers.mkdir()
    a = due_repo(tmp_path / "a", tmp_path / "state-a", blocking_recipe("verify-x", markers))
    b = due_repo(tmp_path / "b", tmp_path / "state-b", "verify-x:\n    true\n")
    mark = f"sweep-state-{os.getpid()}"
    killed = start_verify(a, "run", *TODAY, mark=mark, out=tmp_path / "a-out")
    try:
        blocked(mark)
        os.killpg(killed.pid, signal.SIGKILL)  # the run dies; its recipe (own session) lives on
        killed.wait()
        left = marked_pids(mark)
        assert left
        assert b.run("run", *TODAY).returncode == 0
        assert marked_pids(mark) == left  # another state directory's: not ours to sweep
        (markers / "fifo").unlink()  # the re-run's own recipe must not block
        (markers / "pids").unlink()
        a.write_justfile("verify-x:\n    true\n")
        a.commit_all("unblock")
        rerun = a.run("run", *TODAY)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert marked_pids(mark) == []  # its own state directory's run swept it
        assert any(e["event"] == "run.swept_abandoned" for e in a.log_events())
        assert not any(e["event"] == "run.swept_abandoned" for e in b.log_events())
    finally:
        kill_marked(mark)


def test_a_run_with_nothing_due_sweeps_nothing(tmp_path: Path) -> None:
    markers = tmp_path / "m"
    markers.mkdir()
    repo = due_repo(tmp_path / "a", tmp_path / "state", blocking_recipe("verify-x", markers))
    mark = f"sweep-idle-{os.getpid()}"
    killed = start_verify(repo, "run", *TODAY, mark=mark, out=tmp_path / "out")
    try:
        blocked(mark)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        left = marked_pids(mark)
        # A day on which nothing is due: the run starts no recipe, so it sweeps nothing.
        idle = repo.run("run", "--today", "2026-10-01")
        assert idle.returncode == 0 and "nothing due" in idle.stdout
        assert marked_pids(mark) == left
    finally:
        kill_marked(mark)



@pytest.mark.skipif(not unshare_available(), reason="needs root and unshare --pid")
def test_a_containers_recipe_survives_our_runs(tmp_path: Path) -> None:
    """A loop-verify in its own PID namespace sharing our very state directory: neither while
    it runs nor after it was killed may a run outside touch its recipe."""
    state = tmp_path / "state"
    markers = tmp_path / "m"
    markers.mkdir()
    inside = due_repo(tmp_path / "in", state, blocking_recipe("verify-x", markers))
    ours = [due_repo(tmp_path / f"out{n}", state, "verify-x:\n    true\n") for n in (1, 2)]
    mark = f"sweep-ns-{os.getpid()}"
    argv = " ".join(verify_argv(inside, "run", *TODAY))
    # The namespace's pid 1 is `sh`, kept alive (reading) until the test ends; loop-verify is
    # an ordinary process inside it.
    container = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", f"{argv} & read line"],
        cwd=inside.root, stdin=subprocess.PIPE, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), MARK_VAR: mark})
    try:
        left = blocked(mark)
        recipe_pids = [p for p in left if psutil.Process(p).name() == "cat"]
        assert len(recipe_pids) == 1
        assert os.readlink(f"/proc/{recipe_pids[0]}/ns/pid") != os.readlink("/proc/self/ns/pid")
        assert ours[0].run("run", *TODAY).returncode == 0  # the container's run is alive
        assert set(recipe_pids) <= set(marked_pids(mark))
        [owner] = [p for p in psutil.Process(container.pid).children(recursive=True)
                   if p.name().startswith("python")]
        owner.kill()
        assert ours[1].run("run", *TODAY).returncode == 0  # now dead, but not ours
        assert set(recipe_pids) <= set(marked_pids(mark))
        assert not any(e["event"] == "run.swept_abandoned"
                       for r in ours for e in r.log_events())
    finally:
        os.killpg(container.pid, signal.SIGKILL)
        container.wait()
        kill_marked(mark)
