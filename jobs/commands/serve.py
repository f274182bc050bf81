"""`loop-verify serve`: the daily verification, scheduled in-process."""

from __future__ import annotations

import os

from jobs.commands.common import start_logging
from jobs.config.load import load_config
from jobs.process import exe
from jobs.schedule.serve import serve


def main(*, config_path: str | None) -> int:
    """Exit 0 after a clean stop (SIGTERM/SIGINT/SIGHUP), 2 on a bad configuration, 3 when another
    `serve` already holds the state directory."""
    exe.isolate_environment(os.environ)
    config = load_config(config_path)
    start_logging(config)
    return serve(config)
