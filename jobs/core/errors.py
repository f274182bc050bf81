"""Expected failures: the exception types every command raises, and the exit codes they map to."""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing and pathlib, which would cost `--help`
# milliseconds at start-up: they are needed only by the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNCHECKED = 3


class LoopError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class UsageError(LoopError):
    """Bad command line, missing run directory and the like (exit 2)."""


class ConfigError(UsageError):
    """A configuration value that cannot be used; names the file, the key and the value."""

    def __init__(self, path: Path | str, key: str, value: object, problem: str) -> None:
        self.path = str(path)
        self.key = key
        self.value = value
        named = f"{key}: " if key else ""  # no key: the file itself (its YAML) is the problem
        super().__init__(f"{path}: {named}{problem} (got {value!r})")


class InputError(LoopError):
    """A malformed input file, reported with its path and, where known, its line."""

    def __init__(self, path: Path | str, message: str, line: int | None = None,
                 exit_code: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", exit_code)


# The log file a crash is written to when the verb had not opened the log yet (`list` opens it
# only then); set by the verb's setup once the configuration names it.
crash_log: Path | None = None
# The running command's name (`loop-verify`, `loop-pi-audit`), for a message printed outside
# `cli_entry` (the log file failing mid-run); set by `cli_entry`.
program = "loop-jobs"


