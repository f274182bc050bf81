"""Telling the owner how a run went, without a terminal (SPEC "Being told"): the `heartbeat:`
URL is pinged when the run starts and with its exit code when it ends; after a run that exits 1
or 3 each `notify:` URL gets one message. A delivery never changes a verdict or the exit code:
its failure is a log event, and a `doctor` failure until a later delivery succeeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from shlex import quote

from jobs.config.load import Config
from jobs.core.errors import EXIT_FAILED, EXIT_UNCHECKED
from jobs.core.logs import get_logger
from jobs.ledger.model import FAILING, UNCHECKED, Attempt, EditState, Verdict
from jobs.notify import bounded, deliveries, heartbeat, messages
from jobs.verify.terminal import format_line

log = get_logger("loop-verify")

# A message stays readable on a phone: the rest is in the review it names.
MESSAGE_LINES = 30


def not_checked(result: Attempt) -> bool:
    """An attempt that leaves its task unchecked (exit 3): another machine's claim is not one."""
    return ((result.verdict in UNCHECKED and result.claimed_by is None)
            or result.edit_state == EditState.RESTORED)


def title(machine: str, results: Sequence[Attempt], *, interrupted: bool = False,
          ledger_lost: bool = False) -> str:
    """`loop-verify on <machine>: 2 failed, 1 could not be checked`."""
    failed = sum(r.verdict in FAILING for r in results)
    unchecked = sum(not_checked(r) for r in results)
    parts = [f"{failed} failed"] if failed else []
    if unchecked:
        parts.append(f"{unchecked} could not be checked")
    if not parts:
        parts.append("interrupted" if interrupted
                     else "the ledger could not be reached" if ledger_lost
                     else "something could not be checked")
    return f"loop-verify on {machine}: {', '.join(parts)}"


def body(results: Sequence[Attempt], names: Mapping[str, str], review: str) -> str:
    """One line per attempt that is not a pass, with its reason; then the review to open. A pass
    whose commit was refused is one too: the title counts it as not checked."""
    lines = [format_line(r, names=names).splitlines()[0] for r in results
             if r.verdict != Verdict.PASS or not_checked(r)]
    if len(lines) > MESSAGE_LINES:
        lines = [*lines[:MESSAGE_LINES], f"… and {len(lines) - MESSAGE_LINES} more"]
    return "\n".join([*lines, "", f"review: {review}"])


def review_command(config: Config, day: str) -> str:
    """The `review` command that shows this morning's run on the machine that ran it, ready to
    paste into a shell (a config path or machine name with spaces quoted)."""
    where = f" --config {quote(str(config.source))}" if config.source is not None else ""
    return f"loop-verify review{where} --since {day} --machine {quote(config.machine)}"


def _kept(config: Config, url: str, delivery: deliveries.Delivery) -> None:
    try:
        deliveries.record(config.state_dir, url, delivery)
    except OSError as exc:
        log.error("delivery.state_unwritable", state_dir=str(config.state_dir), error=str(exc))


def ping(config: Config, what: str, *, body_text: str = "",
         limit: float | None = None) -> str | None:
    """One heartbeat ping (`start` or an exit code); None when it was taken, else why not."""
    if config.heartbeat is None:
        return None
    shown = deliveries.shown_target(config.heartbeat, deliveries.HEARTBEAT)
    problem = heartbeat.ping(config.heartbeat, what, body=body_text,
                             limit=limit or bounded.CALL_LIMIT)
    _kept(config, config.heartbeat, deliveries.Delivery(
        deliveries.HEARTBEAT, shown, deliveries.now_text(), problem is None, problem, what))
    if problem is None:
        log.info("heartbeat.sent", target=shown, ping=what)
    else:
        log.error("heartbeat.failed", target=shown, ping=what, reason=problem)
    return problem


def tell(config: Config, exit_code: int, subject: str, text: str, *,
         limit: float | None = None) -> list[str]:
    """Send the run's message to each `notify:` URL when it exits 1 or 3; the problems."""
    if exit_code not in (EXIT_FAILED, EXIT_UNCHECKED) or not config.notify:
        return []
    kind = messages.FAILURE if exit_code == EXIT_FAILED else messages.WARNING
    problems = []
    for i, url in enumerate(config.notify, start=1):
        shown = f"notify[{i}] {deliveries.shown_target(url, deliveries.NOTIFY)}"
        problem = messages.send(url, subject, text, kind, limit=limit or bounded.CALL_LIMIT)
        _kept(config, url, deliveries.Delivery(deliveries.NOTIFY, shown, deliveries.now_text(),
                                               problem is None, problem, subject))
        if problem is None:
            log.info("notify.sent", target=shown, title=subject)
        else:
            log.error("notify.failed", target=shown, title=subject, reason=problem)
            problems.append(f"{shown}: {problem}")
    return problems
