"""Nothing a recipe starts outlives the run: real process trees under the real `just`.

Each fixture marks its processes with a sleep duration nobody else uses; the test records every
such process while the recipe runs and afterwards asserts that none of them exists any more —
neither alive nor as a zombie — and that no zombie is left waiting for this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from runner_helpers import (
    JUST,
    PYTHON,
    Observed,
    assert_nothing_left,
    live_left,
    marker,
    processes_with,
    recipe,
    run_observed,
    write_justfile,
    zombie_children,
)

import jobs.process.tree
from jobs.core.fs import exclusive_lock
from jobs.process.recipe import RecipeResult, run_recipe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inspects /proc")

TIMEOUT = 1.0
GRACE = 0.5
# The fixtures' sleeps last days, so a run that waited for them is caught by any bound; the bound
# is generous because a loaded machine can take seconds to start and reap the processes.
LIMIT = TIMEOUT + GRACE + 10.0
# A recipe line that waits until the test has seen the recipe's marked processes.
SEEN = "<wait until seen>"


def run_tree(
    tmp_path: Path, body: list[str], m: str, expect: int, timeout: float = TIMEOUT
) -> Observed:
    """A SEEN line in `body` waits until the test has seen all `expect` marked processes, so a
    quick recipe never races the observer."""
    seen = tmp_path / "seen"
    lines = [f"@while [ ! -e {seen} ]; do sleep 0.02; done" if line == SEEN else line
             for line in body]
    jf = write_justfile(tmp_path, recipe("verify-tree", *lines))
    return run_observed(
        m, expect, on_started=seen.touch, root=tmp_path, justfile=jf, recipe="verify-tree",
        timeout=timeout, kill_grace=GRACE, output_path=tmp_path / "out.log", just=JUST,
    )


def assert_timed_out_cleanly(obs: Observed, m: str) -> None:
    assert obs.result.outcome == "timed_out"
    assert obs.wall < LIMIT, f"run took {obs.wall:.2f}s"
    assert_nothing_left(obs, m)


# --- the six escape fixtures, under a timeout ---------------------------------------------------


def test_plain_child(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"sleep {m}"], m, 1)
    assert_timed_out_cleanly(obs, m)


def test_background_grandchild(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"sleep {m}1 & sleep {m}2; wait"], m, 2)
    assert_timed_out_cleanly(obs, m)


def test_double_forked_daemon_while_the_recipe_hangs(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"sh -c '(sleep {m}1 &) &'", f"sleep {m}2"], m, 2)
    assert_timed_out_cleanly(obs, m)


def test_double_forked_daemon_that_also_left_the_session(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"sh -c '(setsid sleep {m}1 &) &'", f"sleep {m}2"], m, 2)
    assert_timed_out_cleanly(obs, m)


def test_child_ignoring_sigterm_in_shell(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"trap '' TERM; sleep {m}"], m, 1)
    assert_timed_out_cleanly(obs, m)
    assert obs.wall >= TIMEOUT + GRACE - 0.05  # it really needed the SIGKILL after the grace


def test_child_ignoring_sigterm_in_python(tmp_path: Path) -> None:
    m = marker()
    code = f"import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep({m})"
    obs = run_tree(tmp_path, [f"{PYTHON} -c '{code}'"], m, 1)
    assert_timed_out_cleanly(obs, m)


def test_grandchild_holding_stdout_while_the_recipe_exits_at_once(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"@sh -c 'sleep {m}; echo never' &", SEEN], m, 1, timeout=30)
    assert (obs.result.outcome, obs.result.exit_code) == ("exited", 0)
    # The holder sleeps for days: a runner that waited for it would never get here.
    assert obs.wall < 10, "the runner waited for the holder of stdout"
    assert obs.result.survivors_killed >= 1
    assert "never" not in obs.result.output_path.read_text()
    assert_nothing_left(obs, m)


def test_setsid_grandchild(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"setsid sleep {m}1 &", f"sleep {m}2"], m, 2)
    assert_timed_out_cleanly(obs, m)


def test_python_setsid_grandchild(tmp_path: Path) -> None:
    m = marker()
    code = f"import os,time; os.setsid(); time.sleep({m})"
    obs = run_tree(tmp_path, [f"{PYTHON} -c '{code}' & sleep {m}2; wait"], m, 2)
    assert_timed_out_cleanly(obs, m)


def test_setsid_grandchild_without_the_token_under_a_live_parent(tmp_path: Path) -> None:
    # No token, own session, and its parent is alive: found only after its parent is killed
    # and it is re-parented to the runner.
    m = marker()
    obs = run_tree(tmp_path, [f"env -i setsid sleep {m}1 & sleep {m}2; wait"], m, 2)
    assert_timed_out_cleanly(obs, m)


# --- a passing recipe that leaves something behind ---------------------------------------------


def test_passing_recipe_that_leaves_a_daemon(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(
        tmp_path, [f"sh -c '(setsid sleep {m} &) &'", SEEN, "echo done"], m, 1, timeout=30
    )
    assert (obs.result.outcome, obs.result.exit_code) == ("exited", 0)
    assert obs.result.survivors_killed == 1
    assert obs.result.tail.endswith("done")
    assert_nothing_left(obs, m)


def test_passing_recipe_whose_daemon_dropped_the_token(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(
        tmp_path, [f"sh -c '(env -i setsid sleep {m} &) &'", SEEN], m, 1, timeout=30
    )
    assert (obs.result.outcome, obs.result.exit_code) == ("exited", 0)
    assert_nothing_left(obs, m)


def test_stop_kills_the_whole_tree(tmp_path: Path) -> None:
    m = marker()
    stop = threading.Event()
    stopped_at: list[float] = []

    def stop_now() -> None:  # once both processes run: no guessed delay to race the start
        stopped_at.append(time.monotonic())
        stop.set()

    jf = write_justfile(
        tmp_path, recipe("verify-tree", f"setsid sleep {m}1 & trap '' TERM; sleep {m}2")
    )
    obs = run_observed(
        m, 2, on_started=stop_now, root=tmp_path, justfile=jf, recipe="verify-tree", timeout=60,
        kill_grace=GRACE, output_path=tmp_path / "out.log", just=JUST, stop=stop,
    )
    assert obs.result.outcome == "interrupted"
    # Ended within the grace of the stop, not at the 60 s timeout (slack for a loaded machine).
    assert obs.ended - stopped_at[0] < GRACE + 10
    assert_nothing_left(obs, m)


# --- what the runner must leave alone -----------------------------------------------------------


def test_other_children_of_the_caller_are_neither_killed_nor_reaped(tmp_path: Path) -> None:
    m = marker()
    other = marker()
    bystander = subprocess.Popen(["sleep", other], start_new_session=True)
    finished = subprocess.Popen([PYTHON, "-c", "raise SystemExit(7)"])
    while not Path(f"/proc/{finished.pid}/stat").read_bytes().split(b") ")[1].startswith(b"Z"):
        time.sleep(0.01)  # wait until it is a zombie waiting for us
    try:
        obs = run_tree(tmp_path, [f"sh -c '(setsid sleep {m} &) &'", SEEN], m, 1, timeout=30)
        assert obs.result.exit_code == 0
        assert_nothing_left(obs, m, not_ours=frozenset({finished.pid}))
        assert bystander.poll() is None
        assert list(processes_with(other)) == [bystander.pid]
        assert finished.wait(timeout=5) == 7  # its exit status was not stolen by the sweep
    finally:
        bystander.kill()
        bystander.wait()
        finished.wait()


def test_lock_descriptor_never_reaches_the_recipe(tmp_path: Path) -> None:
    m = marker()
    lock = tmp_path / "git" / "loop-verify.lock"
    fds = tmp_path / "fds.txt"
    body = [f"sleep {m} & sleep 0.2; ls -l /proc/$!/fd > {fds}", "sleep 0.2"]
    with exclusive_lock(lock):
        obs = run_tree(tmp_path, body, m, 1, timeout=30)
    assert obs.result.exit_code == 0
    listing = fds.read_text()
    assert "/dev/null" in listing  # the listing is real: stdin of the grandchild
    assert str(lock) not in listing
    taker = subprocess.run(
        [PYTHON, "-c",
         "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
         "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(lock)],
        check=False, timeout=10,
    )
    assert taker.returncode == 0
    assert_nothing_left(obs, m)


# --- without the Linux subreaper: the way macOS finds a recipe's processes --------------------


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (["sleep {m}"], 1),
        (["sleep {m}1 & sleep {m}2; wait"], 2),
        (["sh -c '(setsid sleep {m}1 &) &'", "sleep {m}2"], 2),
        (["{python} -c 'import os,time; os.setsid(); time.sleep({m})' & sleep {m}2; wait"], 2),
        (["env -i setsid sleep {m}1 & sleep {m}2; wait"], 2),
    ],
    ids=["plain", "background", "double-fork+setsid", "python setsid", "no token, live parent"],
)
def test_without_the_subreaper_every_escapee_is_still_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: list[str], expect: int
) -> None:
    monkeypatch.setattr(jobs.process.tree, "USE_SUBREAPER", False)
    m = marker()
    obs = run_tree(tmp_path, [line.format(m=m, python=PYTHON) for line in body], m, expect)
    assert obs.result.outcome == "timed_out"
    assert obs.wall < LIMIT, f"run took {obs.wall:.2f}s"
    # Orphans now go to init, which reaps them (launchd does; a container's pid 1 may not):
    # what counts is that none of them is still running.
    assert live_left(obs.seen) == [] and processes_with(m) == {}


def test_without_the_subreaper_a_passing_recipes_daemon_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs.process.tree, "USE_SUBREAPER", False)
    m = marker()
    obs = run_tree(tmp_path, [f"sh -c '(setsid sleep {m} &) &'", SEEN], m, 1, timeout=30)
    assert (obs.result.outcome, obs.result.exit_code) == ("exited", 0)
    assert obs.result.survivors_killed == 1
    # Re-parented to init (not to us), it is gone but not our zombie to reap.
    assert live_left(obs.seen) == [] and processes_with(m) == {}


def test_orphans_of_a_recipe_are_handed_to_the_runner(tmp_path: Path) -> None:
    # The effect of PR_SET_CHILD_SUBREAPER: a double-forked daemon's parent becomes this process,
    # not init, so it can be found and reaped.
    m = marker()
    pid_file, ppid_file = tmp_path / "pid", tmp_path / "ppid"
    body = [
        f"sh -c '(sleep {m} & echo $! > {pid_file}) &'",
        SEEN,
        "sleep 0.3",  # the intermediate shell exits, and its orphan is handed on
        f"ps -o ppid= -p $(cat {pid_file}) > {ppid_file}",
    ]
    obs = run_tree(tmp_path, body, m, 1, timeout=30)
    assert obs.result.exit_code == 0, obs.result.tail
    assert int(ppid_file.read_text()) == os.getpid()
    assert_nothing_left(obs, m)


def test_an_exception_in_the_caller_still_kills_the_tree(tmp_path: Path) -> None:
    m = marker()
    pid_file = tmp_path / "pid"
    jf = write_justfile(
        tmp_path, recipe("verify-tree", f"setsid sleep {m}1 & echo $! > {pid_file}; sleep {m}2")
    )

    def interrupt(elapsed: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_recipe(tmp_path, jf, "verify-tree", timeout=30, kill_grace=GRACE, just=JUST,
                   output_path=tmp_path / "out.log", on_tick=interrupt)
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists()
    assert processes_with(m) == {}
    assert zombie_children() == []


def test_concurrent_runs_do_not_take_each_other_for_orphans(tmp_path: Path) -> None:
    m_a, m_b = marker(), marker()
    jf = write_justfile(
        tmp_path,
        recipe("verify-a", f"sh -c '(setsid sleep {m_a} &) &'", "sleep 0.3")
        + recipe("verify-b", f"sh -c '(setsid sleep {m_b} &) &'", "sleep 1.5", "@echo b-done"),
    )
    results: dict[str, RecipeResult] = {}

    def go(name: str) -> None:
        results[name] = run_recipe(tmp_path, jf, name, timeout=30, kill_grace=GRACE, just=JUST,
                                   output_path=tmp_path / f"{name}.log")

    b = threading.Thread(target=go, args=("verify-b",))
    b.start()
    time.sleep(0.2)
    go("verify-a")
    assert len(processes_with(m_b)) == 1  # a's sweep spared b's daemon
    b.join()
    assert (results["verify-a"].exit_code, results["verify-a"].survivors_killed) == (0, 1)
    assert results["verify-b"].exit_code == 0
    assert results["verify-b"].tail.endswith("b-done")
    assert results["verify-b"].survivors_killed == 1
    assert processes_with(m_a) == {} and processes_with(m_b) == {}
    assert zombie_children() == []


def test_the_runner_adopts_orphans_only_while_a_recipe_runs(tmp_path: Path) -> None:
    # Between runs, orphans of unrelated work (a detached `git gc --auto`) must go to init as
    # usual; adopting them would pile up zombies in a long-running daemon.
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    assert run_recipe(tmp_path, jf, "verify-a", timeout=10, kill_grace=GRACE, just=JUST,
                      output_path=tmp_path / "out.log").exit_code == 0
    m = marker()
    pid_file = tmp_path / "pid"
    subprocess.run(["sh", "-c", f"(sleep {m} & echo $! > {pid_file}) &"], check=True, timeout=10)
    deadline = time.monotonic() + 5
    while not (pid_file.exists() and pid_file.read_text().endswith("\n")):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pid = int(pid_file.read_text())
    try:
        while time.monotonic() < deadline:  # wait for the subshell between us and it to end
            ppid = int(Path(f"/proc/{pid}/stat").read_bytes().split(b") ")[1].split()[1])
            comm = Path(f"/proc/{ppid}/comm")  # ppid 0: a parent outside our pid namespace
            if not comm.exists() or comm.read_text().strip() != "sh":
                break
            time.sleep(0.01)
        assert ppid != os.getpid()
    finally:
        os.kill(pid, 9)


def test_a_recipe_that_keeps_spawning_escapees(tmp_path: Path) -> None:
    m = marker()
    obs = run_tree(tmp_path, [f"while true; do setsid sleep {m} & sleep 0.02; done"], m, 3)
    assert_timed_out_cleanly(obs, m)
    assert len(obs.seen) > 10
