"""What every loop-verify verb does first: read the configuration and set up logging."""

from __future__ import annotations

import argparse
import os
import re
from datetime import date

from jobs import git
from jobs.config import Config, load_config, with_repos
from jobs.errors import EXIT_UNCHECKED, LoopError, UsageError
from jobs.logs import configure_logging

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def parse_date(text: str, option: str) -> date:
    # date.fromisoformat also takes 20261130 and 2026-W48-1; the SPEC's form is YYYY-MM-DD only.
    try:
        if not _DATE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option}: expected a date YYYY-MM-DD (got {text!r})") from None


def setup(args: argparse.Namespace, *, repos: bool = True) -> Config:
    git.isolate_environment(os.environ)
    config = load_config(getattr(args, "config", None))
    if repos and getattr(args, "repo", None):
        config = with_repos(config, args.repo)
    start_logging(config, console=False)
    return config


def start_logging(config: Config, *, console: bool | None = None) -> None:
    """Open the JSON log; one that cannot be written stops the verb with one line, no traceback."""
    try:
        configure_logging(config.log_file, console=console, machine=config.machine)
    except OSError as exc:
        # The same cause (an unwritable state_dir) makes the ledger exit 3: nothing was checked.
        raise LoopError(f"cannot write the log file {config.log_file}: {exc.strerror or exc}",
                        EXIT_UNCHECKED) from None
