"""`loop-verify install|uninstall launchagent|systemd`."""

from __future__ import annotations

import argparse

from jobs.config import load_config
from jobs.errors import EXIT_FAILED, LoopError
from jobs.schedule_install import (
    install_launchagent,
    install_systemd,
    uninstall_launchagent,
    uninstall_systemd,
)


def main(args: argparse.Namespace) -> int:
    """Exit 0 when installed/removed (or printed), 1 when launchctl/systemctl refused or a file
    could not be written or removed, 2 on a bad configuration."""
    try:
        return _install_or_uninstall(args)
    except OSError as exc:
        # A folder that cannot be made (a file in the way), a read-only home: one line, no
        # traceback.
        where = f": {exc.filename}" if exc.filename else ""
        raise LoopError(f"{args.command} {args.kind}: {exc.strerror or exc}{where}",
                        EXIT_FAILED) from None


def _install_or_uninstall(args: argparse.Namespace) -> int:
    if args.command == "uninstall":
        return uninstall_launchagent() if args.kind == "launchagent" else uninstall_systemd()
    config = load_config(getattr(args, "config", None))
    print_only = bool(getattr(args, "print_only", False))
    if args.kind == "launchagent":
        return install_launchagent(config, print_only=print_only)
    return install_systemd(config, print_only=print_only)
