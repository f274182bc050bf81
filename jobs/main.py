"""loop-verify's command line: argparse wiring only; each verb lives in jobs/commands/.

Start-up is most of what a user waits for in `--help` and `list`, so the garbage collector is
off while the command line is parsed and the verb's modules are imported: those imports make
tens of thousands of objects that live as long as the process, and collecting among them cost
about 4 ms of every start (a tenth of an empty `list`). argparse is imported when the parser is
built, inside that window. `--help` and `VERB --help` print argparse's text kept in
jobs/cached_help.py, without argparse.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial

from jobs import cached_help
from jobs.cached_help import terminal_columns
from jobs.core.cli import cli_entry

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing for --help
if TYPE_CHECKING:
    import argparse
    import signal


def help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's own formatter, given the width argparse would compute (see terminal_columns);
    every parser builds one when it is made, not only when help is printed."""
    import argparse

    return argparse.HelpFormatter(prog, width=terminal_columns() - 2)


def _config_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="configuration file")


def _run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--repo", action="append", default=[], metavar="PATH",
                     help="repository to verify (repeatable; replaces the configured list)")
    _config_option(run)
    run.add_argument("--today", metavar="DATE", help="treat DATE (YYYY-MM-DD) as today")
    run.add_argument("--timeout", metavar="DUR", help="per-recipe limit for this run")
    run.add_argument("--dry-run", action="store_true", help="report what would run; change nothing")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    said = run.add_mutually_exclusive_group()
    said.add_argument("--quiet", action="store_true", help="print only what did not pass")
    said.add_argument("--verbose", action="store_true",
                      help="also name every task left alone, and why")
    run.add_argument("--trigger", choices=["manual", "launchd", "systemd", "serve"],
                     default="manual", help="what started this run (recorded in the ledger)")


def _list_options(lst: argparse.ArgumentParser) -> None:
    lst.add_argument("--repo", action="append", default=[], metavar="PATH",
                     help="repository to list (repeatable; replaces the configured list)")
    _config_option(lst)
    lst.add_argument("--today", metavar="DATE", help="treat DATE (YYYY-MM-DD) as today")
    lst.add_argument("--json", action="store_true", help="print one JSON object")


def _history_options(hist: argparse.ArgumentParser) -> None:
    _config_option(hist)
    hist.add_argument("--since", metavar="DATE",
                      help="from the start of DATE (YYYY-MM-DD) in the configured time zone")
    hist.add_argument("--repo", metavar="PATH|NAME", help="one repository, by path or name")
    hist.add_argument("--machine", metavar="NAME", help="only this machine's attempts")
    hist.add_argument("--runs", action="store_true", help="list runs instead of attempts")
    hist.add_argument("--json", action="store_true", help="print one JSON object")


def _review_options(review: argparse.ArgumentParser) -> None:
    _config_option(review)
    review.add_argument("--out", metavar="FILE", help="write the report here (default: stdout)")
    review.add_argument("--format", choices=["html", "markdown"], default="html")
    review.add_argument("--since", metavar="T",
                        help="from this date or time (default: 30 days before --until)")
    review.add_argument("--until", metavar="T",
                        help="up to this date (inclusive) or time (default: now)")
    review.add_argument("--repo", metavar="PATH|NAME", help="one repository, by path or name")
    review.add_argument("--task", metavar="ID", help="one task id")
    review.add_argument("--verdict", metavar="V", help="only attempts and audits with this verdict")
    review.add_argument("--machine", metavar="NAME", help="only what this machine recorded")


def _install_options(install: argparse.ArgumentParser) -> None:
    install.add_argument("kind", choices=["launchagent", "systemd"])
    _config_option(install)
    install.add_argument("--print", action="store_true", dest="print_only",
                         help="print what would be installed; change nothing")


def _uninstall_options(uninstall: argparse.ArgumentParser) -> None:
    uninstall.add_argument("kind", choices=["launchagent", "systemd"])
    uninstall.set_defaults(config=None, print_only=False)


VERBS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": ("verify every due task now", _run_options),
    "list": ("show every task with a verify: label and its state", _list_options),
    "history": ("show recorded attempts from the ledger", _history_options),
    "review": ("write the incident-review report (HTML or Markdown)", _review_options),
    "serve": ("run the daily verification in-process (APScheduler)", _config_option),
    "install": ("install the LaunchAgent or the systemd timer", _install_options),
    "uninstall": ("remove the LaunchAgent or the systemd timer", _uninstall_options),
    "doctor": ("check git, just, the config, repos and the scheduler", _config_option),
}


def build_parser(only: str | None = None, *, options: bool = True) -> argparse.ArgumentParser:
    """The command line's parser: every verb with its options; with `only`, just that verb (the
    one the command line names: argparse never looks at the others); without `options`, the
    verbs without theirs (enough for `--help`, which lists the verbs, and for a missing or
    unknown one). Each verb's parser costs start-up time: building all of them cost `list`
    more than an empty backlog does."""
    import argparse

    from jobs.core.version import VersionAction

    parser = argparse.ArgumentParser(
        prog="loop-verify", formatter_class=help_formatter,
        description="Run due Backlog.md verifications and record each verdict in its task.")
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_options) in VERBS.items():
        if only is not None and name != only:
            continue
        verb = subparsers.add_parser(name, help=help_text, formatter_class=help_formatter)
        if options:
            add_options(verb)
    return parser


