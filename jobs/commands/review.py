"""`loop-verify review`: one self-contained incident-review report from the ledger."""

from __future__ import annotations

import os
import re
import socket
import stat
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path

from jobs.config.load import load_config
from jobs.core.errors import UsageError
from jobs.core.fs import atomic_write
from jobs.core.logs import configure_logging
from jobs.core.statedir import RUNS_DIR
from jobs.ledger.audits import AUDIT_VERDICTS, AuditFinding, AuditRun
from jobs.ledger.store import VERDICTS
from jobs.review.audits import AUDITS_DETAILED, detail_order
from jobs.review.html.page import render_html
from jobs.review.identity import (
    Identities,
    choice_matches,
    chosen_repositories,
    local_identity,
    parse_repo_option,
)
from jobs.review.links import LocalSites, Site, site_for_github_remote, site_for_url
from jobs.review.local import OutputReader, task_title
from jobs.review.markdown import render_markdown
from jobs.review.model import Edges, build_review
from jobs.review.query import Filters, LedgerReader

DEFAULT_DAYS = 30
REVIEW_VERDICTS = tuple(dict.fromkeys((*VERDICTS, *AUDIT_VERDICTS)))
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
# The window's ends, in UTC. The report moves a moment by days (the default 30 before --until,
# a whole day's end, a column's start in the configured zone): a year's margin from datetime's
# own limits keeps all of that from overflowing.
_EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
_LATEST = datetime(9998, 12, 31, tzinfo=UTC)


def parse_moment(text: str, option: str, zone: tzinfo, *, end: bool) -> datetime:
    """A date (a whole day in the configured zone; --until includes it) or an ISO timestamp
    (naive ones in the configured zone)."""
    try:
        if _DATE.fullmatch(text):
            day = date.fromisoformat(text) + timedelta(days=1 if end else 0)
            moment = datetime.combine(day, time.min, tzinfo=zone)
        else:
            moment = datetime.fromisoformat(text)
            moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
    except ValueError:
        raise UsageError(f"{option}: expected a date YYYY-MM-DD or a time such as "
                         f"2026-11-30T07:30:00Z (got {text!r})") from None
    except OverflowError:  # the day after 9999-12-31
        moment = _LATEST + timedelta(days=1)
    if not _EARLIEST <= moment <= _LATEST:
        raise UsageError(f"{option}: {text!r} is outside the years a review can show "
                         f"({_EARLIEST.year:04d} to {_LATEST.year})")
    return moment


@dataclass(frozen=True)
class ReviewOptions:
    """`review`'s command line."""

    config: str | None = None
    out: str | None = None
    format: str = "html"
    since: str | None = None
    until: str | None = None
    repo: str | None = None
    task: str | None = None
    verdict: str | None = None
    machine: str | None = None


