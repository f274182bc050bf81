"""What `loop-verify doctor` says about the scheduler: the installed LaunchAgent or systemd timer
(when it next fires, whether its paths still exist, where it will write) and a running `serve`."""

from __future__ import annotations

import os
import plistlib
import pwd
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from jobs.config.load import Config, load_config
from jobs.core.errors import LoopError
from jobs.core.urls import redact_url
from jobs.schedule.install import (
    Check,
    _run,
    _systemctl,
    is_macos,
    launchagent_path,
    systemd_user_dir,
    tools_not_on,
    user_manager_running,
)
from jobs.schedule.units import (
    SERVICE_NAME,
    TIMER_NAME,
    launchd_time,
    local_machine_zone,
    next_fire_time,
    on_calendar,
    program_problem,
    systemd_unquote,
    unit_settings,
)


def _job_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment launchd or systemd gives the job: the account's HOME unless set."""
    job = {"HOME": pwd.getpwuid(os.getuid()).pw_dir}
    job.update(env)
    return job


def destination_check(kind: str, config: Config, config_arg: Path | None,
                      env: Mapping[str, str]) -> Check:
    """Where the scheduled job will write, and whether that is where this shell reads.

    The job's configuration is loaded with the job's own environment: an XDG_STATE_HOME exported
    in the shell but not in the unit would otherwise split the ledger in two.
    """
    name = f"scheduler: where the {kind} writes"
    fix = f"loop-verify install {kind}  (from this shell, so it carries these variables)"
    try:
        job = load_config(config_arg, env=_job_environment(env))
    except LoopError as exc:
        return Check(name, False, f"the scheduled job cannot read its configuration: {exc}", fix)
    ours = {"ledger": redact_url(config.ledger), "log": str(config.log_file),
            "state_dir": str(config.state_dir), "machine": config.machine}
    theirs = {"ledger": redact_url(job.ledger), "log": str(job.log_file),
              "state_dir": str(job.state_dir), "machine": job.machine}
    where = f"ledger {theirs['ledger']}, log {theirs['log']}"
    differ = [f"{key} {theirs[key]} (this shell: {ours[key]})"
              for key in ours if ours[key] != theirs[key]]
    if differ:
        return Check(name, False, "differs from this shell: " + "; ".join(differ), fix)
    return Check(name, True, where)


# -- status for `doctor` -----------------------------------------------------------------------


def _missing(paths: Mapping[str, Path | None]) -> list[str]:
    return [f"{what} {path}" if path else f"{what} (not set)"
            for what, path in paths.items() if path is None or not path.exists()]


def _interpreter_missing(program: Path | None) -> list[str]:
    """The interpreter of an existing `program` when its `#!` names an absolute path that is
    gone (a venv rebuilt, a Python upgraded away): the script is there but can never start.

    pip writes `#!PYTHON`, or for a PYTHON whose path has a space (the kernel splits `#!` at
    one) `#!/bin/sh` and then a line `'''exec' "PYTHON" "$0" "$@"`.
    """
    if program is None or not program.is_file():
        return []
    try:
        with open(program, "rb") as fh:
            first, second = fh.readline(4096), fh.readline(4096)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "surrogateescape").split()
    if words == ["/bin/sh"] and second.startswith(b"'''exec' "):
        try:
            words = shlex.split(second.decode("utf-8", "surrogateescape"))[1:]
        except ValueError:
            return []
    if not words or not os.path.isabs(words[0]) or os.path.exists(words[0]):
        return []
    return [f"the interpreter {words[0]} of program {program}"]


