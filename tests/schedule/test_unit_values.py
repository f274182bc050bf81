"""Review of the scheduling part: hostile cases found by trying `serve`, `install` and `doctor` by
hand."""

from __future__ import annotations

import json
import plistlib
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from project import ROOT

from jobs.config.load import load_config
from jobs.schedule.install import (
    install_launchagent,
    install_systemd,
    install_target,
    launchagent_path,
)
from jobs.schedule.status import scheduler_checks
from jobs.schedule.units import launchagent_plist, render_plist

REPO_ROOT = ROOT
TOOLS_PATH = ":".join(dict.fromkeys(
    [str(Path(str(shutil.which(t))).parent) for t in ("just", "git")] + ["/usr/bin", "/bin"]))


def serve_once(config: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`loop-verify serve` as a real process; on a state it cannot use it must stop at once."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "jobs.main", "serve", "--config", str(config)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30,
                          check=False)


def write_config(base: Path, state_dir: Path) -> Path:
    path = base / "config.yaml"
    path.write_text(json.dumps({"state_dir": str(state_dir),
                                "log_file": str(base / "log" / "loop-jobs.jsonl")}))
    return path


@pytest.mark.parametrize("damage", ["garbage job store", "job store is a folder",
                                    "state_dir is a file", "lock is a folder"])
def test_serve_on_an_unusable_state_dir_is_one_line_exit_3(tmp_path: Path, damage: str) -> None:
    state = tmp_path / "state dir"
    if damage == "state_dir is a file":
        state.write_text("not a folder\n")
    else:
        state.mkdir()
    if damage == "garbage job store":
        (state / "scheduler.db").write_text("garbage, not SQLite\n")
    elif damage == "job store is a folder":
        (state / "scheduler.db").mkdir()
    elif damage == "lock is a folder":
        (state / "serve.lock").mkdir()
    done = serve_once(write_config(tmp_path, state), tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loop-verify: ")
    assert str(state) in lines[0]
    if damage == "garbage job store":
        assert (state / "scheduler.db").read_text() == "garbage, not SQLite\n"  # left for the user


def loop_verify(home: Path, *args: str, xdg: Path | None = None
                ) -> subprocess.CompletedProcess[str]:
    # A PATH that finds just and git, so install warns about nothing.
    env = {"PATH": TOOLS_PATH, "HOME": str(home), "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(home / "no-runtime")}
    if xdg is not None:
        env["XDG_CONFIG_HOME"] = str(xdg)
    return subprocess.run([sys.executable, "-m", "jobs.main", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=30, check=False)


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0]


def test_install_where_a_folder_cannot_be_made_is_one_line_exit_1(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("in the way\n")
    config = write_config(tmp_path, tmp_path / "state")
    done = loop_verify(blocker, "install", "launchagent", "--config", str(config))
    if sys.platform == "darwin":
        # HOME is a file: ~/Library/LaunchAgents cannot be made.
        assert_one_line_failure(done, "install launchagent", str(blocker))
    else:
        # No launchd here: refused before any folder is made (SPEC: unless --print).
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "launchd" in done.stderr and "Traceback" not in done.stderr
    # XDG_CONFIG_HOME is a file: systemd/user cannot be made.
    done = loop_verify(tmp_path, "install", "systemd", "--config", str(config), xdg=blocker)
    assert_one_line_failure(done, "install systemd", str(blocker))
    # The log directory (for StandardOutPath) cannot be made: nothing is written.
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"),
                                  "log_file": str(blocker / "loop-jobs.jsonl")}))
    if sys.platform == "darwin":
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


@pytest.mark.parametrize("tz", ["UTC0", ":/etc/localtime", "No/Such_Zone"])
def test_serve_without_timezone_starts_under_any_tz_variable(tmp_path: Path, tz: str) -> None:
    # A POSIX $TZ or an unknown name made tzlocal raise; `:/etc/localtime` gave a zone the job
    # store could not pickle. Either way `serve` died with a traceback before scheduling anything.
    config = write_config(tmp_path, tmp_path / "state")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "TZ": tz}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "jobs.main", "serve", "--config", str(config)], cwd=REPO_ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        first = daemon.stdout.readline()
        daemon.send_signal(signal.SIGTERM)
        out, err = daemon.communicate(timeout=30)
        assert first.startswith("loop-verify serve: daily at 07:30"), (first, out, err)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0, err
    assert "Traceback" not in err
    assert "stopped" in out


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
    config = load_config(write_config(tmp_path, tmp_path / "state"))
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
