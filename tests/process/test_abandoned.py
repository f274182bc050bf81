"""A run killed with SIGKILL cannot sweep its recipe; a later run of the same state directory
kills what it left — and nothing else: not a live run's, not another state directory's, not
another user's, not another PID namespace's."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from project import ROOT
from runner_helpers import JUST, marker, processes_with, recipe, write_justfile
from verify_helpers import unshare_available

from jobs.process.scope import SCOPE_DIR, Scope
from jobs.process.tree import TOKEN_VAR

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


# A run that claims its state directory and runs one recipe that never ends by itself.
OWNER = """
import sys
from pathlib import Path
from jobs.process.scope import Scope
from jobs.process.recipe import run_recipe
root, state = Path(sys.argv[1]), Path(sys.argv[2])
with Scope(state) as scope:
    run_recipe(root, root / "justfile", "verify-hang", timeout=300, kill_grace=1,
               output_path=root / "out.log", just=sys.argv[3], scope=scope)
"""


def wait_until(predicate: Callable[[], bool], seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "the condition never came true"
        time.sleep(0.02)


def start_owner(tmp_path: Path, state: Path, body: list[str], *,
                prefix: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    write_justfile(tmp_path, recipe("verify-hang", *body))
    return subprocess.Popen([*prefix, sys.executable, "-c", OWNER, str(tmp_path), str(state), JUST],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
        stdin=subprocess.PIPE)


@pytest.fixture
def cleanup() -> Iterator[list[str]]:
    """Markers whose processes the test started; whatever is left of them is killed by pid."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        for pid in processes_with(tag):
            os.kill(pid, signal.SIGKILL)


def sleepers(tag: str) -> list[int]:
    """The `sleep` processes carrying the tag (not the shells that started them)."""
    found = []
    for pid in processes_with(tag):
        with contextlib.suppress(psutil.Error):
            # A process caught between fork and exec, or already a zombie, has no command line
            if psutil.Process(pid).cmdline()[:1] == ["sleep"]:
                found.append(pid)
    return sorted(found)


def transient(tag: str) -> list[int]:
    """Processes of the tag's fixture that end by themselves (the daemon's starting shells)."""
    found = []
    for pid in processes_with(tag):
        with contextlib.suppress(psutil.Error):
            if "(setsid" in " ".join(psutil.Process(pid).cmdline()):
                found.append(pid)
    return found


def kill_owner(owner: subprocess.Popen[bytes]) -> None:
    owner.send_signal(signal.SIGKILL)
    owner.wait()


def test_recipes_of_a_killed_run_are_swept_by_the_next(tmp_path: Path,
                                                       cleanup: list[str]) -> None:
    tag = marker()
    cleanup.append(tag)
    state = tmp_path / "state"
    # The recipe line's shell and its sleep, and a double-forked `setsid` sleep that left.
    owner = start_owner(tmp_path, state, [f"sh -c '(setsid sleep {tag} &) &'", f"sleep {tag}"])
    try:
        # Both sleeps run, and the short-lived shells that started the daemon are gone.
        wait_until(lambda: len(sleepers(tag)) == 2 and not transient(tag))
        running = processes_with(tag)
        with Scope(state) as other:
            assert other.sweep_abandoned() == 0  # a live run's recipe is not abandoned
        assert processes_with(tag) == running
        kill_owner(owner)
        assert processes_with(tag) == running  # nobody cleaned up after the killed owner
        [claim] = (state / SCOPE_DIR).glob("*.lock")
        with Scope(state) as later:
            assert later.sweep_abandoned() > len(running)  # and `just` itself
            assert later.sweep_once() == 0  # already done: the rest of a run sweeps no more
            wait_until(lambda: not processes_with(tag))
        assert not claim.exists()
        assert list((state / SCOPE_DIR).iterdir()) == []  # and our own claim is gone too
    finally:
        if owner.poll() is None:
            kill_owner(owner)


