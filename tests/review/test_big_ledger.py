"""A big ledger stays a light report: timeline rows beyond the open ones folded to their counts,
failures beyond the detailed ones one line each, runs listed with every day that had none, a long
window in weeks, the two clones of each repository one group. The ledger is bench/review.py's."""

from __future__ import annotations

import importlib.util
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from project import ROOT
from review_helpers import plain_ledger, review_text

from jobs.ledger.model import Attempt
from jobs.review.model import DETAILED_FAILURES


def load_bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_review", ROOT / "bench" / "review.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_big_ledger_folds_and_says_what_it_left_out(tmp_path: Path) -> None:
    bench = load_bench()
    ledger = tmp_path / "ledger.db"
    bench.build_ledger(ledger, 20_000, 30, 1000)  # type: ignore[attr-defined]
    config = tmp_path / "config.yaml"
    config.write_text(f"ledger: sqlite:///{ledger}\ntimezone: UTC\nstate_dir: {tmp_path}\n")
    out = tmp_path / "review.html"
    done = subprocess.run(
        [sys.executable, "-m", "jobs.main", "review", "--config", str(config), "--since",
         "2026-07-01", "--until", "2026-11-29", "--out", str(out)],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    with sqlite3.connect(ledger) as db:
        window = "started_at >= '2026-07-01' AND started_at < '2026-11-30'"
        failing = db.execute(f"SELECT count(*) FROM attempts WHERE {window} "
                             "AND verdict IN ('fail', 'timeout', 'drift')").fetchone()[0]
        ran = {date.fromisoformat(d) for (d,) in db.execute(
            f"SELECT DISTINCT substr(started_at, 1, 10) FROM runs WHERE {window}")}
        audits = db.execute("SELECT count(*) FROM audit_runs WHERE recorded_at >= '2026-07-01' "
                            "AND recorded_at < '2026-11-30'").fetchone()[0]
    assert "One square per week" in page
    # 20 repositories x 50 tasks, each repository cloned on two machines: 20 groups, not 40.
    assert page.count('<tr class="repo"') == 4  # the groups of the 200 open rows
    assert '<option value="g19">' in page and '<option value="g20">' not in page
    assert "<details><summary>800 more row(s), counts only</summary>" in page
    assert page.count('<article class="failure') == 100
    assert f"<details><summary>{failing - 100} older failing attempt(s)</summary>" in page
    assert "still failing since" in page and ">new<" in page
    assert "the output file is on another machine (ci-box)" in page
    # Every day of the window without a run is listed, and marked in the grid.
    days = [date(2026, 7, 1) + timedelta(days=i) for i in range(152)]
    missing = [d for d in days if d not in ran]
    assert missing and len(re.findall(r'<tr class="norun">', page)) == len(missing)
    for day in missing:
        assert f"no run {day.isoformat()}" in page
    assert f"{len(missing)} day(s) without a run" in page
    assert f"Audit runs ({audits})" in page
    # Light: under 5 MB whatever the window holds.
    assert out.stat().st_size < 5_000_000


def test_markdown_lists_failures_beyond_the_detailed_ones_one_line_each(tmp_path: Path) -> None:
    # The Markdown report gave each of 2,100 failures its own section and summary, where the
    # page lists all but the newest 100 one line each: an incident document thousands of
    # sections long.
    config, ledger = plain_ledger(tmp_path)
    start = datetime(2026, 11, 1, 7, tzinfo=UTC)
    for n in range(DETAILED_FAILURES + 2):
        ledger.save(Attempt(f"run-{n}", start + timedelta(minutes=n), "/srv/app", "fail",
                            task_id=f"TASK-{n}", label_date="2026-10-01", machine="here",
                            commit_sha="a" * 40, summary=f"verify-failed summary-{n}\nmore"))
    ledger.close()
    text = review_text(config, "--since", "2026-11-01", "--until", "2026-11-02")
    assert text.count("\n### fail: ") == DETAILED_FAILURES
    assert f"summary-{DETAILED_FAILURES + 1}\n" in text and "summary-1\n" not in text
    [older] = [line for line in text.splitlines() if line.startswith("- ") and "TASK-1 " in line]
    assert older.startswith("- 2026-11-01 07:01 fail") and "verify-failed summary-1" in older
    assert "new" in older and "`aaaaaaaaaaaa`" in older
    assert "2 older failing attempt(s), one line each:" in text
