"""A big ledger stays a light report: rows beyond the open ones collapsed, failures beyond the
listed ones counted and said, a long window in weeks. The ledger is bench/review.py's."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from project import ROOT


def load_bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_review", ROOT / "bench" / "review.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_big_ledger_collapses_and_says_what_it_left_out(tmp_path: Path) -> None:
    bench = load_bench()
    ledger = tmp_path / "ledger.db"
    bench.build_ledger(ledger, 20_000, 30)  # type: ignore[attr-defined]
    config = tmp_path / "config.yaml"
    config.write_text(f"ledger: sqlite:///{ledger}\ntimezone: UTC\nstate_dir: {tmp_path}\n")
    out = tmp_path / "review.html"
    done = subprocess.run(
        [sys.executable, "-m", "jobs.main", "review", "--config", str(config), "--since",
         "2026-07-01", "--until", "2026-11-30", "--out", str(out)],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "One square per week" in page
    # 20 repositories x 50 tasks: 200 rows open, the other 800 collapsed.
    assert "<details><summary>800 more row(s)</summary>" in page
    assert page.count("<article class=\"failure") == 100
    assert "<details><summary>2000 older failing attempt(s)</summary>" in page
    assert "older failing attempt(s) are not listed: narrow the window" in page
    assert "the output file is on another machine (ci-box)" in page
    assert "Audit runs (30)" in page
    # Light: a few MB at most for a 20,000-attempt window.
    assert out.stat().st_size < 4_000_000
