"""The LaunchAgent plist and the systemd units: generated exactly, accepted by systemd, reported
by doctor's scheduler checks."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import sysconfig
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import inprocess
import pytest
import system
from project import ROOT
from scheduler_helpers import config_file, write_config

from jobs.config.load import Config
from jobs.main import main
from jobs.schedule.install import (
    Check,
    install_launchagent,
    install_systemd,
    install_target,
    launchagent_path,
    systemd_user_dir,
)
from jobs.schedule.serve import serve_lock
from jobs.schedule.status import scheduler_checks
from jobs.schedule.units import (
    LABEL,
    Target,
    launchagent_plist,
    launchd_time,
    next_fire_time,
    on_calendar,
    render_plist,
    systemd_unquote,
    unit_settings,
)

PLIST_KEYS = {"Label", "ProgramArguments", "StartCalendarInterval", "EnvironmentVariables",
              "WorkingDirectory", "StandardOutPath", "StandardErrorPath", "ProcessType",
              "LowPriorityIO", "LimitLoadToSessionType"}
REPO_ROOT = ROOT
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """The installed loop-verify, reached through a folder whose name has spaces and a `%`."""
    folder = tmp_path / "my tools 100%" / "bin"
    folder.mkdir(parents=True)
    link = folder / "loop-verify"
    link.symlink_to(Path(sysconfig.get_path("scripts")) / "loop-verify")
    return link


def analyze(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run([SYSTEMD_ANALYZE, *args], capture_output=True,
                          text=True, check=False, env=env)


def make_config(tmp_path: Path, schedule: str, timezone: str | None) -> Config:
    keys: dict[str, str] = {"schedule": schedule,
                            "log_file": str(tmp_path / "log dir" / "loop-jobs.jsonl")}
    if timezone:
        keys["timezone"] = timezone
    return write_config(tmp_path / "conf $dir with spaces", **keys)


@pytest.mark.parametrize(("schedule", "timezone"), [
    ("07:30", None), ("00:00", None), ("23:59", None), ("6:05", None)])
def test_plist_has_exactly_the_keys_with_the_right_values(
        home: Path, tmp_path: Path, program: Path, schedule: str, timezone: str | None) -> None:
    config = make_config(tmp_path, schedule, timezone)
    target = install_target(config, program=program)
    plist = plistlib.loads(render_plist(launchagent_plist(config, target)))
    assert set(plist) == PLIST_KEYS
    assert plist["Label"] == LABEL
    assert config.source is not None
    assert plist["ProgramArguments"] == [str(program), "run", "--trigger", "launchd", "--config",
                                         str(config.source.absolute())]
    hour, minute = (int(x) for x in schedule.split(":"))
    assert plist["StartCalendarInterval"] == {"Hour": hour, "Minute": minute}
    path_dirs = plist["EnvironmentVariables"]["PATH"].split(":")
    assert config.source is not None
    assert plist["EnvironmentVariables"]["LOOP_JOBS_CONFIG"] == str(config.source.absolute())
    for tool in ("just", "git"):
        found = shutil.which(tool)
        assert found is not None
        assert str(Path(found).parent) in path_dirs
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/opt/homebrew/bin", "/usr/local/bin"):
        assert d in path_dirs
    assert len(path_dirs) == len(set(path_dirs))
    assert plist["WorkingDirectory"] == str(home)
    assert plist["StandardOutPath"] == str(config.log_file.parent / "launchd.out.log")
    assert plist["StandardErrorPath"] == str(config.log_file.parent / "launchd.err.log")
    assert " " in plist["StandardOutPath"]
    # Recipes are judged against a wall-clock timeout: launchd must not throttle them.
    assert plist["ProcessType"] == "Interactive"
    assert plist["LowPriorityIO"] is False
    assert plist["LimitLoadToSessionType"] == ["Aqua", "Background", "LoginWindow",
                                               "StandardIO", "System"]


def test_launchd_time_converts_the_configured_zone_to_the_machine_zone(tmp_path: Path) -> None:
    config = make_config(tmp_path, "07:30", "America/New_York")
    now = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    # 07:30 EST is 12:30 UTC, 13:30 in Berlin (CET) that day.
    assert launchd_time(config, now=now, machine_zone=ZoneInfo("Europe/Berlin")) == (13, 30)
    assert launchd_time(config, now=now, machine_zone=ZoneInfo("America/New_York")) == (7, 30)
    # In July New York is on EDT: 07:30 is 11:30 UTC.
    july = datetime(2026, 7, 1, 2, 0, tzinfo=UTC)
    assert launchd_time(config, now=july, machine_zone=ZoneInfo("Etc/UTC")) == (11, 30)


def test_print_writes_nothing_and_matches_the_installed_plist(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, "08:15", None)
    assert main(["install", "launchagent", "--config", str(config.source), "--print"]) == 0
    printed = capsys.readouterr().out
    assert main(["install", "systemd", "--config", str(config.source), "--print"]) == 0
    units_printed = capsys.readouterr().out
    assert not launchagent_path().exists()
    assert not systemd_user_dir().exists()
    assert not config.log_file.parent.exists()
    plist = plistlib.loads(printed.encode())
    assert plist["StartCalendarInterval"] == {"Hour": 8, "Minute": 15}
    # The program found is an installed loop-verify, named by its absolute path.
    program = Path(plist["ProgramArguments"][0])
    assert program.is_absolute() and program.name == "loop-verify" and program.is_file()
    assert "OnCalendar=*-*-* 08:15:00\n" in units_printed
    assert "Persistent=true" in units_printed

    if sys.platform == "darwin":
        pytest.skip("would load the agent into this Mac's launchd")
    # No launchd here: a LaunchAgent would never run, so only --print is done.
    assert main(["install", "launchagent", "--config", str(config.source)]) == 2
    err = capsys.readouterr().err
    assert "this machine has no launchd" in err and "--print" in err
    path = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    assert not path.exists() and not config.log_file.parent.exists()
    assert main(["uninstall", "launchagent"]) == 0
    assert "no LaunchAgent installed" in capsys.readouterr().out


def test_install_without_a_config_file_is_a_usage_error(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv("LOOP_JOBS_CONFIG", raising=False)
    assert main(["install", "systemd"]) == 2
    assert "needs a configuration file" in capsys.readouterr().err
    assert not systemd_user_dir().exists()


def _install_units(config: Config, program: Path, home: Path) -> Path:
    target = install_target(config, program=program)
    lines: list[str] = []
    assert install_systemd(config, target=target, out=lines.append) == 0
    # No user manager here: the units are written and the commands to enable them are printed.
    assert "  systemctl --user enable --now loop-verify.timer" in lines
    return systemd_user_dir()


def test_systemd_units_pass_systemd_analyze_verify(home: Path, tmp_path: Path,
                                                   program: Path) -> None:
    if SYSTEMD_ANALYZE is None:
        system.missing("systemd-analyze", system.install_command("systemd"))
    config = make_config(tmp_path, "07:30", "Europe/London")
    directory = _install_units(config, program, home)
    service, timer = directory / "loop-verify.service", directory / "loop-verify.timer"
    assert SYSTEMD_ANALYZE is not None
    done = analyze("verify", str(service), str(timer))
    assert done.returncode == 0, done.stderr
    assert "loop-verify" not in done.stderr, done.stderr
    svc = unit_settings(service.read_text())
    assert svc["Type"] == "oneshot"
    assert config.source is not None
    assert systemd_unquote(svc["ExecStart"]) == [str(program), "run", "--trigger", "systemd",
                                                 "--config", str(config.source.absolute())]
    assert svc["WorkingDirectory"] == str(home)
    tmr = unit_settings(timer.read_text())
    assert tmr["OnCalendar"] == "*-*-* 07:30:00 Europe/London"
    assert tmr["Persistent"] == "true"
    assert tmr["Unit"] == "loop-verify.service"
    assert tmr["WantedBy"] == "timers.target"

    # The same check fails when the program is gone: verify really looks at ExecStart's path.
    program.unlink()
    done = analyze("verify", str(service))
    assert done.returncode != 0 and "is not executable" in done.stderr

    lines: list[str] = []
    from jobs.schedule.install import uninstall_systemd
    assert uninstall_systemd(out=lines.append) == 0
    assert not service.exists() and not timer.exists()


_ELAPSE = re.compile(r"(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC")


@pytest.mark.parametrize(("schedule", "timezone"), [
    ("07:30", "Europe/London"), ("23:59", "America/New_York"), ("00:05", "Asia/Kolkata"),
    ("12:00", "Australia/Sydney"), ("06:45", None)])
def test_systemd_calendar_agrees_with_the_schedule(tmp_path: Path, schedule: str,
                                                   timezone: str | None) -> None:
    if SYSTEMD_ANALYZE is None:
        system.missing("systemd-analyze", system.install_command("systemd"))
    config = make_config(tmp_path, schedule, timezone)
    spec = on_calendar(config)
    assert SYSTEMD_ANALYZE is not None
    now = datetime.now(UTC)
    # TZ=UTC makes systemd print UTC times; a spec without a zone then means UTC too.
    zone = config.timezone if timezone else ZoneInfo("Etc/UTC")
    done = analyze("calendar", "--iterations=3", spec, env={**os.environ, "TZ": "UTC"})
    assert done.returncode == 0, done.stderr
    elapses = [datetime.fromisoformat(m + "+00:00") for m in _ELAPSE.findall(done.stdout)]
    first = next_fire_time(*config.schedule, zone, now)
    expected = [first]
    for _ in range(2):
        expected.append(next_fire_time(*config.schedule, zone, expected[-1]))
    assert elapses == expected, done.stdout
    assert expected[1] - expected[0] <= timedelta(hours=25)


def installed_check(config: Config, now: datetime | None = None) -> list[Check]:
    """The checks of the installed job itself (not where it writes)."""
    return [c for c in scheduler_checks(config, now=now) if "writes" not in c.name]


def test_scheduler_checks_report_nothing_installed(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path, "07:30", None)
    [check] = scheduler_checks(config)
    assert not check.ok
    assert check.fix is not None and "loop-verify install" in check.fix


def test_scheduler_checks_report_the_systemd_timer(home: Path, tmp_path: Path,
                                                   program: Path) -> None:
    config = make_config(tmp_path, "07:30", "Europe/London")
    _install_units(config, program, home)
    config.log_file.parent.mkdir(parents=True, exist_ok=True)
    now = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    [check] = installed_check(config, now=now)
    assert check.ok, check
    assert "next run 2026-11-30 07:30 GMT" in check.detail

    changed = make_config(tmp_path, "09:00", "Europe/London")
    [check] = installed_check(changed, now=now)
    assert not check.ok and "does not match" in check.detail
    assert check.fix == "loop-verify install systemd"

    program.unlink()
    [check] = installed_check(config, now=now)
    assert not check.ok and f"missing: program {program}" in check.detail


def test_scheduler_checks_report_the_launchagent(home: Path, tmp_path: Path,
                                                 program: Path) -> None:
    config = make_config(tmp_path, "06:10", None)
    target = install_target(config, program=program)
    path = launchagent_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(render_plist(launchagent_plist(config, target)))
    config.log_file.parent.mkdir(parents=True, exist_ok=True)
    now = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
    [check] = installed_check(config, now=now)
    assert check.ok, check
    assert str(path) in check.detail and "next run 2026-12-01 06:10" in check.detail

    assert config.source is not None
    config.source.rename(config.source.with_suffix(".moved"))
    [check] = installed_check(config, now=now)
    assert not check.ok and "missing: config" in check.detail
    assert check.fix == "loop-verify install launchagent"

    path.write_bytes(b"not a plist")
    [check] = installed_check(config, now=now)
    assert not check.ok and "cannot be read" in check.detail


@pytest.mark.parametrize("venv_name", ["old-venv", "old venv"])
def test_scheduler_checks_fail_a_program_whose_python_is_gone(home: Path, tmp_path: Path,
                                                               venv_name: str) -> None:
    # A venv rebuilt or a Python upgraded away (`brew upgrade`, a removed pyenv version) leaves
    # the `loop-verify` script in place, its `#!` naming an interpreter that no longer exists:
    # every scheduled run fails "bad interpreter", and doctor said ok because the script exists.
    venv = tmp_path / venv_name / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.symlink_to(sys.executable)
    program = venv / "loop-verify"
    # What pip writes: the kernel splits `#!` at a space, so such a path goes through /bin/sh.
    launcher = (f"#!{python}\n" if " " not in str(python)
                else f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\n")
    program.write_text(f"{launcher}import sys\nfrom jobs.main import entry\n"
                       "sys.exit(entry())\n", encoding="utf-8")
    program.chmod(0o755)
    config = make_config(tmp_path, "07:30", None)
    config.log_file.parent.mkdir(parents=True, exist_ok=True)
    _install_units(config, program, home)
    path = launchagent_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(render_plist(launchagent_plist(config, install_target(config,
                                                                          program=program))))
    now = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    checks = installed_check(config, now=now)
    assert [c.name for c in checks] == ["scheduler: LaunchAgent", "scheduler: systemd timer"]
    assert all(c.ok for c in checks), checks

    python.unlink()
    for check in installed_check(config, now=now):
        assert not check.ok, check
        assert f"missing: the interpreter {python} of program {program}" in check.detail, check


def test_scheduler_checks_report_a_running_serve(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path, "07:30", None)
    with serve_lock(config.state_dir):
        [check] = scheduler_checks(config)
    assert check.ok and check.name == "scheduler: loop-verify serve"
    assert f"pid {os.getpid()}" in check.detail
    # Once it has stopped, nothing runs the job any more.
    [check] = scheduler_checks(config)
    assert not check.ok


def test_target_paths_are_absolute(home: Path, tmp_path: Path, program: Path) -> None:
    config = make_config(tmp_path, "07:30", None)
    config_path = Path(os.path.abspath(str(config.source)))
    target = install_target(config, program=program, path_env="/usr/bin", env={})
    assert target == Target(program=program, config=config_path,
                            log_dir=config.log_file.parent, working_dir=home, path_env="/usr/bin",
                            env={"LOOP_JOBS_CONFIG": str(config_path)})
    lines: list[str] = []
    assert install_launchagent(config, print_only=True, target=target, out=lines.append) == 0
    assert plistlib.loads("\n".join(lines).encode())["EnvironmentVariables"] == {
        "PATH": "/usr/bin", "LOOP_JOBS_CONFIG": str(config_path)}


TOOLS_PATH = ":".join(dict.fromkeys(
    [str(Path(str(shutil.which(t))).parent) for t in ("just", "git")] + ["/usr/bin", "/bin"]))


def loop_verify(home: Path, *args: str, xdg: Path | None = None
                ) -> subprocess.CompletedProcess[str]:
    # A PATH that finds just and git, so install warns about nothing.
    env = {"PATH": TOOLS_PATH, "HOME": str(home), "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(home / "no-runtime")}
    if xdg is not None:
        env["XDG_CONFIG_HOME"] = str(xdg)
    if not inprocess.FORCE_SUBPROCESS:
        # In this process, with that environment only (tests/inprocess.py).
        return inprocess.loop_verify(args, cwd=REPO_ROOT, env=env)
    return subprocess.run([sys.executable, "-m", "jobs.main", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=30, check=False)


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0]


def test_install_where_a_folder_cannot_be_made_is_one_line_exit_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("in the way\n")
    config = config_file(tmp_path, tmp_path / "state")
    if sys.platform != "darwin":
        # No launchd here: refused before any folder is made (SPEC: unless --print).
        done = loop_verify(blocker, "install", "launchagent", "--config", str(config))
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "launchd" in done.stderr and "Traceback" not in done.stderr
    # Where launchd is, the folders are made, and fail: shown as on a Mac, so in this process
    # (the folders fail before launchctl would run).
    monkeypatch.setattr(inprocess, "FORCE_SUBPROCESS", False)
    monkeypatch.setattr("jobs.schedule.install.is_macos", lambda: True)
    # HOME is a file: ~/Library/LaunchAgents cannot be made.
    done = loop_verify(blocker, "install", "launchagent", "--config", str(config))
    assert_one_line_failure(done, "install launchagent", str(blocker))
    # XDG_CONFIG_HOME is a file: systemd/user cannot be made.
    done = loop_verify(tmp_path, "install", "systemd", "--config", str(config), xdg=blocker)
    assert_one_line_failure(done, "install systemd", str(blocker))
    # The log directory (for StandardOutPath) cannot be made: nothing is written.
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"),
                                  "log_file": str(blocker / "loop-jobs.jsonl")}))
    done = loop_verify(tmp_path, "install", "launchagent", "--config", str(config))
    assert_one_line_failure(done, "install launchagent", str(blocker))
    assert not (tmp_path / "Library" / "LaunchAgents" / "dev.loop-jobs.verify.plist").exists()


def test_uninstall_that_cannot_remove_is_one_line_exit_1(tmp_path: Path) -> None:
    in_the_way = tmp_path / "Library" / "LaunchAgents" / "dev.loop-jobs.verify.plist"
    in_the_way.mkdir(parents=True)
    done = loop_verify(tmp_path, "uninstall", "launchagent")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    # (Linux says "Is a directory", macOS "Operation not permitted".)
    [line] = done.stderr.splitlines()
    assert line.startswith("loop-verify: uninstall launchagent: ")
    assert line.endswith(f": {in_the_way}")
