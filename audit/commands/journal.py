"""`journal install|uninstall BARE`: the journal of ref updates in a bare repository."""

from __future__ import annotations

import os
from pathlib import Path

from audit.evidence.steps import journal
from jobs.core.errors import EXIT_OK, UsageError


def main(*, action: str, bare: str) -> int:
    path = Path(bare)
    if not path.is_dir():
        raise UsageError(f"{bare}: no such directory")
    root = Path(os.path.realpath(path))
    done = journal.install(root) if action == "install" else journal.uninstall(root)
    print(f"loop-pi-audit: {done}")
    return EXIT_OK
