"""`loop-verify doctor` as a new user first meets it: no configuration file yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.main import main as verify_main


def test_without_repositories_the_fix_is_one_doctor_can_take(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """doctor has no --repo: its fix names the file to write, not an option it would refuse."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("LOOP_JOBS_CONFIG", raising=False)
    assert verify_main(["doctor"]) == 1
    out = capsys.readouterr().out
    looked = tmp_path / "config" / "loop-jobs" / "config.yaml"
    assert f"FAIL repositories: none configured in {looked}" in out, out
    assert f"fix: no configuration file at {looked}; create it with a `repos:` list" in out, out
    assert "--repo" not in out, out
