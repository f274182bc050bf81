"""Every audit test keeps its ledger (the default SQLite file in `state_dir`, where the audit
seals its evidence) and its configuration lookup inside its own temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
