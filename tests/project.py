"""Where the tests find the project's own files, wherever in tests/ a module stands."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "backlog-fixtures"
# The shared reference material beside the project (../shared), absent on a bare clone.
SHARED = ROOT.parent / "shared"
CORPORA = SHARED / "corpora" / "backlog"
