"""System programs some tests need: Debian packages that `.ci/run` installs and `make test` never
does (it changes nothing outside the checkout). Without one, a test skips and names the command
that installs it; in CI (`LOOP_JOBS_CI=1`, exported by `.ci/run`) it fails instead, since there
every test must run."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

CI = os.environ.get("LOOP_JOBS_CI", "") not in ("", "0")


def install_command(package: str) -> str:
    """The command that installs Debian's `package` as .ci/run does."""
    return f"sudo apt-get install --no-install-recommends {package}"


def missing(what: str, install: str) -> NoReturn:
    """Skip (or, in CI, fail) the test: `what` is not installed, and `install` installs it."""
    reason = f"{what} is not installed; `{install}` installs it"
    if CI:
        pytest.fail(f"LOOP_JOBS_CI=1 and {reason} (.ci/run should have)", pytrace=False)
    pytest.skip(reason)


def program(name: str, package: str) -> str:
    """The path of the program `name` on PATH, or `missing`."""
    found = shutil.which(name)
    if found is None:
        missing(name, install_command(package))
    return found
