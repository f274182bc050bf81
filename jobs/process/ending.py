"""How a recipe that ended on its own really ended, from its exit status and `just`'s last
words: killed by a signal nobody in the run sent, or never run at all (the machine's faults, never
the recipe's verdict)."""

from __future__ import annotations

import re
import signal
from collections.abc import Collection

# A program's own crash is its failure; any other deadly signal came from outside the recipe.
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE,
                            signal.SIGABRT, signal.SIGSYS, signal.SIGTRAP})
# How `just` reports a recipe line (or shebang script) that a signal ended. Its words start
# the output's last line, or end it: output cut off mid-line (a test runner's dots) puts them on
# that same line.
_JUST_SIGNALLED = re.compile(r"error: recipe `(?P<recipe>[^`]+)` was terminated "
                             r"(?:on line \d+ )?by signal (?P<signal>\d+)\s*$", re.IGNORECASE)

# How `just` says it could not run a recipe at all (its shell or interpreter missing, a
# temporary folder it cannot create): the machine's fault, never the recipe's verdict. Just's
# own last error line; escape sequences in case a colour setting slipped through.
_JUST_COULD_NOT_RUN = re.compile(
    r"error: (?:recipe `(?P<recipe>[^`]*)` (?:could not be run because "
    r"|with (?:shebang|command) `.*` execution error: )"
    r"|backtick could not be run because )")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def killed_from_outside(exit_code: int | None, tail: str,
                        recipes: Collection[str]) -> str | None:
    """Why a recipe that ended on its own really was killed by a signal we never sent, or None.

    `just` itself killed shows as a negative exit code; a line of the recipe, or of a dependency
    `just` ran for it, killed makes `just` say so as its last word, naming that recipe: one of
    `recipes` (by bare name). A shell reporting its child's death as an exit code (137) is an
    exit code, and so is a nested `just` naming a recipe of its own.
    """
    signum: int | None = None
    if exit_code is not None and exit_code < 0:
        signum = -exit_code
    else:
        last = tail.rstrip("\n").rsplit("\n", 1)[-1]
        m = _JUST_SIGNALLED.search(last)
        if m is not None and m.group("recipe") in recipes:
            signum = int(m.group("signal"))
    if signum is None or signum in CRASH_SIGNALS:
        return None
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return (f"the recipe was killed by {name}, which loop-verify did not send "
            "(the OOM killer or another process); the task is left as it was")


def could_not_run(exit_code: int | None, tail: str, recipes: Collection[str]) -> str | None:
    """What `just` said when it could not run the recipe at all, or None.

    Its error is its last word: the last `error: ` line of the output (a backtick's error is
    followed only by the lines that point into the justfile). A recipe that prints the same
    words and fails is followed by `just`'s own "failed with exit code" line, so it is not
    taken for one; under `[no-exit-message]` that line is missing, so a line naming a recipe
    must name one of `recipes` (by bare name), those `just` runs for it."""
    if exit_code != 1:
        return None
    for line in reversed(_ANSI.sub("", tail).splitlines()):
        # Output cut off mid-line puts just's words after it, on the same line.
        m = _JUST_COULD_NOT_RUN.search(line)
        if m is not None:
            if m.group("recipe") is not None and m.group("recipe") not in recipes:
                return None
            return "just could not run the recipe: " + line[m.start() + len("error: "):]
        if line.startswith("error: "):
            return None
    return None
