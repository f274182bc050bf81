"""Whether the installed schedule will fire and has fired: a systemd timer that is not enabled,
a LaunchAgent where there is no launchd, a morning job that has not run for 26 hours; and
`uninstall` disabling the timer before it removes the files. Real unit files, the real
`systemctl` (which reads unit files without a running user manager), an injected clock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scheduler_helpers import write_config

from jobs.config.load import Config
from jobs.ledger.model import Run
from jobs.ledger.runs import save_run
from jobs.ledger.store import Ledger
from jobs.schedule.install import (
    install_systemd,
    install_target,
    launchagent_path,
    systemd_user_dir,
    uninstall_systemd,
)
from jobs.schedule.liveness import launchagent_loaded_check, morning_check, timer_enabled_check
from jobs.schedule.units import TIMER_NAME, launchagent_plist, render_plist

SYSTEMCTL = shutil.which("systemctl")
DAY = datetime(2026, 11, 30, 7, 30, tzinfo=UTC)


def config_in(tmp_path: Path) -> Config:
    return write_config(tmp_path / "cfg", schedule="07:30", timezone="UTC", machine="studio")


def installed_units(config: Config) -> Path:
    program = Path(sysconfig.get_path("scripts")) / "loop-verify"
    assert install_systemd(config, target=install_target(config, program=program),
                           out=lambda _: None) == 0
    return systemd_user_dir()


def systemctl(*args: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMCTL is not None
    return subprocess.run([SYSTEMCTL, "--user", *args], capture_output=True, text=True,
                          check=False)


@pytest.mark.skipif(SYSTEMCTL is None, reason="systemctl is not installed")
def test_a_timer_not_enabled_fails_and_uninstall_disables_before_removing(
        home: Path, tmp_path: Path) -> None:
    config = config_in(tmp_path)
    assert timer_enabled_check() is None  # nothing installed: nothing to say
    directory = installed_units(config)
    check = timer_enabled_check()
    assert check is not None and not check.ok
    assert "installed but not enabled (disabled)" in check.detail
    assert check.fix == f"systemctl --user enable --now {TIMER_NAME}"

    enabled = systemctl("enable", TIMER_NAME)
    assert enabled.returncode == 0, enabled.stderr
    wants = directory / "timers.target.wants" / TIMER_NAME
    assert wants.is_symlink()
    assert timer_enabled_check() is None

    lines: list[str] = []
    assert uninstall_systemd(out=lines.append) == 0
    # Disabled first: systemd's link is gone with the files, none is left dangling.
    assert f"disabled {TIMER_NAME}" in lines
    assert not wants.is_symlink() and not wants.exists()
    assert not (directory / TIMER_NAME).exists()


def test_a_launchagent_where_there_is_no_launchd_never_runs(home: Path, tmp_path: Path) -> None:
    config = config_in(tmp_path)
    program = Path(sysconfig.get_path("scripts")) / "loop-verify"
    path = launchagent_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(render_plist(launchagent_plist(config, install_target(config,
                                                                         program=program))))
    check = launchagent_loaded_check(macos=False)
    assert check is not None and not check.ok
    assert "this machine has no launchd" in check.detail
    assert check.fix is not None and "loop-verify uninstall launchagent" in check.fix


def record(config: Config, started: datetime, *, ended: bool = True) -> None:
    ledger = Ledger(config.ledger, machine=config.machine)
    try:
        save_run(ledger, Run(f"r{started:%H%M%d}", config.machine, "systemd", started,
                             ended_at=started + timedelta(minutes=2) if ended else None,
                             exit_code=0 if ended else None))
    finally:
        ledger.close()


def test_no_finished_run_for_26_hours_while_a_schedule_is_installed(
        home: Path, tmp_path: Path) -> None:
    config = config_in(tmp_path)
    assert morning_check(config, now=DAY) is None  # no schedule installed
    directory = installed_units(config)
    installed = DAY - timedelta(days=3)
    os.utime(directory / TIMER_NAME, (installed.timestamp(), installed.timestamp()))

    check = morning_check(config, now=DAY)
    assert check is not None and not check.ok
    assert check.detail == ("the morning job has not run since the schedule was installed "
                            "(2026-11-27 07:30 UTC)")

    record(config, DAY - timedelta(days=2))
    record(config, DAY - timedelta(hours=20), ended=False)  # started, never finished
    check = morning_check(config, now=DAY)
    assert check is not None and not check.ok
    assert check.detail == "the morning job has not run since 2026-11-28 07:32 UTC"

    record(config, DAY - timedelta(hours=25))
    check = morning_check(config, now=DAY)
    assert check is not None and check.ok, check
    assert check.detail == "last finished run 2026-11-29 06:32 UTC"
    # Another machine's run on the same ledger does not count for this one.
    later = DAY + timedelta(days=2)
    ledger = Ledger(config.ledger, machine="other")
    try:
        save_run(ledger, Run("o1", "other", "manual", later - timedelta(hours=1),
                             ended_at=later, exit_code=0))
    finally:
        ledger.close()
    check = morning_check(config, now=later)
    assert check is not None and not check.ok and "since 2026-11-29 06:32 UTC" in check.detail
