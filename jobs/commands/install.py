"""`loop-verify install|uninstall launchagent|systemd`."""

from __future__ import annotations

import argparse

from jobs.config import load_config
from jobs.schedule_install import (
    install_launchagent,
    install_systemd,
    uninstall_launchagent,
    uninstall_systemd,
)


def main(args: argparse.Namespace) -> int:
    """Exit 0 when installed/removed (or printed), 1 when launchctl/systemctl refused, 2 on a bad
    configuration."""
    if args.command == "uninstall":
        return uninstall_launchagent() if args.kind == "launchagent" else uninstall_systemd()
    config = load_config(getattr(args, "config", None))
    print_only = bool(getattr(args, "print_only", False))
    if args.kind == "launchagent":
        return install_launchagent(config, print_only=print_only)
    return install_systemd(config, print_only=print_only)
