"""The screenshot in docs/review.md: `loop-verify review` of the demo, in headless Chromium.

    .venv/bin/python scripts/review_screenshot.py [--out docs/review.png]

Runs `make demo`'s script (real loop-verify and loop-pi-audit runs on the bundled demo backlog, in
demo-run/), then adds the two weeks of mornings before it the way `run` records them — a run
each morning but one, the nightly backup task passing five mornings ago and failing since two —
reviews those two weeks and photographs the top of the page at 1280 px in Debian's Chromium.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jobs.core.host import default_machine  # noqa: E402
from jobs.ledger.model import Attempt, Run  # noqa: E402
from jobs.ledger.runs import read_runs, save_run  # noqa: E402
from jobs.ledger.store import Ledger  # noqa: E402
from jobs.verify.rules.transition import Outcome, written_note  # noqa: E402

DEMO = ROOT / "demo-run"
CHROMIUM = "/usr/bin/chromium"
DAYS = 14
NO_RUN = 4  # days ago
TAIL = "restoring last night's backup...\nchecksum mismatch in block 4711\n"
BACKUP = ("TASK-2", "backlog/tasks/task-2 - Nightly-backup-restore.md", "2026-11-15",
          "verify-backup")


def earlier_mornings(ledger_url: str, app: Path, now: datetime) -> None:
    machine = default_machine()
    book = Ledger(ledger_url)
    try:
        known = {r.run_id for r in read_runs(book)}
        # Today's runs, as `run` records them (where this version does not yet).
        today: dict[str, list[Attempt]] = {}
        for a in book.history(since=now.date()):
            today.setdefault(a.run_id, []).append(a)
        for run_id, found in today.items():
            if run_id in known:
                continue
            counts: dict[str, int] = {}
            for a in found:
                counts[a.verdict] = counts.get(a.verdict, 0) + 1
            failed = counts.keys() & {"fail", "timeout", "drift"}
            save_run(book, Run(run_id, machine, "manual", min(a.started_at for a in found),
                               ended_at=max(a.ended_at or a.started_at for a in found),
                               exit_code=1 if failed else 0, counts=counts))
        task, path, label, recipe = BACKUP
        for days in range(1, DAYS + 1):
            if days == NO_RUN:
                continue
            start = (now - timedelta(days=days)).replace(hour=7, minute=30, second=0)
            verdict = "fail" if days <= 2 else "pass"
            skipped = days == 6
            counts = {"pass": 2, verdict: 1} if verdict == "fail" else {"pass": 3}
            if skipped:
                counts = {"skipped": 1}
            run_id = f"demo-{days}"
            save_run(book, Run(run_id, machine, "launchd", start,
                               ended_at=start + timedelta(seconds=41),
                               exit_code=3 if skipped else 1 if verdict == "fail" else 0,
                               counts=counts))
            if skipped:
                book.save(Attempt(run_id, start, str(app), "skipped",
                                  ended_at=start + timedelta(seconds=1), machine=machine,
                                  reason="work tree not clean: notes.txt"))
                continue
            outcome = Outcome(verdict, recipe, exit_code=0 if verdict == "pass" else 2,
                              duration=38.0, timeout=3.0, tail=TAIL)
            book.save(Attempt(run_id, start, str(app), verdict,
                              ended_at=start + timedelta(seconds=38), task_id=task,
                              task_path=path, label_date=label, recipe=recipe,
                              exit_code=outcome.exit_code, duration=38.0, machine=machine,
                              summary=written_note(outcome, start + timedelta(seconds=38))))
    finally:
        book.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "review.png"))
    args = parser.parse_args()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    config = DEMO / "config.yaml"
    now = datetime.now(UTC)
    earlier_mornings(f"sqlite:///{DEMO / 'state' / 'ledger.db'}", DEMO / "app", now)
    page = DEMO / "review-screenshot.html"
    since = (now - timedelta(days=DAYS)).date().isoformat()
    subprocess.run([sys.executable, "-m", "jobs.main", "review", "--config", str(config),
                    "--since", since, "--out", str(page)], check=True, cwd=ROOT)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM,
                                     args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            shot = browser.new_page(viewport={"width": 1280, "height": 900})
            shot.goto(page.as_uri(), wait_until="load")
            height = shot.evaluate("document.querySelector('#unchecked').offsetTop")
            shot.screenshot(path=args.out, full_page=True,
                            clip={"x": 0, "y": 0, "width": 1280, "height": height})
        finally:
            browser.close()
    print(f"screenshot written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
