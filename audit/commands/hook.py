"""`hook install|uninstall REPO`: the pre-push hook that logs every pushed ref."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from audit.evidence import hook
from audit.evidence.rundir import ENV_VAR
from audit.evidence.snapshot import require_repository
from jobs.core.errors import EXIT_OK, LoopError, UsageError


def main(*, action: str, repo: str, run_dir: str | None, config: str | None = None) -> int:
    root = require_repository(repo)
    if action == "uninstall":
        print(f"loop-pi-audit: {hook.uninstall(root)}")
        return EXIT_OK
    given = run_dir or os.environ.get(ENV_VAR) or ""
    directory = Path(given).expanduser().absolute() if given else None
    # The configuration in force now is the one the hook seals pushes with (when it exists; else
    # the hook looks the default up at push time).
    from audit.evidence.seal.ledger import config_path

    in_force = config_path(config)
    if config and not in_force.exists():
        raise UsageError(f"--config {in_force}: no such file")
    recorded = in_force if in_force.exists() else None
    print(f"loop-pi-audit: {hook.install(root, directory, config=recorded)}")
    if directory is None:
        print(f"loop-pi-audit: note: no run directory given; pushes are logged only while "
              f"${ENV_VAR} is set", file=sys.stderr)
    else:
        _warn_of_another_ledger(directory, str(recorded) if recorded else None)
    return EXIT_OK


def _warn_of_another_ledger(run_dir: Path, config: str | None) -> None:
    """Pushes sealed in another ledger than the one the run was armed in are lines closeout
    cannot find sealed: say so now, not at closeout."""
    from audit.evidence.seal.arm import armed_in
    from jobs.config.load import load_config
    from jobs.core.urls import redact_url

    armed = armed_in(run_dir)
    if armed is None:
        return
    try:
        sealing = redact_url(load_config(config).ledger)
    except LoopError:
        return  # the hook reports a configuration it cannot read at push time
    if sealing != armed:
        print(f"loop-pi-audit: warning: {run_dir} was armed in {armed} (audit-arm.json), but "
              f"this hook seals in {sealing}: closeout will not find these pushes sealed; "
              "install it with the --config begin used", file=sys.stderr)
