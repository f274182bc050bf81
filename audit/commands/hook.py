"""`hook install|uninstall REPO`: the pre-push hook that logs every pushed ref."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from audit import hook
from audit.rundir import ENV_VAR
from audit.snapshot import require_repository
from jobs.errors import EXIT_OK


def main(args: argparse.Namespace) -> int:
    repo = require_repository(args.repo)
    if args.action == "uninstall":
        print(f"loop-pi-audit: {hook.uninstall(repo)}")
        return EXIT_OK
    given = args.run_dir or os.environ.get(ENV_VAR) or ""
    run_dir = Path(given).expanduser().absolute() if given else None
    print(f"loop-pi-audit: {hook.install(repo, run_dir)}")
    if run_dir is None:
        print(f"loop-pi-audit: note: no run directory given; pushes are logged only while "
              f"${ENV_VAR} is set", file=sys.stderr)
    return EXIT_OK
