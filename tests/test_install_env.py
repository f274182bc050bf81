"""The environment things run in. The suite's own: it tests this checkout with the commands of the
environment running it. The scheduled job's: the units carry the config path and the XDG/state
variables in force at `install`, and doctor fails when the job would write elsewhere."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import system
from project import ROOT

import audit
import jobs
from jobs.config.load import load_config
from jobs.schedule.install import (
    install_systemd,
    install_target,
    launchagent_path,
    launchd_domain,
    systemd_user_dir,
)
from jobs.schedule.status import scheduler_checks
from jobs.schedule.units import launchagent_plist, render_plist, unit_settings

# The command a user would install the units for: this environment's own.
PROGRAM = Path(sys.executable).parent / "loop-verify"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def test_the_suite_tests_this_checkout_with_the_commands_of_its_own_environment(
        tmp_path: Path) -> None:
    """The tests import jobs/ and audit/ from the checkout they stand in, start loop-verify,
    loop-pi-audit and just from beside the interpreter running them (the environment `make
    setup` installed this checkout into), and the Backlog.md CLI from this checkout's npm
    prefix. Run from an environment installed from another checkout, the suite would test that
    checkout's code, or start its commands: it fails here instead."""
    env_bin = Path(sys.executable).parent
    for package in (jobs, audit):
        assert package.__file__ is not None
        assert Path(package.__file__).resolve().parent.parent == ROOT, (
            f"{package.__name__} is imported from {package.__file__}, not from {ROOT}: "
            f"{sys.executable} was installed from another checkout")
    for name in ("loop-verify", "loop-pi-audit", "just"):
        found = shutil.which(name)
        assert found is not None and Path(found).parent == env_bin, (name, found, env_bin)
    for name in ("loop-verify", "loop-pi-audit"):
        first = (env_bin / name).read_text(encoding="utf-8").splitlines()[0]
        assert Path(first.removeprefix("#!")).resolve() == Path(sys.executable).resolve(), first
    backlog = shutil.which("backlog")
    assert backlog is not None and Path(backlog).is_relative_to(ROOT / ".npm-prefix"), backlog
    # A process of that interpreter, started anywhere, imports this checkout's code too.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import jobs; print(jobs.__file__)"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()).resolve().parent.parent == ROOT, done.stdout


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "LOOP_JOBS_CONFIG", "TZ"):
        monkeypatch.delenv(name, raising=False)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return home


def default_config(tmp_path: Path) -> Path:
    """A config that names no state_dir, log_file or ledger: all follow $XDG_STATE_HOME."""
    path = tmp_path / "conf" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("schedule: '07:30'\ntimezone: Europe/London\n", encoding="utf-8")
    return path


def unit_env(service: Path) -> dict[str, str]:
    words = shlex.split(unit_settings(service.read_text(encoding="utf-8"))["Environment"])
    return dict(w.replace("%%", "%").split("=", 1) for w in words)


def test_units_carry_the_config_path_and_the_xdg_variables(home: Path, tmp_path: Path) -> None:
    path = default_config(tmp_path)
    shell = {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state 100%"),
             "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "TZ": "Europe/Paris",
             "PATH": "/ignored", "UNRELATED": "x"}
    config = load_config(path, env=shell)
    program = PROGRAM
    target = install_target(config, program=program, env=shell)
    expected = {"LOOP_JOBS_CONFIG": str(path), "HOME": str(home),
                "XDG_STATE_HOME": str(tmp_path / "state 100%"),
                "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "TZ": "Europe/Paris"}

    plist = plistlib.loads(render_plist(launchagent_plist(config, target)))
    assert plist["EnvironmentVariables"] == {"PATH": target.path_env, **expected}

    assert install_systemd(config, target=target, out=lambda _line: None) == 0
    service = systemd_user_dir() / "loop-verify.service"
    assert unit_env(service) == {"PATH": target.path_env, **expected}
    if SYSTEMD_ANALYZE is None:
        system.missing("systemd-analyze", system.install_command("systemd"))
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(service),
                           str(systemd_user_dir() / "loop-verify.timer")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_relative_xdg_value_is_not_carried(home: Path, tmp_path: Path) -> None:
    config = load_config(default_config(tmp_path))
    target = install_target(config, program=PROGRAM,
                            env={"XDG_STATE_HOME": "relative/state"})
    assert "XDG_STATE_HOME" not in target.env


def test_doctor_fails_when_the_scheduled_job_would_write_another_ledger(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = default_config(tmp_path)
    program = PROGRAM
    # Installed from a shell without XDG_STATE_HOME ...
    config = load_config(path)
    assert install_systemd(config, target=install_target(config, program=program),
                           out=lambda _line: None) == 0
    [where] = [c for c in scheduler_checks(config) if "writes" in c.name]
    assert where.ok, where
    assert f"ledger sqlite:///{home}/.local/state/loop-jobs/ledger.db" in where.detail

    # ... then XDG_STATE_HOME exported: history and doctor now read another ledger.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    shell = load_config(path)
    [where] = [c for c in scheduler_checks(shell) if "writes" in c.name]
    assert not where.ok
    assert "differs from this shell" in where.detail
    assert str(tmp_path / "elsewhere") in where.detail
    assert where.fix is not None and "loop-verify install systemd" in where.fix

    # Reinstalled from this shell: the job carries XDG_STATE_HOME and both agree again.
    assert install_systemd(shell, target=install_target(shell, program=program),
                           out=lambda _line: None) == 0
    [where] = [c for c in scheduler_checks(shell) if "writes" in c.name]
    assert where.ok, where
    assert str(tmp_path / "elsewhere" / "loop-jobs" / "ledger.db") in where.detail


def test_doctor_checks_the_launchagent_environment_too(home: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = default_config(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "shell-state"))
    config = load_config(path)
    target = install_target(config, program=PROGRAM,
                            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "job-state")})
    launchagent_path().parent.mkdir(parents=True)
    launchagent_path().write_bytes(render_plist(launchagent_plist(config, target)))
    [where] = [c for c in scheduler_checks(config) if "writes" in c.name]
    assert where.name == "scheduler: where the launchagent writes"
    assert not where.ok and str(tmp_path / "job-state") in where.detail


def test_launchd_domain_falls_back_to_the_user_domain_without_a_gui_login() -> None:
    assert launchd_domain(True, uid=501) == "gui/501"
    assert launchd_domain(False, uid=501) == "user/501"
