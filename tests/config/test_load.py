"""Configuration loading and validation, as the SPEC gives it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.config.load import (
    DEFAULT_KILL_GRACE,
    DEFAULT_TIMEOUT,
    load_config,
    with_repos,
    with_timeout,
)
from jobs.core.durations import format_duration, parse_duration
from jobs.core.errors import ConfigError
from jobs.core.logs import configure_logging, get_logger


def git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return path


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("2h", 7200), ("45", 45), (12, 12), (1.5, 1.5), ("0.5s", 0.5),
])
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m", "-1", "0", "1d", True, None, [1], "1 h 2"])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration_round_trips() -> None:
    for seconds in (1800, 7200, 90, 1, 1.5):
        assert parse_duration(format_duration(seconds)) == seconds
    assert format_duration(1800) == "30m" and format_duration(90) == "90s"


def test_full_config(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    other = git_repo(tmp_path / "other")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "repos:\n  - path: app\n    branch: trunk\n    timeout: 2h\n  - other\n"
        "timeout: 90s\nkill_grace: 3s\ntimezone: Europe/London\nschedule: '06:05'\n"
        "state_dir: state\nlog_file: logs/x.jsonl\nledger: sqlite:////tmp/l.db\n")
    config = load_config(cfg, env={})
    assert [r.path for r in config.repos] == [app.resolve(), other.resolve()]
    assert config.repos[0].branch == "trunk" and config.repos[1].branch == "main"
    assert config.timeout_for(config.repos[0]) == 7200
    assert config.timeout_for(config.repos[1]) == 90
    assert config.kill_grace == 3 and config.schedule == (6, 5)
    assert config.schedule_text == "06:05"
    assert config.timezone_name == "Europe/London"
    assert config.state_dir == tmp_path / "state"
    assert config.log_file == tmp_path / "logs" / "x.jsonl"
    assert config.ledger == "sqlite:////tmp/l.db"


def test_defaults_and_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = load_config(None, env={"XDG_STATE_HOME": str(tmp_path / "xs"),
                                    "XDG_CONFIG_HOME": str(tmp_path / "xc")})
    assert config.source is None and config.repos == ()
    assert config.timeout == DEFAULT_TIMEOUT and config.kill_grace == DEFAULT_KILL_GRACE
    assert config.schedule == (7, 30)
    assert config.state_dir == tmp_path / "xs" / "loop-jobs"
    assert config.log_file == tmp_path / "xs" / "loop-jobs" / "loop-jobs.jsonl"
    assert config.ledger == f"sqlite:///{tmp_path / 'xs' / 'loop-jobs' / 'ledger.db'}"

    xdg = tmp_path / "xc" / "loop-jobs" / "config.yaml"
    xdg.parent.mkdir(parents=True)
    xdg.write_text("timeout: 5m\n")
    assert load_config(None, env={"XDG_CONFIG_HOME": str(tmp_path / "xc")}).timeout == 300
    named = tmp_path / "named.yaml"
    named.write_text("timeout: 7m\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xc"), "LOOP_JOBS_CONFIG": str(named)}
    assert load_config(None, env=env).timeout == 420
    flag = tmp_path / "flag.yaml"
    flag.write_text("timeout: 9m\n")
    assert load_config(flag, env=env).timeout == 540
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml", env={})


def test_unquoted_schedule_reads_as_a_time(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    for text, expected in [("07:30", (7, 30)), ("7:05", (7, 5)), ("23:59", (23, 59))]:
        cfg.write_text(f"schedule: {text}\n")  # YAML 1.1 sexagesimal: 450 for 07:30
        assert load_config(cfg, env={}).schedule == expected
    # Numbers a loader would turn into some other time are refused, not guessed at.
    for text in ("0730", "730", "7", "24:00", "7:5"):
        cfg.write_text(f"schedule: {text}\n")
        with pytest.raises(ConfigError, match="schedule"):
            load_config(cfg, env={})


@pytest.mark.parametrize(("text", "key", "line"), [
    ("timeout: 30m\ncolour: blue\n", "colour", 2),
    ("timeout: soon\n", "timeout", 1),
    ("kill_grace: -3s\n", "kill_grace", 1),
    ("timezone: Nowhere/Land\n", "timezone", 1),
    ("schedule: '25:00'\n", "schedule", 1),
    ("state_dir: 3\n", "state_dir", 1),
    ("ledger: just-a-path.db\n", "ledger", 1),
    ("ledger: mysql://x\n", "ledger", 1),
    ("ledger: 'oracle+cx_oracle://u@h/db'\n", "ledger", 1),
    ("repos: app\n", "repos", 1),
    ("repos:\n  - path: /definitely/not/here\n", "repos[0].path", 2),
    ("repos:\n  - path: .\n    branch: main\n    colour: x\n", "repos[0].colour", 4),
    ("repos:\n  - branch: main\n", "repos[0]", 2),
    ("repos:\n  - path: .\n    timeout: forever\n", "repos[0].timeout", 3),
])
def test_errors_name_file_line_key_and_value(tmp_path: Path, text: str, key: str,
                                             line: int) -> None:
    cfg, error = config_error(tmp_path, text)
    assert error.key == key
    assert error.exit_code == 2
    assert str(error).startswith(f"{cfg}:{line}: {key}: ")
    assert "(got " in str(error)


def config_error(tmp_path: Path, text: str) -> tuple[Path, ConfigError]:
    """The configuration error `text` makes, in a config beside a git work tree."""
    git_repo(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    return cfg, info.value


def test_broken_yaml_and_non_mapping(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("repos: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(cfg, env={})
    cfg.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(cfg, env={})
    cfg.write_bytes(b"timeout: \xff\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(cfg, env={})


@pytest.mark.parametrize(("text", "key", "hint"), [
    ("schedle: '07:30'\n", "schedle", "unknown key; did you mean `schedule`?"),
    ("repos:\n  - path: .\n    brnch: main\n", "repos[0].brnch",
     "unknown key; did you mean `branch`?"),
    ("branch: trunk\n", "branch", "unknown key; `branch` belongs in a `repos` item"),
    ("repos:\n  - path: .\n    kill_grace: 5s\n", "repos[0].kill_grace",
     "unknown key; `kill_grace` is a top-level key"),
    ("colour: blue\n", "colour", "unknown key (got"),
])
def test_an_unknown_key_names_the_key_it_resembles(tmp_path: Path, text: str, key: str,
                                                   hint: str) -> None:
    """A typo or a key in the wrong place is a new user's first mistake: say which key was meant."""
    _cfg, error = config_error(tmp_path, text)
    assert error.key == key
    assert f": {key}: {hint}" in str(error), str(error)


