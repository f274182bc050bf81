"""Where the tests find the project's own files, wherever in tests/ a module stands."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "backlog-fixtures"
# The shared reference material beside the project (../shared; ../../shared from a git worktree
# kept in a folder beside the main checkout), absent on a bare clone.
SHARED = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()),
              ROOT.parent / "shared")
CORPORA = SHARED / "corpora" / "backlog"
