"""loop-pi-audit's command line: argparse wiring only; each verb lives in audit/commands/."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from jobs.core.cli import cli_entry
from jobs.core.errors import EXIT_USAGE, LoopError
from jobs.core.version import VersionAction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loop-pi-audit",
        description="Snapshot remotes when a run starts; judge every change at closeout.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def run_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument("--run-dir", metavar="DIR",
                       help="the run directory (else $LOOP_PI_RUN_DIR)")

    def ledger_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", metavar="FILE",
                       help="loop-verify's config (else $LOOP_JOBS_CONFIG, else the default "
                            "file), whose ledger seals and records the audit")

    begin = sub.add_parser("begin", help="take a fresh before-snapshot of REPO")
    begin.add_argument("repo", metavar="REPO", help="the clone whose remotes the run may touch")
    begin.add_argument("--charter", metavar="FILE",
                       help="the run's charter, frozen now (its sha256 is sealed)")
    run_dir(begin)
    ledger_config(begin)

    add = sub.add_parser("add", help="add REPO to the before-snapshot")
    add.add_argument("repo", metavar="REPO")
    run_dir(add)
    ledger_config(add)
    add.set_defaults(charter=None)

    rec = sub.add_parser("record-push", help="append one push to the run's push log")
    rec.add_argument("--repo", required=True, metavar="REPO", help="the clone pushed from")
    rec.add_argument("--ref", required=True, metavar="REF",
                     help="the remote ref, in full (refs/heads/main)")
    rec.add_argument("--old", required=True, metavar="SHA",
                     help="its value before the push (40 zeros for a new ref)")
    rec.add_argument("--new", required=True, metavar="SHA",
                     help="its value after the push (40 zeros for a deletion)")
    rec.add_argument("--remote", default="origin", metavar="NAME",
                     help="the remote pushed to (default: origin)")
    run_dir(rec)
    ledger_config(rec)

    hook = sub.add_parser("hook", help="install or remove the pre-push hook that logs pushes")
    hook.add_argument("action", choices=["install", "uninstall"])
    hook.add_argument("repo", metavar="REPO")
    run_dir(hook)
    ledger_config(hook)

    journal = sub.add_parser("journal", help="install or remove the journal of ref updates in "
                             "a bare repository")
    journal.add_argument("action", choices=["install", "uninstall"])
    journal.add_argument("bare", metavar="BARE")
    journal.set_defaults(run_dir=None)

    close = sub.add_parser("closeout", help="snapshot again and judge every change")
    close.add_argument("--charter", metavar="FILE", help="the charter given to `begin`")
    close.add_argument("--push-log", metavar="FILE",
                       help="the push log (default: the run directory's)")
    run_dir(close)
    close.add_argument("--expect-before", metavar="HEX",
                       help="the before-snapshot digest `begin` printed (its `armed` line)")
    close.add_argument("--json", action="store_true", help="print the JSON report")
    ledger_config(close)

    snap = sub.add_parser("snapshot", help="write a snapshot of REPO... to FILE")
    snap.add_argument("--out", required=True, metavar="FILE", help="write the snapshot here")
    snap.add_argument("repos", nargs="+", metavar="REPO")
    snap.set_defaults(run_dir=None)

    cmp = sub.add_parser("compare", help="judge the changes between two snapshots")
    cmp.add_argument("before", metavar="BEFORE")
    cmp.add_argument("after", metavar="AFTER")
    cmp.add_argument("--charter", metavar="FILE", help="grant what this charter grants")
    cmp.add_argument("--push-log", metavar="FILE", help="the push log (default: none)")
    cmp.add_argument("--json", action="store_true", help="print the JSON report")
    cmp.add_argument("--run-dir", metavar="DIR",
                     help="the run these snapshots belong to: record the audit in the ledger")
    ledger_config(cmp)

    rep = sub.add_parser("report", help="re-print the last report")
    run_dir(rep)
    ledger_config(rep)
    return parser


@cli_entry("loop-pi-audit")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except OSError as exc:
        # A run directory or output file that cannot be created or written: one line and
        # exit 2, never a traceback (whose exit 1 would read as "a violation was found").
        where = f"{exc.filename}: " if exc.filename else ""
        raise LoopError(f"{where}{exc.strerror or exc}", EXIT_USAGE) from None


def _dispatch(args: argparse.Namespace) -> int:
    command: str = args.command
    if command in ("begin", "add", "closeout", "snapshot"):
        # These read GitHub: PyGithub's and urllib3's own records go to our structured log.
        from audit.evidence.github_log import audit_log_file, set_log_target, unroute
        set_log_target(audit_log_file(args.run_dir))
        try:
            return _run(args)
        finally:
            unroute()
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    command: str = args.command
    if command in ("begin", "add"):
        from audit.commands import begin
        return begin.main(command=command, repo=args.repo, run_dir=args.run_dir,
                          charter=args.charter, config=args.config)
    if command == "record-push":
        from audit.commands import record_push
        return record_push.main(repo=args.repo, ref=args.ref, old=args.old, new=args.new,
                                remote=args.remote, run_dir=args.run_dir, config=args.config)
    if command == "hook":
        from audit.commands import hook
        return hook.main(action=args.action, repo=args.repo, run_dir=args.run_dir,
                         config=args.config)
    if command == "journal":
        from audit.commands import journal
        return journal.main(action=args.action, bare=args.bare)
    if command == "snapshot":
        from audit.commands import snapshot
        return snapshot.main(out=args.out, repos=args.repos)
    if command == "closeout":
        from audit.commands import closeout
        return closeout.closeout(run_dir=args.run_dir, charter=args.charter,
                                 push_log=args.push_log, as_json=args.json, config=args.config,
                                 expect_before=args.expect_before)
    if command == "compare":
        from audit.commands import closeout
        return closeout.compare(before_file=args.before, after_file=args.after,
                                charter=args.charter, push_log=args.push_log, as_json=args.json,
                                run_dir=args.run_dir, config=args.config)
    from audit.commands import report
    return report.main(run_dir=args.run_dir, config=args.config)

if __name__ == "__main__":
    raise SystemExit(main())