@pytest.mark.parametrize(("text", "line", "shown"), [
    ("repos:\n  - path: .\n  timezone: UTC\n", 3, "  timezone: UTC"),
    ("repos:\n- path: .\n   branch: main\n", 3, "   branch: main"),
])
def test_broken_yaml_names_file_line_and_the_line_itself(tmp_path: Path, text: str, line: int,
                                                         shown: str) -> None:
    """A mis-indented line, a new user's commonest slip: `<file>:<line>: not valid YAML: ...`,
    quoting that line, as every other configuration error names its file and line."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    assert info.value.exit_code == 2
    message = str(info.value)
    assert message.startswith(f"{cfg}:{line}: not valid YAML: "), message
    assert message.endswith(f"(got {shown!r})"), message
    assert "\n" not in message


def test_a_subdirectory_is_not_a_work_tree_root(tmp_path: Path) -> None:
    git_repo(tmp_path / "app")
    (tmp_path / "app" / "sub").mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("repos: [app/sub]\n")
    with pytest.raises(ConfigError, match="not a git work tree"):
        load_config(cfg, env={})
    # Say which root was meant, for a path inside a work tree and one that does not exist.
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    assert f"it is inside the one at {tmp_path / 'app'}; name that root" in str(info.value)
    cfg.write_text("repos: [aap]\n")
    with pytest.raises(ConfigError, match="not a git work tree: no such directory"):
        load_config(cfg, env={})
    with pytest.raises(ConfigError, match="--repo: not a git work tree: it is inside the one at"):
        with_repos(load_config(None, env={"XDG_CONFIG_HOME": str(tmp_path)}),
                   [str(tmp_path / "app" / "sub")])


def test_command_line_overrides(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    other = git_repo(tmp_path / "other")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("repos:\n  - path: app\n    branch: trunk\n    timeout: 1h\n")
    config = load_config(cfg, env={})
    replaced = with_repos(config, [str(other), str(app)])
    assert [r.path for r in replaced.repos] == [other.resolve(), app.resolve()]
    assert replaced.repos[1].branch == "trunk"  # a configured repo keeps its settings
    with pytest.raises(ConfigError, match="--repo"):
        with_repos(config, [str(tmp_path / "nope")])
    short = with_timeout(config, "5s")
    assert short.timeout_for(short.repos[0]) == 5
    with pytest.raises(ConfigError, match="--timeout"):
        with_timeout(config, "later")
    # `5min` is a natural slip: the message says what is accepted, as the file's timeout does.
    with pytest.raises(ConfigError, match=r"--timeout: bad duration \(use 90s, 30m, 2h"):
        with_timeout(config, "5min")


def test_json_log_lines_have_utc_timestamps_and_events(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "x.jsonl"
    configure_logging(log_file, console=False)
    get_logger("loop-verify").info("verify.passed", task="TASK-1", repo="/r")
    logging.getLogger("apscheduler.scheduler").warning("stdlib record")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        secret = "ghp_secret_token"  # must never reach the log through frame locals
        get_logger("loop-verify").exception("verify.error", token_len=len(secret))
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    # A library's free text is kept as `message`, never as the event.
    assert [entry["event"] for entry in lines] == ["verify.passed", "scheduler.library_message",
                                                    "verify.error"]
    assert lines[1]["message"] == "stdlib record"
    assert lines[0]["task"] == "TASK-1" and lines[0]["level"] == "info"
    for entry in lines:
        assert entry["timestamp"].endswith("Z")
    assert "ghp_secret_token" not in log_file.read_text()
    assert "boom" in log_file.read_text()
    configure_logging(None, console=False)


def test_an_unsupported_ledger_database_stops_run_before_anything(tmp_path: Path) -> None:
    # Once a traceback and exit 1 ("a verification failed"): now the configuration is refused.
    git_repo(tmp_path / "app")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"ledger: mysql://x\nstate_dir: {tmp_path / 'state'}\nrepos: [app]\n")
    proc = subprocess.run([sys.executable, "-m", "jobs.main", "run", "--config", str(cfg)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"loop-verify: {cfg}:1: ledger: ")
    assert "sqlite" in proc.stderr and "postgresql" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "state").exists()


def test_a_ledger_driver_that_is_not_installed_is_a_usage_error(tmp_path: Path) -> None:
    git_repo(tmp_path / "app")
    cfg = tmp_path / "config.yaml"
    # pg8000 is a PostgreSQL driver loop-jobs does not install.
    cfg.write_text(f"ledger: postgresql+pg8000://u@127.0.0.1:1/db\nstate_dir: {tmp_path / 's'}\n"
                   "repos: [app]\n")
    proc = subprocess.run([sys.executable, "-m", "jobs.main", "history", "--config", str(cfg)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "database driver is not installed" in proc.stderr
    assert "postgresql+psycopg://" in proc.stderr and "Traceback" not in proc.stderr


def test_default_machine_is_the_host_name_socket_gives() -> None:
    """`default_machine` reads os.uname() so commands need not import socket; it must name the
    machine exactly as socket.gethostname() does."""
    import socket

    from jobs.core.host import default_machine

    assert default_machine() == (socket.gethostname().strip().removesuffix(".local")
                                 or "localhost")


def test_command_line_errors_name_the_option_once(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("timeout: 5m\n")
    try:
        with_repos(load_config(cfg, env={}), [str(tmp_path / "nope")])
    except ConfigError as exc:
        assert str(exc).startswith("command line: --repo: not a git work tree")
    else:
        raise AssertionError("a missing --repo must be refused")


def test_a_repository_listed_twice_is_a_configuration_error(tmp_path: Path) -> None:
    # Listed twice, its recipes would run twice a morning (and the two items may disagree on
    # branch or timeout): the second item is named, with the first.
    git_repo(tmp_path / "app")
    (tmp_path / "link").symlink_to(tmp_path / "app")
    cfg = tmp_path / "c.yaml"
    for second in ("./app/", "link", str(tmp_path / "app")):
        cfg.write_text(f"repos:\n  - app\n  - path: {second}\n    branch: main\n")
        with pytest.raises(ConfigError) as exc:
            load_config(cfg, env={})
        assert f"{cfg}:3: repos[1].path" in str(exc.value)
        assert "the same repository as repos[0]" in str(exc.value)
