"""The loop-verify configuration file: where it is, what it may hold, and its validation."""

# Annotations are evaluated here (no `from __future__ import annotations`): a NamedTuple
# would otherwise compile each field's annotation text on every start-up.

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any, NamedTuple

from jobs.config.expand import ExpandError, expand, expand_ledger
from jobs.config.expand import expand_user as expand_user
from jobs.config.fast import read_simple
from jobs.config.sizes import DEFAULT_OUTPUT_LIMIT, size_of
from jobs.core.durations import parse_duration, parse_retention
from jobs.core.errors import ConfigError, UsageError
from jobs.core.host import default_log_file, default_machine, default_state_dir, home_dir

DEFAULT_TIMEOUT = 30 * 60.0
DEFAULT_KILL_GRACE = 10.0
DEFAULT_SCHEDULE = (7, 30)
DEFAULT_BRANCH = "main"
DEFAULT_OUTPUT_RETENTION = 30 * 86400.0
MACHINE_MAX = 128

# Patterns a command rarely needs are compiled on first use (re's own cache keeps them): each
# compiled at import costs every start-up a fraction of a millisecond.
_SCHEDULE = r"^([01]?\d|2[0-3]):([0-5]\d)$"
# An Apprise URL: a scheme, `://`, then anything without spaces or control characters.

TOP_KEYS = {"repos", "timeout", "kill_grace", "timezone", "schedule", "state_dir", "log_file",
            "ledger", "machine", "output_retention", "notify", "heartbeat",
            "output_limit"}
REPO_KEYS = {"path", "branch", "timeout"}

# The databases the ledger is built and tested on (SQLAlchemy dialect names).
LEDGER_DIALECTS = ("sqlite", "postgresql")

# Records are typed NamedTuples rather than dataclasses: importing `dataclasses` (and `inspect`
# with it) and building each class cost `list` more start-up time than all else it imports.
class RepoConfig(NamedTuple):
    path: Path
    branch: str = DEFAULT_BRANCH
    timeout: float | None = None


class Config(NamedTuple):
    source: Path | None
    repos: tuple[RepoConfig, ...]
    timeout: float
    kill_grace: float
    timezone: tzinfo
    timezone_name: str | None
    schedule: tuple[int, int]
    state_dir: Path
    log_file: Path
    ledger: str
    machine: str = ""
    output_retention: float = DEFAULT_OUTPUT_RETENTION
    notify: tuple[str, ...] = ()       # Apprise URLs told after a run that exits 1 or 3
    heartbeat: str | None = None       # a Healthchecks-style ping URL
    output_limit: int = DEFAULT_OUTPUT_LIMIT

    def timeout_for(self, repo: RepoConfig) -> float:
        return repo.timeout if repo.timeout is not None else self.timeout

    @property
    def schedule_text(self) -> str:
        return f"{self.schedule[0]:02d}:{self.schedule[1]:02d}"


