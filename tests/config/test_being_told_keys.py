"""`notify:` and `heartbeat:` in the configuration: read alike by PyYAML and the fast reader,
refused with the file, line, key and value when they are not what they must be."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config.fast import read_simple
from jobs.config.load import REPO_KEYS, TOP_KEYS, load_config
from jobs.config.yaml_keys import key_lines
from jobs.core.errors import ConfigError

GOOD = """notify:
  - ntfy://ntfy.sh/my-loops
  - mailto://me:secret@example.com
heartbeat: https://hc-ping.com/0f3c6a1e-5b7d-4a39-9c11-2f6f0d7e8a90
"""


def test_notify_and_heartbeat_are_read(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(GOOD)
    config = load_config(cfg, env={})
    assert config.notify == ("ntfy://ntfy.sh/my-loops", "mailto://me:secret@example.com")
    assert config.heartbeat == "https://hc-ping.com/0f3c6a1e-5b7d-4a39-9c11-2f6f0d7e8a90"
    # Neither is set by default: nobody is told, nothing is pinged.
    cfg.write_text("timeout: 30m\n")
    config = load_config(cfg, env={})
    assert config.notify == () and config.heartbeat is None
    # One URL alone is a list of one.
    cfg.write_text("notify: ntfy://ntfy.sh/x\n")
    assert load_config(cfg, env={}).notify == ("ntfy://ntfy.sh/x",)


def test_the_fast_reader_and_pyyaml_agree_on_their_lines() -> None:
    import yaml

    simple = read_simple(GOOD, TOP_KEYS, REPO_KEYS)
    assert simple is not None
    data, lines, _ = simple
    assert data == yaml.safe_load(GOOD)
    assert lines == key_lines(yaml.compose(GOOD, Loader=yaml.SafeLoader))
    assert lines["notify[1]"] == 3


@pytest.mark.parametrize(("text", "key", "line"), [
    ("notify: []\n", "notify", 1),
    ("notify:\n  - ntfy://ntfy.sh/a\n  - not a url\n", "notify[1]", 3),
    ("notify:\n  - 42\n", "notify[0]", 2),
    ("notify: {a: b}\n", "notify", 1),
    # Not a URL at all (urlsplit refuses it): once made a run that failed a task exit 3.
    ("notify:\n  - json://[oops/hook\n", "notify[0]", 2),
    ("heartbeat: hc-ping.com/abc\n", "heartbeat", 1),
    ("heartbeat: ftp://hc-ping.com/abc\n", "heartbeat", 1),
    ("timeout: 5m\nheartbeat:\n  - https://hc-ping.com/abc\n", "heartbeat", 2),
    ("heartbeat: 'https:///no-host'\n", "heartbeat", 1),
])
def test_bad_values_name_file_line_key_and_value(tmp_path: Path, text: str, key: str,
                                                 line: int) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    assert info.value.key == key and info.value.exit_code == 2
    assert str(info.value).startswith(f"{cfg}:{line}: {key}: "), str(info.value)
    assert "(got " in str(info.value)