def test_another_state_directory_is_never_swept(tmp_path: Path, cleanup: list[str]) -> None:
    tag = marker()
    cleanup.append(tag)
    owner = start_owner(tmp_path, tmp_path / "state-a", [f"setsid sleep {tag}"])
    wait_until(lambda: len(sleepers(tag)) == 1)
    kill_owner(owner)
    running = processes_with(tag)
    with Scope(tmp_path / "state-b") as other:
        assert other.sweep_abandoned() == 0
    assert processes_with(tag) == running
    with Scope(tmp_path / "state-a") as own:
        assert own.sweep_abandoned() >= 2  # `just` and the sleep
    wait_until(lambda: not processes_with(tag))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None,
                    reason="needs root and runuser to start a process as another user")
def test_another_users_process_is_never_swept(tmp_path: Path, cleanup: list[str]) -> None:
    tag_own, tag_other = marker(), marker()
    cleanup += [tag_own, tag_other]
    state = tmp_path / "state"
    owner = start_owner(tmp_path, state, [f"setsid sleep {tag_own} &",
                                          f"runuser -u nobody -- sleep {tag_other}"])
    wait_until(lambda: len(sleepers(tag_own)) == 1 and len(sleepers(tag_other)) == 1)
    kill_owner(owner)
    [theirs] = sleepers(tag_other)
    proc = psutil.Process(theirs)
    assert proc.uids().real != os.getuid()
    # It carries the dead run's token, so only the user rule keeps it alive.
    assert proc.environ()[TOKEN_VAR].split(".")[0] in {p.stem for p in
                                                       (state / SCOPE_DIR).glob("*.lock")}
    with Scope(state) as later:
        assert later.sweep_abandoned() >= 1  # our own `setsid sleep` (and `runuser` itself)
    wait_until(lambda: not processes_with(tag_own))
    assert sleepers(tag_other) == [theirs]
    assert proc.is_running()



@pytest.mark.skipif(not unshare_available(), reason="needs root and unshare --pid")
def test_another_pid_namespaces_recipe_is_never_swept(tmp_path: Path,
                                                      cleanup: list[str]) -> None:
    """A loop-verify in a container sharing the very same state directory: its run looks dead
    from outside (its pid means nothing here) and, once really killed, is still not ours."""
    tag = marker()
    cleanup.append(tag)
    state = tmp_path / "state"
    # `sh` is the namespace's pid 1 and stays until we close its stdin (the namespace dies
    # with it); the owner is an ordinary process inside it.
    script = f"{sys.executable} -c '{OWNER}' {tmp_path} {state} {JUST} & read line"
    write_justfile(tmp_path, recipe("verify-hang", f"setsid sleep {tag}"))
    container = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
        stdin=subprocess.PIPE)
    try:
        wait_until(lambda: len(sleepers(tag)) == 1)
        running = processes_with(tag)
        [sleeper] = sleepers(tag)
        assert os.readlink(f"/proc/{sleeper}/ns/pid") != os.readlink("/proc/self/ns/pid")
        with Scope(state) as ours:
            assert ours.sweep_abandoned() == 0  # its owner is alive in there
        assert processes_with(tag) == running
        owners = [p for p in psutil.Process(container.pid).children(recursive=True)
                  if p.name().startswith("python")]
        assert len(owners) == 1
        owners[0].kill()
        # Dead, and left a zombie: the namespace's pid 1 is busy reading, not reaping.
        wait_until(lambda: owners[0].status() == psutil.STATUS_ZOMBIE)
        with Scope(state) as ours:
            assert ours.sweep_abandoned() == 0  # dead, but another namespace's
        assert processes_with(tag) == running
    finally:
        os.killpg(container.pid, signal.SIGKILL)
        container.wait()


def test_a_claim_left_half_made_is_removed_only_when_its_maker_is_dead(tmp_path: Path) -> None:
    folder = tmp_path / "state" / SCOPE_DIR
    folder.mkdir(parents=True)
    dead = folder / ".dead.tmp"
    dead.write_text("")
    live = folder / ".live.tmp"
    fd = os.open(live, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a run making its claim right now
        with Scope(tmp_path / "state") as scope:
            assert scope.sweep_abandoned() == 0
        assert not dead.exists() and live.exists()
    finally:
        os.close(fd)
