"""`loop-verify install|uninstall launchagent|systemd`."""

from __future__ import annotations

from jobs.config.load import load_config
from jobs.core.errors import EXIT_FAILED, LoopError
from jobs.schedule.install import (
    install_launchagent,
    install_systemd,
    uninstall_launchagent,
    uninstall_systemd,
)


def main(*, action: str, kind: str, config_path: str | None = None,
         print_only: bool = False) -> int:
    """`action` is install or uninstall. Exit 0 when installed/removed (or printed), 1 when
    launchctl/systemctl refused or a file could not be written or removed, 2 on a bad
    configuration."""
    try:
        return _install_or_uninstall(action, kind, config_path, print_only)
    except OSError as exc:
        # A folder that cannot be made (a file in the way), a read-only home: one line, no
        # traceback.
        where = f": {exc.filename}" if exc.filename else ""
        raise LoopError(f"{action} {kind}: {exc.strerror or exc}{where}", EXIT_FAILED) from None


def _install_or_uninstall(action: str, kind: str, config_path: str | None,
                          print_only: bool) -> int:
    if action == "uninstall":
        return uninstall_launchagent() if kind == "launchagent" else uninstall_systemd()
    config = load_config(config_path)
    if kind == "launchagent":
        return install_launchagent(config, print_only=print_only)
    return install_systemd(config, print_only=print_only)
