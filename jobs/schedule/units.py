"""The LaunchAgent plist and the systemd service and timer as text: pure generation (paths and
times in, text out) from the templates in `launchagents/`, so tests can check it exactly.
Installing them is `jobs.schedule.install`."""

from __future__ import annotations

import plistlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any

from jobs.config.load import Config
from jobs.core.errors import LoopError

LABEL = "dev.loop-jobs.verify"
PLIST_NAME = f"{LABEL}.plist"
SERVICE_NAME = "loop-verify.service"
TIMER_NAME = "loop-verify.timer"
# launchd/systemd must wait longer than loop-verify's own SIGTERM → SIGKILL grace for the recipe.
STOP_MARGIN = 30
# Like Homebrew's service plists: the agent loads in whichever domain it is bootstrapped into,
# the GUI login (Aqua) or the user's background domain when nobody is logged in at the screen.
SESSION_TYPES = ["Aqua", "Background", "LoginWindow", "StandardIO", "System"]


@dataclass(frozen=True)
class Target:
    """Everything the generated files point at; all absolute."""

    program: Path
    config: Path
    log_dir: Path
    working_dir: Path
    path_env: str
    # Variables besides PATH the scheduled job is started with (LOOP_JOBS_CONFIG, XDG_*, ...).
    env: Mapping[str, str] = field(default_factory=dict)


def templates_dir() -> Path:
    """`launchagents/` beside the `jobs` package (the project root of a source or editable
    install)."""
    path = Path(__file__).resolve().parents[2] / "launchagents"
    if not (path / PLIST_NAME).is_file():
        raise LoopError(f"templates not found: {path} (reinstall loop-jobs from its source tree)")
    return path


# -- times -------------------------------------------------------------------------------------


def next_fire_time(hour: int, minute: int, zone: tzinfo, now: datetime) -> datetime:
    """The next moment strictly after `now` when the wall clock in `zone` reads hour:minute."""
    local_now = now.astimezone(zone)
    day = local_now.date()
    for _ in range(3):
        candidate = datetime.combine(day, time(hour, minute), tzinfo=zone)
        if candidate > now:
            return candidate
        day += timedelta(days=1)
    raise AssertionError("unreachable: a daily time always comes within two days")


def local_machine_zone() -> tzinfo:
    from jobs.config.load import local_zone
    from jobs.schedule.jobstore import machine_zone

    return machine_zone(local_zone())


def launchd_time(config: Config, *, now: datetime | None = None,
                 machine_zone: tzinfo | None = None) -> tuple[int, int]:
    """Hour and minute for StartCalendarInterval, which launchd reads in the Mac's local time.

    With `timezone:` configured the schedule means that zone's wall clock, so it is converted at
    the next occurrence; when the two zones change offset on different days, reinstall after the
    change (doctor warns when the installed time no longer matches).
    """
    if config.timezone_name is None:
        return config.schedule
    now = now or datetime.now(UTC)
    fire = next_fire_time(*config.schedule, config.timezone, now)
    local = fire.astimezone(machine_zone or local_machine_zone())
    return local.hour, local.minute


def on_calendar(config: Config) -> str:
    """systemd's OnCalendar: daily at `schedule`, in the configured zone (else the machine's)."""
    spec = f"*-*-* {config.schedule[0]:02d}:{config.schedule[1]:02d}:00"
    return f"{spec} {config.timezone_name}" if config.timezone_name else spec


# -- generation --------------------------------------------------------------------------------


def _fill(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _fill_text(value, values)
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


def _fill_text(text: str, values: Mapping[str, str]) -> str:
    # One pass over the template: a value is never scanned again, so a path holding the text of
    # a placeholder (a folder named `@HOME@`) is written as it is.
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group()), text)


def _unfilled(template: str, values: Mapping[str, str], what: str) -> None:
    """The template's own placeholders must all have a value (checked before filling, so the
    values themselves may hold anything that looks like one)."""
    left = {f"@{name}@" for name in _PLACEHOLDER.findall(template) if name not in values}
    if left:
        raise LoopError(f"template {what} has unknown placeholders: {', '.join(sorted(left))}")


