"""What every loop-verify verb does first: read the configuration and set up logging."""

from __future__ import annotations

import os
import re
from datetime import date

from jobs.config.load import Config, find_config_path, load_config, with_repos
from jobs.core.errors import EXIT_UNCHECKED, LoopError, UsageError

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def parse_date(text: str, option: str) -> date:
    # date.fromisoformat also takes 20261130 and 2026-W48-1; the SPEC's form is YYYY-MM-DD only.
    try:
        if not _DATE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option}: expected a date YYYY-MM-DD (got {text!r})") from None


def no_repos_hint(config: Config, *, repo_option: bool = True) -> str:
    """How to name repositories, with the configuration file that was read (or looked for);
    `--repo PATH` only for a command that takes it."""
    other = " or pass --repo PATH" if repo_option else ""
    if config.source is not None:
        return f"list them under `repos:` in {config.source}{other}"
    looked, _ = find_config_path(None, os.environ)
    return f"no configuration file at {looked}; create it with a `repos:` list{other}"


def setup(config_path: str | None, repos: list[str] | None = None) -> Config:
    """The configuration (with `--repo` paths in place of its list) and the log opened."""
    from jobs.process import exe

    exe.isolate_environment(os.environ)
    config = load_config(config_path)
    if repos:
        config = with_repos(config, repos)
    start_logging(config, console=False)
    return config


def check_log_file(config: Config) -> None:
    """Fail as `start_logging` would when the log cannot be written, without loading the logging
    stack: for verbs that log only an unexpected fault."""
    try:
        config.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(config.log_file, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise LoopError(f"cannot write the log file {config.log_file}: {exc.strerror or exc}",
                        EXIT_UNCHECKED) from None


def start_logging(config: Config, *, console: bool | None = None) -> None:
    """Open the JSON log; one that cannot be written stops the verb with one line, no traceback."""
    from jobs.core.logs import configure_logging

    try:
        configure_logging(config.log_file, console=console, machine=config.machine)
    except OSError as exc:
        # The same cause (an unwritable state_dir) makes the ledger exit 3: nothing was checked.
        raise LoopError(f"cannot write the log file {config.log_file}: {exc.strerror or exc}",
                        EXIT_UNCHECKED) from None
