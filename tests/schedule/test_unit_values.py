"""What the scheduled job is written from ($HOME, $XDG_STATE_HOME, the configuration's path, $TZ,
the PATH found at install) reaches launchd and systemd as it is: no directive injected, no
placeholder filled twice, the zone converted, and a PATH without `just` warned about."""

from __future__ import annotations

import json
import plistlib
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import system
from project import ROOT
from scheduler_helpers import config_file

from jobs.config.load import load_config
from jobs.core.errors import LoopError
from jobs.main import main
from jobs.schedule.install import (
    install_launchagent,
    install_systemd,
    install_target,
    launchagent_path,
)
from jobs.schedule.status import scheduler_checks
from jobs.schedule.units import launchagent_plist, render_plist, unit_settings

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


REPO_ROOT = ROOT


@pytest.mark.parametrize("variable", ["HOME", "XDG_STATE_HOME"])
def test_a_carriage_return_in_the_environment_cannot_add_a_directive_to_the_units(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str) -> None:
    # systemd ends a unit's line at CR as well as LF: a $HOME holding "\rExecStartPre=..." was
    # written into WorkingDirectory= and Environment=, and systemd read a second directive
    # that runs a program of the value's choosing before every scheduled run.
    evil = tmp_path / "dir\rExecStartPre=/nonexistent/injected"
    evil.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv(variable, str(evil))
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\n", encoding="utf-8")
    units = tmp_path / "xdg-config" / "systemd" / "user"

    for argv in (["install", "systemd", "--config", str(config)],
                 ["install", "systemd", "--config", str(config), "--print"],
                 ["install", "launchagent", "--config", str(config), "--print"]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "", argv
        lines = err.strip().splitlines()
        assert len(lines) == 1 and f"${variable}" in lines[0], lines
        assert "line break or another control character" in lines[0]
        assert not units.exists()

    # Quotes, backslashes, `$`, `%` and spaces are not line breaks: they are written so that
    # systemd reads them back as they are.
    odd = tmp_path / 'a "b" \\c $d 5% e'
    odd.mkdir()
    monkeypatch.setenv(variable, str(odd))
    assert main(["install", "systemd", "--config", str(config)]) == 0
    service = units / "loop-verify.service"
    settings = unit_settings(service.read_text(encoding="utf-8"))
    env = dict(w.replace("%%", "%").split("=", 1) for w in shlex.split(settings["Environment"]))
    assert env[variable] == str(odd)
    if SYSTEMD_ANALYZE is None:
        system.missing("systemd-analyze", system.install_command("systemd"))
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(service)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_paths_that_look_like_template_placeholders_are_written_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The templates were filled one placeholder after another, so a value holding the text of a
    # later one (a folder named `@ON_CALENDAR@`) was filled in again, and a value holding one the
    # templates do not know (`@X@`) failed the install as a broken template.
    _scheduling_home(tmp_path, monkeypatch, "home @STOP_TIMEOUT@")
    home = tmp_path / "home @STOP_TIMEOUT@"
    folder = tmp_path / "conf @ON_CALENDAR@ @X@"
    folder.mkdir()
    config = folder / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state @HOME@'}\n", encoding="utf-8")

    assert main(["install", "systemd", "--config", str(config)]) == 0, capsys.readouterr().err
    service = tmp_path / "xdg-config" / "systemd" / "user" / "loop-verify.service"
    settings = unit_settings(service.read_text(encoding="utf-8"))
    assert settings["WorkingDirectory"] == str(home)
    assert shlex.split(settings["ExecStart"])[-1] == str(config)
    capsys.readouterr()

    assert main(["install", "launchagent", "--config", str(config), "--print"]) == 0
    plist = plistlib.loads(capsys.readouterr().out.encode("utf-8"))
    assert plist["ProgramArguments"][-1] == str(config)
    assert plist["WorkingDirectory"] == str(home)
    assert plist["StandardOutPath"].startswith(str(tmp_path / "state @HOME@"))


def test_install_launchagent_converts_the_zone_under_a_posix_tz(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"schedule": "07:30", "timezone": "America/New_York",
                                  "state_dir": str(tmp_path / "state")}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "TZ": "UTC0"}
    done = subprocess.run([sys.executable, "-m", "jobs.main", "install", "launchagent",
                           "--print", "--config", str(config)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    plist = plistlib.loads(done.stdout.encode())
    # 07:30 in New York is 12:30 UTC in winter, 11:30 in summer.
    assert plist["StartCalendarInterval"] in ({"Hour": 12, "Minute": 30},
                                              {"Hour": 11, "Minute": 30})


def test_a_scheduled_path_without_just_is_warned_at_install_and_failed_by_doctor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-runtime"))
    (tmp_path / "log").mkdir()
    config = load_config(config_file(tmp_path, tmp_path / "state"))
    program = Path(sysconfig.get_path("scripts")) / "loop-verify"
    # A PATH with git (the system's) but no just: the agent would fail every recipe.
    git_dir = str(Path(str(shutil.which("git"))).parent)
    assert shutil.which("just", path=git_dir) is None
    target = install_target(config, program=program, path_env=git_dir)

    assert install_launchagent(config, target=target, print_only=True) == 0
    assert install_systemd(config, target=target) == 0
    err = capsys.readouterr().err
    assert err.count("finds no just;") == 2

    launchagent_path().parent.mkdir(parents=True)
    launchagent_path().write_bytes(render_plist(launchagent_plist(config, target)))
    checks = [c for c in scheduler_checks(config) if "writes" not in c.name]
    assert [c.name for c in checks] == ["scheduler: LaunchAgent", "scheduler: systemd timer"]
    for check in checks:
        assert not check.ok and "missing: just on its PATH" in check.detail, check

    # Installed with the PATH found now (which has just): both pass.
    good = install_target(config, program=program)
    launchagent_path().write_bytes(render_plist(launchagent_plist(config, good)))
    assert install_systemd(config, target=good) == 0
    assert "finds no" not in capsys.readouterr().err
    assert all(c.ok for c in scheduler_checks(config)), scheduler_checks(config)


def _program_in(folder: Path) -> Path:
    """The installed loop-verify, linked from `folder` (a venv or pipx home with an odd name)."""
    folder.mkdir(parents=True)
    link = folder / "loop-verify"
    link.symlink_to(Path(sysconfig.get_path("scripts")) / "loop-verify")
    return link


def _scheduling_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     home_name: str = "home") -> Path:
    home = tmp_path / home_name
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-runtime"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    (tmp_path / "log").mkdir()
    return tmp_path / "xdg-config" / "systemd" / "user"


def test_a_program_path_with_a_dollar_is_the_path_systemd_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # systemd substitutes variables in ExecStart's arguments, never in the program's path: a
    # `$` doubled there stayed doubled, so a loop-verify installed under `my $tools` was started
    # as `my $$tools/…` and every scheduled run failed — while doctor, which undoubled it, said ok.
    units = _scheduling_home(tmp_path, monkeypatch)
    program = _program_in(tmp_path / "my $tools 5%" / "bin")
    config = load_config(config_file(tmp_path, tmp_path / "state"))
    assert install_systemd(config, target=install_target(config, program=program)) == 0
    service = units / "loop-verify.service"
    if SYSTEMD_ANALYZE is None:
        system.missing("systemd-analyze", system.install_command("systemd"))
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(service)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    [timer_check] = [c for c in scheduler_checks(config) if c.name == "scheduler: systemd timer"]
    assert timer_check.ok, timer_check

    # A unit written with the `$` doubled starts a program that does not exist: doctor fails it.
    text = service.read_text(encoding="utf-8")
    service.write_text(text.replace("my $tools", "my $$tools"), encoding="utf-8")
    [timer_check] = [c for c in scheduler_checks(config) if c.name == "scheduler: systemd timer"]
    assert not timer_check.ok and "missing: program" in timer_check.detail, timer_check


@pytest.mark.parametrize("odd", ["Bob's tools", 'the "tools"', "back\\slash"])
def test_a_program_path_systemd_refuses_to_start_is_refused_at_install_and_by_doctor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        odd: str) -> None:
    # systemd refuses an ExecStart program whose path holds a quote or a backslash ("Executable
    # name contains special characters", the unit is not loaded), however it is quoted; install
    # wrote such a unit and doctor said ok, so the timer never ran.
    units = _scheduling_home(tmp_path, monkeypatch)
    program = _program_in(tmp_path / odd / "bin")
    config = load_config(config_file(tmp_path, tmp_path / "state"))
    target = install_target(config, program=program)
    for print_only in (False, True):
        with pytest.raises(LoopError) as caught:
            install_systemd(config, target=target, print_only=print_only)
        assert caught.value.exit_code == 2
        assert str(program) in str(caught.value) and "systemd" in str(caught.value)
        assert not units.exists()
    assert capsys.readouterr().out == ""

    # A unit already written so (by an earlier version) is failed by doctor.
    good = _program_in(tmp_path / "plain" / "bin")
    assert install_systemd(config, target=install_target(config, program=good)) == 0
    service = units / "loop-verify.service"
    text = service.read_text(encoding="utf-8")
    quoted = str(program).replace("\\", "\\\\").replace('"', '\\"')
    service.write_text(text.replace(str(good), quoted), encoding="utf-8")
    [timer_check] = [c for c in scheduler_checks(config) if c.name == "scheduler: systemd timer"]
    assert not timer_check.ok and "systemd" in timer_check.detail, timer_check
