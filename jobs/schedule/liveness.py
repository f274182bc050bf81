"""Whether the installed schedule will fire, and whether it has: `doctor` fails for a systemd timer
that is not enabled, a LaunchAgent that is not loaded (or installed on a machine without launchd),
and a schedule installed while this machine's ledger holds no finished run in the last 26 hours
("the morning job has not run since <time>")."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path

from jobs.config.load import Config
from jobs.ledger.model import Run
from jobs.ledger.runs import last_finished_run, read_runs
from jobs.ledger.spool import SPOOL_DIR, Spool
from jobs.ledger.store import Ledger, LedgerError
from jobs.schedule.install import (
    Check,
    _run,
    _systemctl,
    is_macos,
    launchagent_path,
    launchd_domain,
    systemd_user_dir,
)
from jobs.schedule.units import LABEL, SERVICE_NAME, TIMER_NAME

# A daily job, plus a margin for a machine that woke up late (Persistent=true, launchd's catch-up).
MISSED_AFTER = timedelta(hours=26)


def _fmt(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z").strip()


def installed_schedule(env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Each installed scheduled job's kind and the file that installs it."""
    found = []
    if launchagent_path().exists():
        found.append(("launchagent", launchagent_path()))
    timer = systemd_user_dir(env) / TIMER_NAME
    if timer.exists():
        found.append(("systemd", timer))
    return found


def timer_enabled_check(env: Mapping[str, str] | None = None) -> Check | None:
    """A failing Check when the installed timer is not enabled: it would never fire. systemctl
    answers from the unit files, with or without a running user manager."""
    timer = systemd_user_dir(env) / TIMER_NAME
    if not timer.exists() or shutil.which("systemctl") is None:
        return None
    done = _run(_systemctl("is-enabled", TIMER_NAME))
    state = done.stdout.strip() or done.stderr.strip() or f"exit {done.returncode}"
    if done.returncode == 0 and state in ("enabled", "enabled-runtime", "static", "linked"):
        return None
    return Check("scheduler: systemd timer", False,
                 f"{timer} is installed but not enabled ({state}): it never fires",
                 f"systemctl --user enable --now {TIMER_NAME}")


def launchagent_loaded_check(*, macos: bool | None = None) -> Check | None:
    """A failing Check when the installed LaunchAgent will not run: this machine has no launchd,
    or launchd has not loaded it."""
    path = launchagent_path()
    if not path.exists():
        return None
    name = "scheduler: LaunchAgent"
    if not (is_macos() if macos is None else macos):
        return Check(name, False, f"{path} is installed, but this machine has no launchd: it "
                     "never runs", "loop-verify uninstall launchagent; then "
                     "`loop-verify install systemd` (or keep `loop-verify serve` running)")
    for domain in (launchd_domain(True), launchd_domain(False)):
        if _run(["launchctl", "print", f"{domain}/{LABEL}"]).returncode == 0:
            return None
    return Check(name, False, f"{path} is installed but not loaded into launchd: it never runs",
                 "loop-verify install launchagent")


def _spooled_runs(config: Config) -> list[Run]:
    """This machine's runs kept in the spool while the ledger could not be reached."""
    found = []
    for _, kind, payload in Spool(config.state_dir / SPOOL_DIR).entries():
        if kind == "run":
            try:
                found.append(Run.from_json(payload))
            except (TypeError, ValueError):
                continue
    return [r for r in found if r.machine == config.machine]


def morning_check(config: Config, *, now: datetime | None = None,
                  env: Mapping[str, str] | None = None) -> Check | None:
    """A Check of the last finished run of this machine while a schedule is installed (None
    when none is, or when the ledger cannot be read: the ledger check says so)."""
    installed = installed_schedule(env)
    if not installed:
        return None
    now = now or datetime.now(UTC)
    try:
        ledger = Ledger(config.ledger, machine=config.machine)
    except LedgerError:
        return None
    try:
        recent = [r for r in read_runs(ledger, since=now - MISSED_AFTER, machine=config.machine)
                  if r.ended_at is not None]
        last = None if recent else last_finished_run(ledger, config.machine)
    except LedgerError:
        return None
    finally:
        ledger.close()
    spooled = [r for r in _spooled_runs(config) if r.ended_at is not None]
    ended = [r.ended_at for r in (*recent, *([last] if last else []), *spooled)
             if r.ended_at is not None]
    zone = config.timezone
    name = "scheduler: the morning job"
    if ended and now - max(ended) <= MISSED_AFTER:
        return Check(name, True, f"last finished run {_fmt(max(ended), zone)}")
    installed_at = min(datetime.fromtimestamp(os.stat(p).st_mtime, UTC) for _, p in installed)
    if now - installed_at <= MISSED_AFTER:
        # Installed within the day: its first morning may not have come yet.
        return Check(name, True, f"installed {_fmt(installed_at, zone)}; no run since")
    since = (f"since {_fmt(max(ended), zone)}" if ended
             else f"since the schedule was installed ({_fmt(installed_at, zone)})")
    kinds = " and ".join(kind for kind, _ in installed)
    return Check(name, False, f"the morning job has not run {since}",
                 f"check the {kinds} (the log in {config.log_file.parent}, "
                 f"`journalctl --user -u {SERVICE_NAME}` or launchd's log files); a machine "
                 "asleep or off at the scheduled time runs it when it wakes")


def firing_checks(config: Config, *, now: datetime | None = None,
                  env: Mapping[str, str] | None = None) -> list[Check]:
    """Will the installed schedule fire, and has it?"""
    return [c for c in (timer_enabled_check(env), launchagent_loaded_check(),
                        morning_check(config, now=now, env=env)) if c is not None]
