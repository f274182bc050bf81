"""What every loop-verify verb does first: read the configuration and set up logging."""

from __future__ import annotations

import argparse
from datetime import date

from jobs.config import Config, load_config, with_repos
from jobs.errors import UsageError
from jobs.logs import configure_logging


def parse_date(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option}: expected a date YYYY-MM-DD (got {text!r})") from None


def setup(args: argparse.Namespace, *, repos: bool = True) -> Config:
    config = load_config(getattr(args, "config", None))
    if repos and getattr(args, "repo", None):
        config = with_repos(config, args.repo)
    configure_logging(config.log_file, console=False)
    return config
