"""Dates on the command line are YYYY-MM-DD only, for every verb that takes one."""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

from jobs.main import main as verify_main


def test_dates_on_the_command_line_are_yyyy_mm_dd_only(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = str(repo.config_path)
    for text in ("20261130", "2026-W48-1", "2026-334", "2026-02-30"):
        for args in (("run", "--today", text), ("list", "--today", text),
                     ("history", "--since", text)):
            assert verify_main([*args, "--config", config]) == 2, args
            assert "expected a date YYYY-MM-DD" in capsys.readouterr().err
    assert repo.subjects() == ["setup"]