def lean_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `argv` needs: the verb it starts with (argparse hands every later argument
    to that verb's parser), the verbs without options for `--help` first (which prints and
    exits before any verb is looked at), else all of them."""
    first = argv[0] if argv else None
    if first in VERBS:
        return build_parser(first)
    return build_parser(options=first not in ("-h", "--help"))


def _closed_streams_to_devnull() -> None:
    """Give a standard stream the process was started without /dev/null.

    Started with stdout closed (a supervisor, a script's `>&-`), Python leaves `sys.stdout`
    None: the first printed line failed after a verdict commit and `run` exited 3 for a pass.
    And the next file opened would take descriptor 1, which git, just and hooks would inherit.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


@cli_entry("loop-verify")
def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        _closed_streams_to_devnull()
    argv = sys.argv[1:] if argv is None else list(argv)
    kept = cached_help.kept_help(argv, terminal_columns())
    if kept is not None:
        cached_help.print_help(kept)
        sys.exit(0)  # as argparse's help action exits
    collecting = gc.isenabled()
    gc.disable()
    try:
        args = lean_parser(argv).parse_args(argv)
        verb = _verb(args)
        if collecting and args.command != "list":
            gc.enable()  # list makes no cycles and holds the process only for a moment
        return verb()
    finally:
        if collecting:
            gc.enable()


def _verb(args: argparse.Namespace) -> Callable[[], int]:
    """The verb the command line names, its module imported, ready to call."""
    command: str = args.command
    if command == "run":
        from jobs.commands import run
        return partial(run.main, config=args.config, repos=args.repo, today=args.today,
                       timeout=args.timeout, dry_run=args.dry_run, as_json=args.json,
                       quiet=args.quiet, verbose=args.verbose, trigger=args.trigger)
    if command == "list":
        from jobs.commands import list as list_cmd

        def listing() -> int:
            global _nothing_to_close
            code = list_cmd.main(config_path=args.config, repos=args.repo, today=args.today,
                                 as_json=args.json)
            _nothing_to_close = True  # list holds no thread, database or log handler
            return code
        return listing
    if command == "history":
        from jobs.commands import history
        return partial(history.main, config_path=args.config, since=args.since, repo=args.repo,
                       machine=args.machine, as_json=args.json, runs=args.runs)
    if command == "review":
        from jobs.commands import review
        return partial(review.main, review.ReviewOptions(
            config=args.config, out=args.out, format=args.format, since=args.since,
            until=args.until, repo=args.repo, task=args.task, verdict=args.verdict,
            machine=args.machine))
    if command == "serve":
        from jobs.commands import serve
        return partial(serve.main, config_path=args.config)
    if command in ("install", "uninstall"):
        from jobs.commands import install
        return partial(install.main, action=command, kind=args.kind,
                       config_path=args.config, print_only=args.print_only)
    from jobs.commands import doctor
    return partial(doctor.main, config_path=args.config)

# Set by a verb that returned normally and left nothing the interpreter's teardown must close.
_nothing_to_close = False


class _StopHeld:
    """What SIGINT, SIGTERM and SIGHUP do to `run` outside its own handlers: while the program
    starts (imports take a noticeable moment) and after the run, while the process exits.

    Left to their defaults they would kill the process (or raise KeyboardInterrupt, exit 130)
    with no task recorded, or turn a finished run's exit code into death by a signal. Held
    here, a stop that came early makes `run` interrupt every due task (exit 3), and one that
    comes after it changes nothing it has recorded or the exit code.
    """

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, signum: int, frame: object) -> None:
        self.seen = True


def _stop_signals() -> tuple[signal.Signals, ...]:
    # Imported here: `signal` brings `enum`, which --help and `list` do without.
    import signal

    return (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _hold_stop_signals() -> None:
    import signal

    held = _StopHeld()
    for number in _stop_signals():
        # A signal the caller ignores (`nohup`, a background job) stays ignored.
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, held)


def entry() -> None:
    """The `loop-verify` console script: `main()`, then exit.

    After `list`, without the interpreter's teardown: freeing every task it read and a last
    garbage collection cost a 5,000-task list ~7% of its time, and it has nothing else to close.
    Output is flushed first; a flush that fails takes the ordinary exit, which reports nothing
    more (`emit` has already pointed a closed stdout at /dev/null).
    """
    running = sys.argv[1:2] == ["run"]
    if running:
        _hold_stop_signals()
    code = main()
    if running:
        # The interpreter's teardown puts the default handlers back before the process ends:
        # a stop arriving then is left pending and dies with the process.
        import signal

        signal.pthread_sigmask(signal.SIG_BLOCK, _stop_signals())
    if _nothing_to_close:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