def _fmt(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()


def launchagent_check(config: Config, *, now: datetime | None = None) -> Check | None:
    """The installed LaunchAgent, or None when there is none."""
    path = launchagent_path()
    if not path.exists():
        return None
    name = "scheduler: LaunchAgent"
    try:
        with open(path, "rb") as fh:
            plist = plistlib.load(fh)
        args = [str(a) for a in plist["ProgramArguments"]]
        interval = plist["StartCalendarInterval"]
        hour, minute = int(interval["Hour"]), int(interval["Minute"])
    except Exception as exc:  # any damage to a hand-edited file is reported alike
        return Check(name, False, f"{path} cannot be read: {exc}",
                     "loop-verify install launchagent")
    now = now or datetime.now(UTC)
    zone = local_machine_zone()
    nxt = next_fire_time(hour, minute, zone, now)
    config_arg = Path(args[args.index("--config") + 1]) if "--config" in args[:-1] else None
    log_dir = Path(str(plist.get("StandardOutPath", ""))).parent \
        if plist.get("StandardOutPath") else None
    program = Path(args[0]) if args else None
    missing = _missing({"program": program, "config": config_arg, "log directory": log_dir})
    missing += _interpreter_missing(program)
    env = plist.get("EnvironmentVariables")
    path_env = env.get("PATH") if isinstance(env, dict) else None
    missing += [f"{tool} on its PATH" for tool in tools_not_on(
        path_env if isinstance(path_env, str) else "")]
    detail = f"{path}: next run {_fmt(nxt)}"
    if missing:
        return Check(name, False, f"{detail}; missing: {', '.join(missing)}",
                     "loop-verify install launchagent")
    if (hour, minute) != launchd_time(config, now=now, machine_zone=zone):
        return Check(name, False, f"{detail}, but the configuration says {config.schedule_text}",
                     "loop-verify install launchagent")
    return Check(name, True, detail)


def _timer_state(env: Mapping[str, str] | None) -> tuple[str, datetime | None] | None:
    """The timer's ActiveState and next elapse as systemd reports them; None without a user
    manager to ask."""
    if not user_manager_running(env):
        return None
    query = _systemctl("show", TIMER_NAME, "-p", "ActiveState", "-p", "NextElapseUSecRealtime")
    done = _run([*query, "--timestamp=unix"])
    if done.returncode != 0:  # systemd < 251 has no --timestamp=unix
        done = _run(query)
    props = dict(line.partition("=")[::2] for line in done.stdout.splitlines())
    try:
        nxt: datetime | None = datetime.fromtimestamp(
            float(props.get("NextElapseUSecRealtime", "").lstrip("@")), UTC)
    except ValueError:
        nxt = None
    return props.get("ActiveState", "unknown"), nxt


def _unit_env(settings: Mapping[str, str]) -> dict[str, str]:
    """The variables an `Environment="NAME=…" …` line written by `_systemd_env` sets."""
    try:
        words = shlex.split(settings.get("Environment", ""))
    except ValueError:
        return {}
    found: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if sep:
            found[key] = value.replace("%%", "%")
    return found


def _unit_path_env(settings: Mapping[str, str]) -> str:
    """The PATH the service gets."""
    return _unit_env(settings).get("PATH", "")


def _config_arg(args: list[str]) -> Path | None:
    return Path(args[args.index("--config") + 1]) if "--config" in args[:-1] else None


def installed_jobs(env: Mapping[str, str] | None = None) -> list[tuple[str, Path | None,
                                                                       dict[str, str]]]:
    """Each installed scheduled job as (kind, its --config, its environment besides PATH)."""
    jobs: list[tuple[str, Path | None, dict[str, str]]] = []
    plist_path = launchagent_path()
    if plist_path.exists():
        try:
            with open(plist_path, "rb") as fh:
                plist = plistlib.load(fh)
            args = [str(a) for a in plist["ProgramArguments"]]
            variables = plist.get("EnvironmentVariables") or {}
            jobs.append(("launchagent", _config_arg(args),
                         {str(k): str(v) for k, v in variables.items() if k != "PATH"}))
        except Exception:  # reported by launchagent_check
            pass
    service = systemd_user_dir(env) / SERVICE_NAME
    if service.exists():
        try:
            settings = unit_settings(service.read_text(encoding="utf-8"))
            args = systemd_unquote(settings.get("ExecStart", ""))
            variables = {k: v for k, v in _unit_env(settings).items() if k != "PATH"}
            jobs.append(("systemd", _config_arg(args), variables))
        except (OSError, UnicodeDecodeError, ValueError):
            pass  # reported by systemd_check
    return jobs


def systemd_check(config: Config, *, now: datetime | None = None,
                  env: Mapping[str, str] | None = None) -> Check | None:
    """The installed systemd timer, or None when there is none."""
    directory = systemd_user_dir(env)
    service, timer = directory / SERVICE_NAME, directory / TIMER_NAME
    if not service.exists() and not timer.exists():
        return None
    name = "scheduler: systemd timer"
    fix = "loop-verify install systemd"
    if not service.exists() or not timer.exists():
        lost = service if not service.exists() else timer
        return Check(name, False, f"{lost} is missing", fix)
    try:
        svc = unit_settings(service.read_text(encoding="utf-8"))
        tmr = unit_settings(timer.read_text(encoding="utf-8"))
        args = systemd_unquote(svc.get("ExecStart", ""))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Check(name, False, f"{directory}: cannot read the units: {exc}", fix)
    now = now or datetime.now(UTC)
    state = _timer_state(env)
    if state is not None and state[0] != "active":
        return Check(name, False, f"{timer} is installed but {state[0]}",
                     f"systemctl --user enable --now {TIMER_NAME}")
    reported = state[1] if state is not None else None
    if reported is None:
        nxt = next_fire_time(*config.schedule, config.timezone, now)
        when = f"next run {_fmt(nxt.astimezone(config.timezone))}"
        if state is None:
            when += " (if the timer is enabled; no systemd user manager to ask)"
    else:
        when = f"next run {_fmt(reported.astimezone(config.timezone))}"
    config_arg = Path(args[args.index("--config") + 1]) if "--config" in args[:-1] else None
    program = Path(args[0]) if args else None
    missing = _missing({"program": program, "config": config_arg,
                        "log directory": config.log_file.parent})
    missing += _interpreter_missing(program)
    missing += [f"{tool} on its PATH" for tool in tools_not_on(_unit_path_env(svc))]
    detail = f"{timer}: {when}"
    if missing:
        return Check(name, False, f"{detail}; missing: {', '.join(missing)}", fix)
    problem = program_problem(args[0]) if args else None
    if problem:
        return Check(name, False, f"{detail}, but {problem}: the service never starts",
                     "install loop-verify where its path has no quote or backslash; then " + fix)
    if tmr.get("OnCalendar") != on_calendar(config):
        return Check(name, False, f"{detail}, but OnCalendar={tmr.get('OnCalendar')} does not "
                     f"match the configuration ({on_calendar(config)})", fix)
    return Check(name, True, detail)


def serve_check(config: Config) -> Check | None:
    """A running `loop-verify serve` on this state directory, or None when there is none."""
    from jobs.core.fs import LockBusy, exclusive_lock
    from jobs.schedule.jobstore import stored_next_run
    from jobs.schedule.serve import SERVE_LOCK

    lock = config.state_dir / SERVE_LOCK
    if not lock.exists():
        return None
    try:
        pid = lock.read_text(encoding="utf-8").strip()
    except OSError:
        pid = ""
    try:
        with exclusive_lock(lock):
            return None
    except LockBusy:
        pass
    nxt = stored_next_run(config.state_dir)
    when = f"next run {_fmt(nxt.astimezone(config.timezone))}" if nxt else "no run scheduled"
    return Check("scheduler: loop-verify serve", True, f"running (pid {pid or '?'}): {when}")


def scheduler_checks(config: Config, *, now: datetime | None = None,
                     env: Mapping[str, str] | None = None) -> list[Check]:
    """What runs the morning verification, when it next fires and whether its paths still exist.

    Nothing installed and no `serve` running is a failing check: nothing would run tomorrow.
    """
    checks = [c for c in (launchagent_check(config, now=now),
                          systemd_check(config, now=now, env=env),
                          serve_check(config)) if c is not None]
    checks += [destination_check(kind, config, config_arg, job_env)
               for kind, config_arg, job_env in installed_jobs(env)]
    if checks:
        return checks
    kind = "launchagent" if is_macos() else "systemd"
    return [Check("scheduler", False,
                  "no LaunchAgent, systemd timer or running `loop-verify serve`: nothing runs the "
                  "verification every morning",
                  f"loop-verify install {kind}  (or keep `loop-verify serve` running)")]