def find_config_path(explicit: str | Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read and whether the user named it (then it must exist)."""
    # Absolute, so paths relative to the file stay right in task notes and from any other cwd.
    if explicit:
        return expand_user(explicit, "--config", "--config").absolute(), True
    if env.get("LOOP_JOBS_CONFIG"):
        return expand_user(env["LOOP_JOBS_CONFIG"], "$LOOP_JOBS_CONFIG",
                           "LOOP_JOBS_CONFIG").absolute(), True
    base = env.get("XDG_CONFIG_HOME") or str(home_dir(env) / ".config")
    return Path(base) / "loop-jobs" / "config.yaml", False


def is_work_tree_root(path: Path) -> bool:
    # `.git` is a directory in a clone and a file in a linked worktree or submodule.
    return path.is_dir() and (path / ".git").exists()


def not_a_root(path: Path) -> str:
    """Why `path` is no repository to verify, naming the root a subfolder path meant."""
    if not path.is_dir():
        return "not a git work tree: no such directory"
    for parent in path.parents:
        if is_work_tree_root(parent):
            return f"not a git work tree: it is inside the one at {parent}; name that root"
    return "not a git work tree"


def load_config(explicit: str | Path | None = None,
                env: Mapping[str, str] | None = None) -> Config:
    """Read and validate the configuration; any problem raises ConfigError (exit 2)."""
    env = os.environ if env is None else env
    path, named = find_config_path(explicit, env)
    if not path.exists():
        if named:
            raise ConfigError(path, "config", str(path), "configuration file not found")
        return _build(None, {}, {}, env)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, "config", str(path), f"cannot read: {exc}") from None
    simple = read_simple(text, TOP_KEYS, REPO_KEYS)  # the common shapes, without importing PyYAML
    if simple is not None:
        data, lines, plain = simple
        schedule_text = plain.get("schedule")
    else:
        from jobs.config.yaml_keys import read_yaml

        data, lines, schedule_text = read_yaml(path, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, "config", data, "the file must hold a mapping of keys")
    if schedule_text is not None and isinstance(data.get("schedule"), int):
        # YAML 1.1 reads an unquoted 07:30 as the sexagesimal 450, and 0730 as octal: judge
        # the time by what the file says, not by the number a loader made of it.
        data["schedule"] = schedule_text
    return _build(path, data, lines, env)


def _build(path: Path | None, data: dict[Any, Any], lines: dict[str, int],
           env: Mapping[str, str]) -> Config:
    where = path or Path("<defaults>")
    base_dir = path.parent if path else Path.cwd()

    def fail(key: str, value: object, problem: str) -> ConfigError:
        # A `repos` item written as a bare path has a line, not its `path` key.
        line = lines.get(key) or lines.get(key.rpartition(".")[0])
        src = f"{where}:{line}" if line else where
        return ConfigError(src, key, value, problem)

    for key in data:
        if key not in TOP_KEYS:
            raise fail(str(key), data[key], unknown_key(key, TOP_KEYS, REPO_KEYS))

    def duration(key: str, value: object) -> float:
        try:
            return parse_duration(value)
        except ValueError:
            raise fail(key, value, "bad duration (use 90s, 30m, 2h or a number of seconds; "
                                  "at most 100 years)") \
                from None

    def text(key: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise fail(key, value, "expected a non-empty string")
        if "\0" in value:
            # No path, URL or branch name can hold one; the OS would raise ValueError later.
            raise fail(key, value, "contains a NUL character")
        return value

    def expanded(key: str, value: object) -> str:
        try:
            return (expand_ledger if key == "ledger" else expand)(text(key, value), env)
        except ExpandError as exc:
            raise fail(key, value, str(exc)) from None

    def local_path(key: str, value: object) -> Path:
        p = Path(expanded(key, value))
        return p if p.is_absolute() else (base_dir / p)

    timeout = duration("timeout", data["timeout"]) if "timeout" in data else DEFAULT_TIMEOUT
    grace = (duration("kill_grace", data["kill_grace"]) if "kill_grace" in data
             else DEFAULT_KILL_GRACE)

    tz_name: str | None = None
    tz: tzinfo
    if "timezone" in data:
        tz_name = text("timezone", data["timezone"])
        try:
            tz = zone_named(tz_name)
        except ValueError:
            raise fail("timezone", tz_name, "unknown time zone") from None
    else:
        tz = local_zone()

    schedule = DEFAULT_SCHEDULE
    if "schedule" in data:
        raw = data["schedule"]
        m = re.match(_SCHEDULE, raw) if isinstance(raw, str) else None
        if not m:
            raise fail("schedule", raw, 'expected a daily time such as "07:30"')
        schedule = (int(m.group(1)), int(m.group(2)))

    state_dir = (local_path("state_dir", data["state_dir"]) if "state_dir" in data
                 else default_state_dir(env))
    log_file = (local_path("log_file", data["log_file"]) if "log_file" in data
                else default_log_file(env, state_dir))
    if "ledger" in data:
        ledger = expanded("ledger", data["ledger"])
        if "://" not in ledger:
            raise fail("ledger", ledger, "expected an SQLAlchemy URL such as sqlite:///path")
        dialect = ledger.split("://", 1)[0].split("+", 1)[0].lower()
        if dialect not in LEDGER_DIALECTS:
            raise fail("ledger", ledger, "the ledger's database must be sqlite or postgresql "
                       "(e.g. sqlite:///path or postgresql+psycopg://user@host/db)")
        sqlite_path = ledger.removeprefix("sqlite:///") if ledger.startswith("sqlite:///") else ""
        if sqlite_path and not sqlite_path.startswith(("/", ":memory:")):
            # Like every other path in the file: relative to the config file, not the cwd.
            ledger = f"sqlite:///{base_dir / sqlite_path}"
    else:
        ledger = f"sqlite:///{state_dir / 'ledger.db'}"

    machine = default_machine()
    if "machine" in data:
        machine = text("machine", data["machine"]).strip()
        if len(machine) > MACHINE_MAX or any(not ch.isprintable() for ch in machine):
            raise fail("machine", data["machine"],
                       f"expected a printable name of at most {MACHINE_MAX} characters")
    retention = DEFAULT_OUTPUT_RETENTION
    if "output_retention" in data:
        try:
            retention = parse_retention(data["output_retention"])
        except ValueError:
            raise fail("output_retention", data["output_retention"],
                       "bad duration (use 30d, 12h or a number of seconds)") from None

    notify: tuple[str, ...] = ()
    heartbeat: str | None = None
    if "notify" in data or "heartbeat" in data:
        from jobs.config.deliveries import heartbeat_url, notify_urls

        notify = notify_urls(data.get("notify"), fail) if "notify" in data else ()
        heartbeat = heartbeat_url(data["heartbeat"], fail) if "heartbeat" in data else None

    output_limit = size_of(data, "output_limit", DEFAULT_OUTPUT_LIMIT, fail)

    repos: list[RepoConfig] = []
    raw_repos = data.get("repos", [])
    if raw_repos is None:
        raw_repos = []
    if not isinstance(raw_repos, list):
        raise fail("repos", raw_repos, "expected a list of repositories")
    for i, item in enumerate(raw_repos):
        key = f"repos[{i}]"
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, dict):
            raise fail(key, item, "expected a mapping with at least `path`")
        for k in item:
            if k not in REPO_KEYS:
                raise fail(f"{key}.{k}", item[k], unknown_key(k, REPO_KEYS, TOP_KEYS))
        if "path" not in item:
            raise fail(key, item, "missing `path`")
        repo_path = local_path(f"{key}.path", item["path"])
        branch = text(f"{key}.branch", item["branch"]) if "branch" in item else DEFAULT_BRANCH
        repo_timeout = duration(f"{key}.timeout", item["timeout"]) if "timeout" in item else None
        if not is_work_tree_root(repo_path):
            raise fail(f"{key}.path", str(repo_path), not_a_root(repo_path))
        first = next((n for n, r in enumerate(repos) if r.path == repo_path.resolve()), None)
        if first is not None:  # its recipes would run twice a morning
            raise fail(f"{key}.path", str(repo_path), f"the same repository as repos[{first}]")
        repos.append(RepoConfig(repo_path.resolve(), branch, repo_timeout))

    return Config(source=path, repos=tuple(repos), timeout=timeout, kill_grace=grace,
                  timezone=tz, timezone_name=tz_name, schedule=schedule, state_dir=state_dir,
                  log_file=log_file, ledger=ledger, machine=machine,
                  output_retention=retention, notify=notify, heartbeat=heartbeat,
                  output_limit=output_limit)


def zone_named(name: str) -> tzinfo:
    """The IANA time zone `name`; ValueError when there is none. UTC needs no zone database,
    nor `zoneinfo`, whose import costs an empty `list` a tenth of its time."""
    if name == "UTC":
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError:
        raise ValueError(f"unknown time zone {name!r}") from None


def local_zone() -> tzinfo:
    """The machine's local time zone; UsageError when $TZ makes one no datetime can hold."""
    from datetime import datetime

    try:
        local = datetime.now().astimezone().tzinfo
    except (ValueError, OverflowError):
        # glibc reads TZ=UTC+99 as an offset of 99 hours; a datetime's is under a day.
        raise UsageError(f"$TZ: {os.environ.get('TZ')!r} gives a local time zone no clock can "
                         "hold (an offset of a day or more); fix $TZ or set `timezone:` in the "
                         "configuration") from None
    assert local is not None
    return local


def with_repos(config: Config, paths: Sequence[str | Path]) -> Config:
    """`--repo PATH` (repeatable) replaces the configured list; each must be a git work tree.
    A repository named twice (`app`, `./app/`, a symlink to it) is one, worked on once."""
    repos: list[RepoConfig] = []
    for raw in paths:
        p = expand_user(raw, "--repo", "--repo").absolute()
        if not is_work_tree_root(p):
            raise ConfigError("command line", "--repo", str(raw), not_a_root(p))
        if any(r.path == p.resolve() for r in repos):
            continue
        known = next((r for r in config.repos if r.path == p.resolve()), None)
        repos.append(known._replace(path=p.resolve()) if known else RepoConfig(p.resolve()))
    return config._replace(repos=tuple(repos))


def unknown_key(key: object, known: set[str], elsewhere: set[str]) -> str:
    """"unknown key", and which key was meant: one of the other level's, or a near spelling."""
    if key in elsewhere:
        return (f"unknown key; `{key}` is a top-level key" if known is REPO_KEYS else
                f"unknown key; `{key}` belongs in a `repos` item")
    import difflib  # only on this error: `list` starts without it

    near = difflib.get_close_matches(str(key), sorted(known), n=1)
    return f"unknown key; did you mean `{near[0]}`?" if near else "unknown key"


def with_timeout(config: Config, value: str | None) -> Config:
    """`--timeout DUR` overrides every per-recipe limit for this run."""
    if value is None:
        return config
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise ConfigError("command line", "--timeout", value,
                          "bad duration (use 90s, 30m, 2h or a number of seconds; at most 100 "
                          "years)") from None
    return config._replace(timeout=seconds,
                           repos=tuple(r._replace(timeout=None) for r in config.repos))
