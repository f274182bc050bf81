"""`--help` from kept text (jobs.cached_help): byte for byte what argparse prints, or argparse.

The kept texts are argparse's output at the widths they are kept for; when an option or a help
string changes they stop being so, and these tests say how to write them again.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs import cached_help
from jobs.cached_help_texts import TEXTS
from jobs.main import VERBS, build_parser, main

REGENERATE = "argparse prints another text now: run `make help-texts` and commit the result"
PARSERS = {"loop-verify": ["--help"], **{f"loop-verify {verb}": [verb, "--help"]
                                         for verb in VERBS}}


def argparse_says(argv: list[str], columns: int,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, object]:
    """(stdout, stderr, exit code) of the full parser, with no kept text in the way."""
    monkeypatch.setenv("COLUMNS", str(columns))
    out, err = io.StringIO(), io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            code = exc.code
    return out.getvalue(), err.getvalue(), code


def main_says(argv: list[str], columns: int,
              monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, object]:
    monkeypatch.setenv("COLUMNS", str(columns))
    out, err = io.StringIO(), io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return out.getvalue(), err.getvalue(), code


@pytest.mark.parametrize("prog", sorted(TEXTS))
def test_each_kept_text_is_argparse_output_at_each_width_it_is_kept_for(
        prog: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prog in PARSERS, f"{prog}: no such parser any more; {REGENERATE}"
    for low, high, text in TEXTS[prog]:
        # An open run: argparse wraps nothing once every line fits, so a text that is the same
        # at its first width and at a far greater one is the same at every width between.
        widths = range(low, high + 1) if high is not None else [low, low + 1, 100_000]
        for columns in widths:
            printed, _, _ = argparse_says(PARSERS[prog][:], columns, monkeypatch)
            assert printed == text, f"{prog} at {columns} columns: {REGENERATE}"


def test_every_parser_is_kept_at_80_columns_and_at_any_greater_width() -> None:
    assert set(TEXTS) == set(PARSERS), REGENERATE
    for prog, runs in TEXTS.items():
        assert any(low <= 80 and (high is None or 80 <= high) for low, high, _ in runs), prog
        assert runs[-1][1] is None, prog


@pytest.mark.parametrize("argv", [*PARSERS.values(), ["-h"], ["list", "-h"], ["install", "-h"]])
@pytest.mark.parametrize("columns", [80, 30, 100, 120, 200])
def test_main_prints_what_argparse_prints(argv: list[str], columns: int,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept or not at this width, `main` prints argparse's help and exits 0 as argparse does."""
    assert main_says(argv, columns, monkeypatch) == argparse_says(argv, columns, monkeypatch)


TOKENS = ["--help", "-h", "--he", "-", "--", "", "list", "run", "install", "systemd", "bogus",
          "--json", "--version", "--repo", "x", "--help=1", "-hh"]


@settings(max_examples=150, deadline=None)
@given(argv=st.lists(st.sampled_from(TOKENS), max_size=4),
       columns=st.sampled_from([1, 40, 79, 80, 81, 100, 180]))
def test_a_kept_answer_is_argparse_answer(argv: list[str], columns: int) -> None:
    """Whenever a command line is answered from kept text, argparse prints that very text and
    exits 0 (the other command lines go to argparse itself)."""
    kept = cached_help.kept_help(argv, columns)
    if kept is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert argparse_says(argv, columns, monkeypatch) == (kept, "", 0), argv


def test_only_a_lone_help_option_after_at_most_a_verb_is_answered() -> None:
    for argv in (["--help"], ["-h"], ["list", "--help"], ["uninstall", "-h"]):
        assert cached_help.kept_help(argv, 80) is not None, argv
    for argv in ([], ["--he"], ["-h", "list"], ["list", "--json", "--help"], ["", "--help"],
                 ["bogus", "--help"], ["--help", "--help"], ["list"]):
        assert cached_help.kept_help(argv, 80) is None, argv


def test_help_to_a_closed_stdout_is_passed_over_as_argparse_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Closed())
    cached_help.print_help("usage: x\n")  # no exception, like argparse's _print_message
    err = io.StringIO()
    monkeypatch.setattr("sys.stdout", None)
    monkeypatch.setattr("sys.stderr", err)
    cached_help.print_help("usage: x\n")
    assert err.getvalue() == "usage: x\n"
