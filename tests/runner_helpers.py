"""Shared pieces for the recipe-runner tests: real justfiles, real processes, /proc inspection."""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.process.recipe import RecipeResult, run_recipe

JUST = str(Path(sys.prefix) / "bin" / "just")
PYTHON = sys.executable


def write_justfile(root: Path, text: str, name: str = "justfile") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_text(text)
    return path


def recipe(name: str, *lines: str) -> str:
    """A justfile recipe whose body lines are indented for just."""
    return f"{name}:\n" + "".join(f"    {line}\n" for line in lines)


def marker() -> str:
    """A sleep duration nobody else uses, so leftovers can be found by their argv."""
    return f"300.{secrets.randbelow(900_000) + 100_000}"


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start ticks) of a process, or None when it no longer exists."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def processes_with(text: str) -> dict[int, int]:
    """Live processes whose argv contains `text`: pid -> start ticks."""
    needle = text.encode()
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and needle in _cmdline(int(name)):
            st = _stat(int(name))
            if st is not None and st[0] not in ("Z", "X"):
                found[int(name)] = st[2]
    return found


def zombie_children() -> list[int]:
    """Zombies waiting for this (test) process to reap them."""
    me = os.getpid()
    zombies = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[0] == "Z" and st[1] == me:
                zombies.append(int(name))
    return zombies


def still_present(seen: dict[int, int]) -> list[int]:
    """Of the processes seen during a run, those that still exist (alive or as zombies)."""
    left = []
    for pid, start in seen.items():
        st = _stat(pid)
        if st is not None and st[2] == start:  # same pid *and* same start: not a reused pid
            left.append(pid)
    return left


def live_left(seen: dict[int, int]) -> list[int]:
    """Of the processes seen during a run, those still running (zombies do not count)."""
    left = []
    for pid, start in seen.items():
        st = _stat(pid)
        if st is not None and st[2] == start and st[0] not in ("Z", "X"):
            left.append(pid)
    return left


@dataclass
class Observed:
    result: RecipeResult
    seen: dict[int, int] = field(default_factory=dict)
    wall: float = 0.0
    ended: float = 0.0  # time.monotonic() when the run returned


def run_observed(text: str, expect: int, /, on_started: Callable[[], None] | None = None,
                 **kwargs: Any) -> Observed:
    """Run a recipe in a thread while recording every process whose argv holds `text`.

    Recording stops growing once `expect` such processes were seen (so quick recipes are not
    raced against), but keeps going until the run ends. `on_started` is called once, as soon as
    they were all seen (a test stops the run there, not after a guessed delay).
    """
    box: dict[str, RecipeResult] = {}
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box["r"] = run_recipe(**kwargs)
        except BaseException as exc:  # surfaced in the test thread
            errors.append(exc)

    seen: dict[int, int] = {}
    started = time.monotonic()
    thread = threading.Thread(target=target)
    thread.start()
    while thread.is_alive():
        seen.update(processes_with(text))
        if on_started is not None and len(seen) >= expect:
            on_started()
            on_started = None
        time.sleep(0.01)
    thread.join()
    ended = time.monotonic()
    wall = ended - started
    if errors:
        raise errors[0]
    assert len(seen) >= expect, f"the fixture never started its {expect} process(es): {seen}"
    return Observed(box["r"], seen, wall, ended)


def assert_nothing_left(
    obs: Observed, text: str, not_ours: frozenset[int] = frozenset()
) -> None:
    """`not_ours`: zombies the test itself keeps unreaped on purpose."""
    assert still_present(obs.seen) == [], "processes of the recipe outlived the run"
    assert processes_with(text) == {}, "a process carrying the marker is still alive"
    assert set(zombie_children()) - not_ours == set(), "a zombie was left unreaped"


def after(seconds: float, action: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(seconds, action)
    timer.start()
    return timer
