"""Paths in the configuration: a relative one is relative to the configuration file's folder
(the ledger's SQLite file too), and `~user` must name a user."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config.load import load_config
from jobs.core.errors import ConfigError
from jobs.main import main as verify_main


def test_relative_config_path_gives_absolute_paths(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("state_dir: state\nlog_file: logs/x.jsonl\n")
    monkeypatch.chdir(tmp_path)
    config = load_config("conf/config.yaml")
    assert config.state_dir == tmp_path / "conf" / "state"
    assert config.log_file == tmp_path / "conf" / "logs" / "x.jsonl"
    assert config.ledger == f"sqlite:///{tmp_path / 'conf' / 'state' / 'ledger.db'}"


def test_unknown_user_in_a_path_is_a_config_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    nobody = "~no-such-user-for-loop-verify"
    for text in (f"repos:\n  - path: {nobody}/app\n", f"state_dir: {nobody}/s\n"):
        cfg = tmp_path / "config.yaml"
        cfg.write_text(text)
        with pytest.raises(ConfigError):
            load_config(cfg)
    with pytest.raises(ConfigError):
        load_config(f"{nobody}/config.yaml")
    with pytest.raises(ConfigError):
        load_config(None, env={"LOOP_JOBS_CONFIG": f"{nobody}/config.yaml"})
    (tmp_path / "empty.yaml").write_text("state_dir: state\n")
    for args in (("list", "--repo", f"{nobody}/app"), ("history", "--repo", f"{nobody}/app")):
        assert verify_main([*args, "--config", str(tmp_path / "empty.yaml")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("loop-verify: ") and "cannot expand '~'" in err


def test_a_relative_sqlite_ledger_is_relative_to_the_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "conf" / "c.yaml"
    cfg.parent.mkdir()
    cfg.write_text("ledger: sqlite:///db/ledger.db\n")
    assert load_config(cfg, env={}).ledger == f"sqlite:///{tmp_path / 'conf' / 'db' / 'ledger.db'}"
    cfg.write_text("ledger: sqlite:////abs/ledger.db\n")
    assert load_config(cfg, env={}).ledger == "sqlite:////abs/ledger.db"
