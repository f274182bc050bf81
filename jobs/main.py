"""loop-verify's command line: argparse wiring only; each verb lives in jobs/commands/."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from jobs.errors import cli_entry
from jobs.version import VersionAction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loop-verify",
        description="Run due Backlog.md verifications and record each verdict in its task.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def config_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", metavar="FILE", help="configuration file")

    run = sub.add_parser("run", help="verify every due task now")
    run.add_argument("--repo", action="append", default=[], metavar="PATH",
                     help="repository to verify (repeatable; replaces the configured list)")
    config_opt(run)
    run.add_argument("--today", metavar="DATE", help="treat DATE (YYYY-MM-DD) as today")
    run.add_argument("--timeout", metavar="DUR", help="per-recipe limit for this run")
    run.add_argument("--dry-run", action="store_true", help="report what would run; change nothing")
    run.add_argument("--json", action="store_true", help="print one JSON object")

    lst = sub.add_parser("list", help="show every task with a verify: label and its state")
    lst.add_argument("--repo", action="append", default=[], metavar="PATH")
    config_opt(lst)
    lst.add_argument("--today", metavar="DATE")
    lst.add_argument("--json", action="store_true")

    hist = sub.add_parser("history", help="show recorded attempts from the ledger")
    config_opt(hist)
    hist.add_argument("--since", metavar="DATE")
    hist.add_argument("--repo", metavar="PATH")
    hist.add_argument("--machine", metavar="NAME", help="only this machine's attempts")
    hist.add_argument("--json", action="store_true")

    review = sub.add_parser("review", help="write the incident-review report (HTML or Markdown)")
    config_opt(review)
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

    serve = sub.add_parser("serve", help="run the daily verification in-process (APScheduler)")
    config_opt(serve)

    install = sub.add_parser("install", help="install the LaunchAgent or the systemd timer")
    install.add_argument("kind", choices=["launchagent", "systemd"])
    config_opt(install)
    install.add_argument("--print", action="store_true", dest="print_only",
                         help="print what would be installed; change nothing")

    uninstall = sub.add_parser("uninstall", help="remove the LaunchAgent or the systemd timer")
    uninstall.add_argument("kind", choices=["launchagent", "systemd"])
    uninstall.set_defaults(config=None, print_only=False)

    doctor = sub.add_parser("doctor", help="check git, just, the config, repos and the scheduler")
    config_opt(doctor)
    return parser


@cli_entry("loop-verify")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command: str = args.command
    if command == "run":
        from jobs.commands import run
        return run.main(config=args.config, repos=args.repo, today=args.today,
                        timeout=args.timeout, dry_run=args.dry_run, as_json=args.json)
    if command == "list":
        from jobs.commands import list as list_cmd
        return list_cmd.main(config_path=args.config, repos=args.repo, today=args.today,
                             as_json=args.json)
    if command == "history":
        from jobs.commands import history
        return history.main(config_path=args.config, since=args.since, repo=args.repo,
                            machine=args.machine, as_json=args.json)
    if command == "review":
        from jobs.commands import review
        return review.main(review.ReviewOptions(
            config=args.config, out=args.out, format=args.format, since=args.since,
            until=args.until, repo=args.repo, task=args.task, verdict=args.verdict,
            machine=args.machine))
    if command == "serve":
        from jobs.commands import serve
        return serve.main(config_path=args.config)
    if command in ("install", "uninstall"):
        from jobs.commands import install
        return install.main(action=command, kind=args.kind,
                            config_path=args.config, print_only=args.print_only)
    from jobs.commands import doctor
    return doctor.main(config_path=args.config)

if __name__ == "__main__":
    raise SystemExit(main())
