"""Shared test setup: a git identity, and the running environment's commands and this checkout's
`backlog` first on PATH."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import inprocess
import pytest
from budget import THOROUGH
from hypothesis import settings
from project import ROOT

# `make test` draws the same property examples on every machine and every run, so CI never fails
# on a case no run before it drew; `make test-thorough` draws new ones each time, which is how new
# cases are found (a case found so becomes a plain test).
settings.register_profile("fixed", derandomize=True)
settings.register_profile("fresh", derandomize=False)
settings.load_profile("fresh" if THOROUGH else "fixed")

SHARED = ROOT.parent / "shared"
_NODE_MODULES = ROOT / ".npm-prefix" / "node_modules"
# The Backlog.md CLI's `backlog` command is a Node.js script that only finds and starts the
# compiled binary of this platform's package, with the same arguments and standard streams:
# calling that binary directly spares each call a Node.js start (a hundred times in the
# suite). Without exactly one such binary, the command itself is used.
_BINARIES = [p for p in _NODE_MODULES.glob("backlog.md-*/backlog") if os.access(p, os.X_OK)]
# loop-verify, loop-pi-audit and just are those of the environment running the suite (beside its
# interpreter, wherever it is), never a path written here: tests/test_install_env.py fails when
# that environment was installed from another checkout.
_TOOL_DIRS = [Path(sys.executable).parent,
              *(b.parent for b in _BINARIES if len(_BINARIES) == 1), _NODE_MODULES / ".bin"]
os.environ["PATH"] = os.pathsep.join(
    [str(d) for d in _TOOL_DIRS if d.is_dir()] + [os.environ.get("PATH", "")])

# A shell starts a background job (`make test &`, some CI runners) with SIGINT ignored, and an
# ignored signal stays ignored in every process started from here: the tests that stop a real
# `loop-verify run` with SIGINT need it to arrive as it does from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _hangup_ignored_here_only(_signum: int, _frame: object) -> None:
    """Under `nohup` the suite starts with SIGHUP ignored, which every process it starts would
    inherit; the tests that stop a real run with SIGHUP need it to arrive as it does without
    nohup. A handler, unlike SIG_IGN, is not inherited across exec: the test processes stay
    immune to a hangup, their children get the default."""


if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, _hangup_ignored_here_only)


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # Commits in tests must work on a machine with no global git configuration.
    for var, value in {
        "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    }.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("LOOP_JOBS_CONFIG", raising=False)
    monkeypatch.delenv("LOOP_PI_RUN_DIR", raising=False)


@pytest.fixture(autouse=True)
def process_logging_state() -> Iterator[None]:
    # Tests that call a CLI's main() or configure_logging() here change process-wide logging (a
    # library's logger set not to propagate, handlers on the root); under pytest-xdist the next
    # test on the same worker is any test, so each starts from the state the one before found.
    saved = inprocess.logger_state()
    yield
    inprocess.restore_loggers(saved)
    inprocess.reset_process_globals()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The slowest tests go first: pytest-xdist hands tests out in this order, and a long test
    # handed out last would keep one worker busy after the others are done.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
