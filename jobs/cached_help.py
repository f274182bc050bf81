"""`loop-verify --help` and `loop-verify VERB --help` without argparse: argparse's own text,
rendered ahead of time.

Printing help would otherwise import argparse (and re, gettext, locale with it) and build the
parser, only to print text that changes when the options do: that was most of what `--help`
cost, over twice a bare `python -c pass`. jobs/cached_help_texts.py keeps the text argparse
prints for each parser at the terminal widths most calls see (80 columns, which is also the
width when stdout is not a terminal, and every width at which the text no longer changes),
written by `make help-texts` (scripts/help_texts.py). Any other command line, and any other
width, goes to argparse as before. tests/test_cached_help.py renders every kept text with
argparse at each width it is kept for and fails when one differs by a byte.

This module imports nothing but `os` and `sys`, which every interpreter has loaded already, and
the texts only for a command line that asks for help.
"""

import os
import sys

PROG = "loop-verify"
HELP_OPTIONS = ("-h", "--help")


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, as argparse's help formatter asks for it, without
    importing shutil (and its compression modules) in every command: $COLUMNS when it is a
    positive number, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            # no stdout at all (None) is the AttributeError shutil catches too
            stdout = sys.__stdout__.fileno()  # type: ignore[union-attr]
            columns = os.get_terminal_size(stdout).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


def kept_help(argv: list[str], columns: int) -> str | None:
    """What argparse prints for `argv` on a terminal `columns` wide, when `argv` only asks for
    help (`--help`, `-h`, or a verb and one of them) and that text is kept; else None."""
    if not 1 <= len(argv) <= 2 or argv[-1] not in HELP_OPTIONS:
        return None
    from jobs.cached_help_texts import TEXTS  # only for a command line that asks for help

    prog = " ".join([PROG, *argv[:-1]])
    for low, high, text in TEXTS.get(prog, ()):
        if low <= columns and (high is None or columns <= high):
            return text
    return None


def print_help(text: str) -> None:
    """Print as argparse's `print_help` does: to stdout (stderr when there is none), passing over
    a stream that cannot be written."""
    try:
        (sys.stdout or sys.stderr).write(text)
    except (AttributeError, OSError):
        pass