def launchagent_plist(config: Config, target: Target, *, hour_minute: tuple[int, int] | None = None,
                      templates: Path | None = None) -> dict[str, Any]:
    """The LaunchAgent as a plist dictionary, from the template."""
    template = (templates or templates_dir()) / PLIST_NAME
    with open(template, "rb") as fh:
        plist: dict[str, Any] = plistlib.load(fh)
    values = {"PROGRAM": str(target.program), "CONFIG": str(target.config),
              "PATH": target.path_env, "HOME": str(target.working_dir),
              "LOG_DIR": str(target.log_dir)}
    for name, value in (*values.items(), *target.env.items()):
        one_line(value, name)
    _unfilled(repr(plist), values, str(template))
    plist = _fill(plist, values)
    hour, minute = hour_minute or launchd_time(config)
    plist["StartCalendarInterval"] = {"Hour": hour, "Minute": minute}
    plist["EnvironmentVariables"] = {**plist["EnvironmentVariables"], **target.env}
    return plist


def render_plist(plist: Mapping[str, Any]) -> bytes:
    return plistlib.dumps(dict(plist), fmt=plistlib.FMT_XML, sort_keys=False)


# systemd ends a unit file's line at CR and NUL as well as LF, so a value holding one would start
# a directive of its own (`ExecStartPre=...` from a $HOME with a CR in it); an XML parser reads a
# CR as LF, and plistlib refuses the other control characters. The doctor reads the units back
# with str.splitlines, which also breaks at NEL and the Unicode line and paragraph separators.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(value: str, what: str) -> str:
    """`value` unchanged when a unit or plist can hold it as written, else LoopError."""
    if _NOT_ONE_LINE.search(value):
        raise LoopError(f"cannot put {what} in the scheduled job's files: it holds a line break "
                        f"or another control character ({value!r})")
    return value


def systemd_quote(arg: str) -> str:
    """One ExecStart argument, double-quoted so spaces survive; `%` and `$` are escaped so
    systemd expands neither specifiers nor variables in it."""
    one_line(arg, "an argument")
    escaped = (arg.replace("\\", "\\\\").replace('"', '\\"')
               .replace("%", "%%").replace("$", "$$"))
    return f'"{escaped}"'


# systemd's string_is_safe(): an ExecStart program holding one of these is refused ("Executable
# name contains special characters") however it is quoted, and the unit is not loaded.
_UNSAFE_PROGRAM = re.compile("[\"'\\\\]")


def program_problem(program: str) -> str | None:
    """Why systemd would not start `program` from ExecStart, or None."""
    if _UNSAFE_PROGRAM.search(program):
        return (f"systemd refuses to start a program whose path holds a quote or a backslash "
                f"({program})")
    return None


def systemd_program(program: str) -> str:
    """ExecStart's program, quoted: specifiers are expanded in it (so `%` is doubled) but
    variables never are, so a `$` is written as it is."""
    one_line(program, "the program")
    problem = program_problem(program)
    if problem:
        raise LoopError(f"cannot install the systemd service: {problem}; install loop-verify "
                        "where its path has neither (or use `loop-verify serve`)")
    return '"' + program.replace("%", "%%") + '"'


def systemd_unquote(text: str) -> list[str]:
    """Split an ExecStart line written by `systemd_program` and `systemd_quote` back into the
    program and its arguments."""
    words = shlex.split(text)
    return [w.replace("%%", "%") if i == 0 else w.replace("%%", "%").replace("$$", "$")
            for i, w in enumerate(words)]


def _systemd_env(name: str, value: str) -> str:
    # Environment= takes quoted assignments and expands specifiers, not variables.
    one_line(value, f"${name}")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{name}={escaped}"'


def systemd_units(config: Config, target: Target, *,
                  templates: Path | None = None) -> dict[str, str]:
    """The user service and timer, file name → text, from the templates."""
    base = templates or templates_dir()
    exec_start = " ".join([systemd_program(str(target.program)),
                           *(systemd_quote(a) for a in
                             ("run", "--trigger", "systemd", "--config", str(target.config)))])
    values = {
        "WORKING_DIRECTORY": one_line(str(target.working_dir),
                                      "the working directory").replace("%", "%%"),
        "ENVIRONMENT": " ".join(_systemd_env(name, value) for name, value in
                                (("PATH", target.path_env), *sorted(target.env.items()))),
        "EXEC_START": exec_start,
        "STOP_TIMEOUT": f"{int(config.kill_grace) + STOP_MARGIN}s",
        "ON_CALENDAR": on_calendar(config),
    }
    units: dict[str, str] = {}
    for name in (SERVICE_NAME, TIMER_NAME):
        template = (base / name).read_text(encoding="utf-8")
        _unfilled(template, values, str(base / name))
        units[name] = _fill_text(template, values)
    return units


def unit_settings(text: str) -> dict[str, str]:
    """`Key=value` lines of a unit file (last one wins), ignoring sections and comments."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        settings[key.strip()] = value.strip()
    return settings


# -- running system commands -------------------------------------------------------------------
