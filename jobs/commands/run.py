"""`loop-verify run`: verify every due task now."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from jobs.commands.common import no_repos_hint, parse_date, setup
from jobs.config.load import with_timeout
from jobs.core.errors import UsageError
from jobs.ledger.spool import SPOOL_DIR
from jobs.verify import run as verify
from jobs.verify.summary import closing_line
from jobs.verify.terminal import emit, format_line, natural_key, one_line, repo_name


@contextmanager
def stop_on_termination() -> Iterator[threading.Event]:
    """SIGINT, SIGTERM and SIGHUP (Ctrl-C, a timer stopped, a terminal closed) end the run
    gracefully, whenever they come.

    Left to the default action they would kill only this process (or raise KeyboardInterrupt
    anywhere, even inside a commit), and the recipe, in its own session, would outlive the run.
    Set instead, the event makes the runner kill the recipe's whole tree, lets an edit in progress
    finish, records every due task not yet verified as `interrupted`, and the run exits 3.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # A signal the caller ignores (`nohup` ignores SIGHUP) stays ignored.
    previous = {sig: signal.signal(sig, handler)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    # One that came while the program was starting (held by jobs/main.py's entry).
    if any(getattr(old, "seen", False) for old in previous.values()):
        stop.set()
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclass(frozen=True)
class RunOptions:
    """`run`'s command line."""

    config: str | None
    repos: list[str] | None
    today: str | None
    timeout: str | None
    dry_run: bool
    as_json: bool
    quiet: bool = False
    verbose: bool = False
    trigger: str = "manual"


def main(*, config: str | None, repos: list[str] | None, today: str | None,
         timeout: str | None, dry_run: bool, as_json: bool, quiet: bool = False,
         verbose: bool = False, trigger: str = "manual") -> int:
    # From the first moment: a stop while the configuration is read still ends in exit 3 with
    # every due task recorded, never in a traceback or a silent exit.
    with stop_on_termination() as stop:
        return _run(RunOptions(config, repos, today, timeout, dry_run, as_json, quiet, verbose,
                               trigger), stop)


def _run(args: RunOptions, stop: threading.Event) -> int:
    config = setup(args.config, args.repos)
    config = with_timeout(config, args.timeout)
    today = parse_date(args.today, "--today") if args.today else None
    if not config.repos:
        raise UsageError(f"no repositories to verify: {no_repos_hint(config)}")
    live = not args.as_json and sys.stderr.isatty()
    shown = Shown(live, quiet=args.quiet)

    summary = verify.run_once(config, today=today, dry_run=args.dry_run, stop=stop,
                              printer=None if args.as_json else shown.line,
                              ticker=shown.tick if live else None, trigger=args.trigger)
    shown.clear()
    if summary.ledger_lost and not summary.dry_run:
        print(f"loop-verify: {summary.ledger_lost}; every task after that was skipped and the "
              f"records kept in {config.state_dir / SPOOL_DIR} for a later run", file=sys.stderr)
    if args.as_json:
        emit(json.dumps({
            "run_id": summary.run_id, "today": summary.today.isoformat(),
            "dry_run": summary.dry_run, "exit_code": summary.exit_code,
            "results": [r.to_json() for r in summary.results],
        }, sort_keys=True))
        return summary.exit_code
    if args.verbose:
        for line in passed_over_lines(summary):
            emit(line)
    if args.quiet:
        return summary.exit_code
    if not summary.results:
        emit(f"nothing due on {summary.today.isoformat()} in {len(config.repos)} "
             f"repositor{'y' if len(config.repos) == 1 else 'ies'}")
    else:
        emit(closing_line(summary.counts(), summary.seconds)
             + (" (dry run: nothing changed)" if summary.dry_run else ""))
    return summary.exit_code


class Shown:
    """What the terminal shows while the run goes: each attempt's line (`--quiet`: only those
    that did not pass) and, on a terminal, a live line naming the recipe that runs."""

    def __init__(self, live: bool, *, quiet: bool) -> None:
        self.live = live
        self.quiet = quiet
        self.ticking = False

    def line(self, text: str, passed: bool = False) -> None:
        if self.quiet and passed:
            return
        self.clear()
        emit(text)

    def tick(self, label: str, elapsed: float) -> None:
        sys.stderr.write(f"\r\033[K  running {label}  {elapsed:.0f}s")
        sys.stderr.flush()
        self.ticking = True

    def clear(self) -> None:
        if self.live and self.ticking:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.ticking = False


def passed_over_lines(summary: verify.RunSummary) -> list[str]:
    """`--verbose`: every task with a verify: label the run left alone, and why."""
    lines = []
    for root, c in sorted(summary.passed_over, key=lambda rc: (rc[0], natural_key(rc[1].task.id))):
        name = repo_name(root, summary.repo_names)
        lines.append(one_line(f"{c.state:<8} {name} {c.task.id}"
                              + (f"  just {c.recipe}" if c.recipe else "")
                              + (f": {c.reason}" if c.reason else "")))
    return lines


__all__ = ["format_line", "main"]
