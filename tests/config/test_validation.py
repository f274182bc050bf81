"""A configuration value loop-verify cannot use is refused before anything runs: one line naming
the file, the line, the key and the value (exit 2), never a failure later in every run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

from jobs.config.load import load_config
from jobs.core.errors import ConfigError

TODAY = ("--today", "2026-11-30")


def test_a_duration_too_large_for_the_clock_is_a_configuration_error(tmp_path: Path) -> None:
    # YAML reads a long number as an int, which passed every check and then overflowed the
    # claim's expiry (timedelta) in every run: each repository an "unexpected OverflowError".
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"timeout": 10**26})
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    done = repo.run("run", *TODAY)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"loop-verify: {repo.config_path}:"), lines
    assert "timeout: bad duration" in lines[0] and "at most 100 years" in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert task.read_bytes() == before and repo.head() == head
    assert not (repo.state_dir / "ledger.db").exists()

    # The same limit on the command line.
    repo.config_path.write_text(repo.config_path.read_text().replace(str(10**26), "10s"))
    done = repo.run("run", *TODAY, "--timeout", "99999999999999999999h")
    assert done.returncode == 2 and "--timeout" in done.stderr, done.stderr
    assert task.read_bytes() == before

    # The longest limit taken works end to end: claim, recipe, verdict commit.
    repo.config_path.write_text(repo.config_path.read_text().replace(
        "timeout: 10s", f"timeout: {100 * 365 * 86400}"))
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"


@pytest.mark.parametrize(("text", "key", "line", "first"), [
    ("timeout: 30m\nkill_grace: 5s\ntimeout: 1s\n", "timeout", 3, 1),
    ("timeout: 30m\n'timeout': 1s\n", "timeout", 2, 1),
    ("repos:\n  - path: {app}\n    timeout: 1h\n    timeout: 1s\n", "repos[0].timeout", 4, 3),
])
def test_a_key_written_twice_in_the_configuration_is_refused(
        tmp_path: Path, text: str, key: str, line: int, first: int) -> None:
    # PyYAML keeps the last of two equal keys without a word, so a `timeout: 1s` forgotten
    # further down silently replaced the one the owner reads, and every recipe timed out.
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.config_path.write_text(text.format(app=repo.root), encoding="utf-8")
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    for verb in ("run", "list"):
        done = repo.run(verb, *TODAY, "--repo", str(repo.root))
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines == [f"loop-verify: {repo.config_path}:{line}: {key}: repeated key "
                         f"(first on line {first}) (got '1s')"], lines
    assert task.read_bytes() == before and repo.head() == head


def test_a_local_time_zone_no_clock_can_hold_is_a_usage_error(tmp_path: Path) -> None:
    # glibc reads TZ=UTC+99 as an offset of 99 hours, which no datetime can hold: without a
    # configured `timezone` every command died with "unexpected error: ValueError: offset must
    # be a timedelta strictly between ...", exit 3, naming neither TZ nor what to do.
    probe = subprocess.run([sys.executable, "-c", "import datetime as d; d.datetime.now()"
                            ".astimezone()"], env=dict(os.environ, TZ="UTC+99"),
                           capture_output=True, check=False)
    if probe.returncode == 0:
        pytest.skip("this C library keeps TZ=UTC+99 within a day of UTC")
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.config_path.write_text(repo.config_path.read_text().replace("timezone: UTC\n", ""))
    assert "timezone" not in repo.config_path.read_text()
    for verb in ("list", "run"):
        done = repo.run(verb, *TODAY, env={"TZ": "UTC+99"}, process=True)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.splitlines() == [
            "loop-verify: $TZ: 'UTC+99' gives a local time zone no clock can hold (an offset "
            "of a day or more); fix $TZ or set `timezone:` in the configuration"], done.stderr
    done = repo.run("run", *TODAY, "--dry-run", env={"TZ": "UTC+5"}, process=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("text", [".inf", ".nan", "1.0e+400"])
def test_config_refuses_yaml_infinity_and_nan(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"timeout: {text}\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert "timeout" in str(info.value)


@pytest.mark.parametrize("key", ["state_dir", "log_file", "ledger", "timezone"])
def test_a_nul_character_in_a_value_is_a_config_error(tmp_path: Path, key: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f'{key}: "sqlite:///a\\0b"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert key in str(info.value)
