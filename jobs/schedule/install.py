"""The macOS LaunchAgent and the Linux systemd user timer: generation, install, removal, status.

Both run `loop-verify run --config <file>` once a day at `schedule`. The files are generated from
the templates in `launchagents/`; generation is pure (paths and times in, text out) so tests can
check it exactly, and every command that touches the system (`launchctl`, `systemctl`) is run only
where it can work, otherwise printed for the user to run.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import time as time_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.config.load import Config
from jobs.core.errors import EXIT_FAILED, LoopError, UsageError
from jobs.core.fs import atomic_write
from jobs.schedule.units import (
    LABEL,
    PLIST_NAME,
    SERVICE_NAME,
    TIMER_NAME,
    Target,
    launchagent_plist,
    on_calendar,
    one_line,
    render_plist,
    systemd_units,
)

PROGRAM_NAME = "loop-verify"
# Where a Mac's Homebrew puts `just` and `git` (Apple Silicon, Intel), then the system's own.
STANDARD_PATH = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
# The variables that decide which configuration, state directory, log and "today" a run uses:
# the scheduled job gets the values the user's shell had at `install` (docs/scheduling.md).
CARRIED_ENV = ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "TZ")

Output = Callable[[str], None]


@dataclass(frozen=True)
class Check:
    """One line of `loop-verify doctor`: what was checked, whether it is fine, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None




# -- locating things ---------------------------------------------------------------------------




def launchagent_path(home: Path | None = None) -> Path:
    return (home or Path.home()) / "Library" / "LaunchAgents" / PLIST_NAME


def systemd_user_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def find_program() -> Path:
    """The installed `loop-verify` that launchd/systemd should start, as an absolute path.

    The running script when it is `loop-verify`, else the one beside this interpreter (a venv's
    bin), else the one on PATH. Symlinks are kept: a pipx link survives an upgrade, its target may
    not.
    """
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == PROGRAM_NAME and argv0.is_file():
        return Path(os.path.abspath(argv0))
    beside = Path(os.path.abspath(sys.executable)).parent / PROGRAM_NAME
    if beside.is_file():
        return beside
    found = shutil.which(PROGRAM_NAME)
    if found:
        return Path(os.path.abspath(found))
    raise LoopError(f"cannot find the installed `{PROGRAM_NAME}` program "
                    "(install loop-jobs, e.g. `pipx install .`, then retry)")


def agent_path_env(path: str | None = None) -> str:
    """An explicit PATH for the agent: the folders of the `just` and `git` found now, then the
    usual places. launchd and systemd start jobs with a bare PATH that finds neither."""
    dirs: list[str] = []
    for tool in ("just", "git"):
        found = shutil.which(tool, path=path)
        if found:
            dirs.append(str(Path(os.path.abspath(found)).parent))
    dirs.extend(STANDARD_PATH)
    return ":".join(dict.fromkeys(dirs))


def tools_not_on(path_env: str) -> list[str]:
    """Which of `just` and `git` a scheduled job started with this PATH would not find."""
    return [tool for tool in ("just", "git") if shutil.which(tool, path=path_env) is None]


def _warn_tools(target: Target) -> None:
    # Still installed: the user may add the tool later; doctor keeps failing until then.
    lost = tools_not_on(target.path_env)
    if lost:
        print(f"loop-verify: warning: the scheduled job's PATH ({target.path_env}) finds no "
              f"{' and no '.join(lost)}; install it there or every verification fails",
              file=sys.stderr)


def scheduled_environment(config_path: Path, env: Mapping[str, str]) -> dict[str, str]:
    """What the scheduled job must see to read the configuration and write the state that this
    shell does: the config file's absolute path, and each of CARRIED_ENV that is set here."""
    carried = {"LOOP_JOBS_CONFIG": str(config_path)}
    for name in CARRIED_ENV:
        value = env.get(name)
        if not value:
            continue
        one_line(value, f"${name}")
        # XDG paths must be absolute (the spec ignores others); TZ is a zone name.
        if name != "TZ" and not os.path.isabs(value):
            continue
        carried[name] = value
    return carried


def install_target(config: Config, *, program: Path | None = None,
                   home: Path | None = None, path_env: str | None = None,
                   env: Mapping[str, str] | None = None) -> Target:
    if config.source is None:
        raise UsageError("the scheduled job needs a configuration file: create "
                         "~/.config/loop-jobs/config.yaml or pass --config FILE")
    config_path = Path(os.path.abspath(config.source))
    return Target(
        program=Path(os.path.abspath(program or find_program())),
        config=config_path,
        log_dir=Path(os.path.abspath(config.log_file.parent)),
        working_dir=home or Path.home(),
        path_env=path_env if path_env is not None else agent_path_env(),
        env=scheduled_environment(config_path, os.environ if env is None else env),
    )
def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    # Fixed argument vectors of launchctl/systemctl, never a shell.
    return subprocess.run(list(argv), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)