def main(args: ReviewOptions, now: datetime | None = None) -> int:
    # git is asked (through jobs/git/repo.py) only for repositories that are on this machine.
    config = load_config(args.config)
    _start_logging(config.log_file, config.machine)
    zone = config.timezone
    now = now or datetime.now(UTC)
    if args.verdict is not None and args.verdict not in REVIEW_VERDICTS:
        raise UsageError(f"--verdict: expected one of {', '.join(REVIEW_VERDICTS)} "
                         f"(got {args.verdict!r})")
    until = parse_moment(args.until, "--until", zone, end=True) if args.until else now
    since = (parse_moment(args.since, "--since", zone, end=False) if args.since
             else default_since(until, zone))
    if since >= until:
        raise UsageError(f"--since {args.since or since.isoformat()} is not before --until "
                         f"{args.until or until.isoformat()}")
    choice = parse_repo_option(args.repo)
    machine = config.machine or socket.gethostname()
    branches = {str(r.path): r.branch for r in config.repos}
    reader = LedgerReader(config.ledger)
    try:
        clones, claimed = reader.clones(since, until)
        identity = Identities(claimed, machine, lambda repo: _local_identity(repo, branches))
        chosen = None
        if choice is not None:
            # The repositories it names, with all their clones.
            wanted = chosen_repositories(choice, clones, identity)
            chosen = frozenset(repo for m, repo in clones if identity(m, repo) in wanted)
        here = frozenset(repo for _m, repo in clones if os.path.isdir(repo))
        filters = Filters(since=since, until=until, repos=chosen, task=args.task,
                          verdict=args.verdict, machine=args.machine, here=here,
                          days_since=whole_day(since, zone, 0),
                          days_until=whole_day(until - timedelta(microseconds=1), zone, 1))
        data = reader.read(filters)
        if choice is not None:
            data.audits = [run for run in data.audits if any(
                identity(run.machine, repo) in wanted
                or choice_matches(choice, identity(run.machine, repo), [repo])
                for repo in run.repos)]
        reader.add_findings(sorted(data.audits, key=detail_order)[:AUDITS_DETAILED])
    finally:
        reader.close()
    shown = [(name, value) for name, value in (
        ("repository", choice.shown if choice else None), ("task", args.task),
        ("verdict", args.verdict), ("machine", args.machine)) if value]
    edges = Edges(identity=identity, site_of=LocalSites(), identity_site=identity_site,
                  audit_site_of=audit_site,
                  read_output=OutputReader(machine, data.has_machine,
                                           config.state_dir / RUNS_DIR),
                  title_of=task_title)
    review = build_review(data, since=since, until=until, now=now, zone=zone, filters=shown,
                          edges=edges)
    render = render_html if args.format == "html" else render_markdown
    text = render(review, now)
    if args.out:
        out = Path(args.out)
        try:
            write_report(out, text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"--out {out}: {exc.strerror or exc}") from None
        print(f"review written to {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def default_since(until: datetime, zone: tzinfo) -> datetime:
    """The start of the day DEFAULT_DAYS before the window's last day, in the configured zone:
    whole days, so the first day's run is in the window."""
    last = (until - timedelta(microseconds=1)).astimezone(zone).date()
    try:
        return datetime.combine(last - timedelta(days=DEFAULT_DAYS), time.min, tzinfo=zone)
    except OverflowError:
        return _EARLIEST


def whole_day(moment: datetime, zone: tzinfo, days: int) -> datetime:
    """The start of the day of `moment` in the configured zone, `days` later."""
    day = moment.astimezone(zone).date() + timedelta(days=days)
    return datetime.combine(day, time.min, tzinfo=zone)


def _local_identity(repo: str, branches: dict[str, str]) -> str | None:
    from jobs.config.load import DEFAULT_BRANCH
    from jobs.git.run import GitError
    from jobs.process import exe

    exe.isolate_environment(os.environ)
    try:
        return local_identity(repo, branches.get(repo, DEFAULT_BRANCH))
    except (OSError, GitError):
        return None  # not a clone git can read any more: its path stands for it


def identity_site(identity: str) -> Site | None:
    """A repository's page from its identity alone (github.com/acme/app), from any machine."""
    if identity.startswith("/"):
        return None
    return site_for_url(f"https://{identity}")


def write_report(out: Path, data: bytes) -> None:
    """The report at `out`: a regular file is replaced atomically; a link is followed (the file
    it names is replaced and the link stays); a device, FIFO or terminal (`/dev/stdout`) is
    written into. A rename over `/dev/stdout` would have replaced the device node itself."""
    try:
        regular = stat.S_ISREG(os.stat(out).st_mode)
    except FileNotFoundError:
        regular = True  # a new file (or a link to one)
    if regular:
        atomic_write(Path(os.path.realpath(out)), data)
        return
    # Opened by its own name: /dev/stdout is a link through /proc that only open() follows.
    with open(out, "wb") as fh:
        fh.write(data)


def _start_logging(log_file: Path, machine: str) -> None:
    # The ledger layer logs its own events: into the log file, never into a report on stdout.
    # A log that cannot be written does not stop a read-only report.
    try:
        configure_logging(log_file, console=False, machine=machine)
    except OSError:
        configure_logging(None, console=False, machine=machine)


def audit_site(run: AuditRun, finding: AuditFinding) -> Site | None:
    urls = run.repos.get(finding.repo, {})
    remote = finding.remote or ""
    if remote.startswith("github:"):
        return site_for_github_remote(remote, urls)
    url = urls.get(remote)
    return site_for_url(url) if url else None
