"""`--version` for both command lines."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


class VersionAction(argparse.Action):
    """`--version`: the installed package's version, looked up only when asked (importing
    importlib.metadata costs more than the rest of `--help`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("loop-jobs")
        except PackageNotFoundError:
            found = "unknown (not installed)"
        print(f"{parser.prog} {found}")
        parser.exit()