def _show(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def is_macos() -> bool:
    return sys.platform == "darwin"


def user_manager_running(env: Mapping[str, str] | None = None) -> bool:
    """Whether a systemd user manager answers for this user: `systemctl --user` finds it through
    $XDG_RUNTIME_DIR, so without that directory there is nobody to talk to."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    if not runtime or not (Path(runtime) / "systemd").is_dir() or not shutil.which("systemctl"):
        return False
    try:
        state = _run(["systemctl", "--user", "is-system-running"]).stdout.strip()
    except OSError:
        return False
    return state in ("running", "degraded", "starting", "initializing")


# -- install / uninstall -----------------------------------------------------------------------


def launchd_domain(gui_session: bool, uid: int | None = None) -> str:
    """`gui/<uid>` while the user is logged in at the screen, else the background `user/<uid>`
    domain (an ssh-only or headless Mac has no GUI domain to bootstrap into)."""
    uid = os.getuid() if uid is None else uid
    return f"gui/{uid}" if gui_session else f"user/{uid}"


def _current_domain() -> str:
    if not is_macos():
        return launchd_domain(True)
    return launchd_domain(_run(["launchctl", "print", launchd_domain(True)]).returncode == 0)


def install_launchagent(config: Config, *, print_only: bool = False, out: Output = print,
                        target: Target | None = None) -> int:
    if not print_only and not is_macos():
        raise UsageError("install launchagent: this machine has no launchd, so a LaunchAgent "
                         "would never run; use `loop-verify install systemd` (or keep "
                         "`loop-verify serve` running), or --print to see the LaunchAgent")
    target = target or install_target(config)
    data = render_plist(launchagent_plist(config, target))
    _warn_tools(target)
    if print_only:
        out(data.decode("utf-8").rstrip("\n"))
        return 0
    path = launchagent_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # launchd does not create the folder of StandardOutPath, and the job fails without it.
    target.log_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, mode=0o644)
    out(f"wrote {path}")
    domain = _current_domain()
    bootout = ["launchctl", "bootout", f"{domain}/{LABEL}"]
    enable = ["launchctl", "enable", f"{domain}/{LABEL}"]
    bootstrap = ["launchctl", "bootstrap", domain, str(path)]
    _run(bootout)  # not loaded yet is fine
    # A `launchctl disable` left by the user would make bootstrap fail.
    _run(enable)
    for _ in range(5):
        done = _run(bootstrap)
        if done.returncode == 0:
            break
        # bootout returns before launchd has torn the old job down ("Bootstrap failed: 5").
        time_module.sleep(1.0)
    if done.returncode != 0:
        raise LoopError(f"{_show(bootstrap)} failed: {done.stderr.strip() or done.returncode}",
                        EXIT_FAILED)
    hour, minute = plistlib.loads(data)["StartCalendarInterval"].values()
    out(f"loaded {LABEL} into {domain}: runs daily at {hour:02d}:{minute:02d} "
        "(this Mac's local time)")
    return 0


def uninstall_launchagent(*, out: Output = print) -> int:
    path = launchagent_path()
    if is_macos():
        for domain in (launchd_domain(True), launchd_domain(False)):
            _run(["launchctl", "bootout", f"{domain}/{LABEL}"])  # not loaded is fine
    elif path.exists():
        out("not macOS: on a Mac this would first run:")
        out(f"  {_show(['launchctl', 'bootout', f'{launchd_domain(True)}/{LABEL}'])}")
    if not path.exists():
        out(f"no LaunchAgent installed at {path}")
        return 0
    path.unlink()
    out(f"removed {path}")
    return 0


def _systemctl(*args: str) -> list[str]:
    return ["systemctl", "--user", *args]


def install_systemd(config: Config, *, print_only: bool = False, out: Output = print,
                    target: Target | None = None, env: Mapping[str, str] | None = None) -> int:
    target = target or install_target(config)
    units = systemd_units(config, target)
    _warn_tools(target)
    directory = systemd_user_dir(env)
    if print_only:
        for name, text in units.items():
            out(f"# {directory / name}")
            out(text.rstrip("\n"))
        return 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        atomic_write(directory / name, text.encode("utf-8"), mode=0o644)
        out(f"wrote {directory / name}")
    commands = [_systemctl("daemon-reload"), _systemctl("enable", "--now", TIMER_NAME)]
    if not user_manager_running(env):
        out("no systemd user manager is running for this session; to enable the timer run:")
        for argv in commands:
            out(f"  {_show(argv)}")
        out("  loginctl enable-linger \"$USER\"   # only if it must run while you are logged out")
        return 0
    for argv in commands:
        done = _run(argv)
        if done.returncode != 0:
            raise LoopError(f"{_show(argv)} failed: {done.stderr.strip() or done.returncode}",
                            EXIT_FAILED)
    out(f"enabled {TIMER_NAME}: {on_calendar(config)}")
    return 0


def uninstall_systemd(*, out: Output = print, env: Mapping[str, str] | None = None) -> int:
    """Stop and disable the timer (and a run it started) before its files are removed: a unit
    removed first leaves the timer's `timers.target.wants` link behind, and a running manager
    with a timer it can no longer read."""
    directory = systemd_user_dir(env)
    paths = [directory / TIMER_NAME, directory / SERVICE_NAME]
    manager = user_manager_running(env)
    stop = _systemctl("stop", TIMER_NAME, SERVICE_NAME)
    disable = _systemctl("disable", TIMER_NAME)
    present = [p for p in paths if p.exists()]
    if manager:
        _run(stop)  # not running is fine
    if present and shutil.which("systemctl"):
        # Without a manager too: systemctl removes the enable link from the unit files alone.
        done = _run(disable)
        if done.returncode == 0:
            out(f"disabled {TIMER_NAME}")
    for path in present:
        path.unlink()
        out(f"removed {path}")
    if not present:
        out(f"no systemd units installed in {directory}")
    reload = _systemctl("daemon-reload")
    if manager:
        _run(reload)
    elif present:
        out("no systemd user manager is running for this session; if one runs the timer, run:")
        out(f"  {_show(stop)}")
        out(f"  {_show(reload)}")
    return 0
