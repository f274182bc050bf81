#!/usr/bin/env python3
"""How fast `loop-verify review` reports from a big ledger, as a whole process.

    python bench/review.py [--attempts 100000] [--runs 5000] [--audits 1000] [--repeat 5] [--check]

Builds a temporary SQLite ledger (random.seed(7)) of a year of a busy team: R runs over 365 days
on two machines (no run on every 30th day), N attempts shared among them across 20 repositories
× 50 tasks, each repository cloned on both machines under different paths (one identity, from
the claims), labels that change monthly (so failures repeat: "still failing since"), mostly
passes with fail, timeout, error, drift, interrupted, skipped, refused and locked mixed in, the
failures with their task's summary, every output on a machine that is not this one, and M audit
runs with 12 findings each (a fifth failing). Then times `python -m jobs.main review` as a whole
process, interpreter start-up included (one warm-up run discarded), for the default 30-day
window and for the whole year, and prints the median, min and max and the report's size. The
goal: each median under 2 s and each report under 5 MB. `--check` exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Time the command as an installed one runs, with its bytecode cached: some machines (this
# project's CI) set PYTHONDONTWRITEBYTECODE, which would make every run compile from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.path.insert(0, str(ROOT))

from jobs.ledger.audits import AuditFinding, AuditRun, ensure_audit_tables, insert_audit_run  # noqa: E402
from jobs.ledger.rows import claims, runs  # noqa: E402
from jobs.ledger.store import Ledger, attempts  # noqa: E402

GOAL_S = 2.0
GOAL_BYTES = 5_000_000
END = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DAYS = 365
MACHINES = {"ci-box": "/srv/elsewhere", "studio-mac": "/Users/someone/src"}
MIX = (["pass"] * 83 + ["fail"] * 6 + ["timeout"] * 3 + ["error"] * 2 + ["drift"]
       + ["interrupted"] + ["skipped"] * 2 + ["refused"] + ["locked"])
SUMMARY = ("verify-failed {at}: `just verify-t{task}` exited 1 after 12.0s (timeout 10m)\n"
           "last lines of output:\n" + "".join(f"    line {i} of the recipe's output\n"
                                                for i in range(12))
           + "full output: /srv/elsewhere/state/runs/{run}/repo-{repo}-TASK-{task}.log")


def build_ledger(path: Path, n_attempts: int, n_audits: int, n_runs: int = 5000,
                 end: datetime = END, days: int = DAYS) -> None:
    rng = random.Random(7)
    ledger = Ledger(f"sqlite:///{path}")
    # Every 30th day has no run; the runs are spread over the others.
    run_days = [d for d in range(days) if d % 30 != 7]
    run_rows, rows, claim_rows = [], [], []
    per_run = max(1, n_attempts // max(1, n_runs))
    for r in range(n_runs):
        day = run_days[r * len(run_days) // n_runs]
        started = (end - timedelta(days=day, seconds=rng.randrange(6 * 3600))).replace(
            tzinfo=None)
        machine = "ci-box" if r % 3 else "studio-mac"
        counts: dict[str, int] = {}
        count = per_run if r < n_runs - 1 else n_attempts - per_run * (n_runs - 1)
        for k in range(count):
            verdict = rng.choice(MIX)
            counts[verdict] = counts.get(verdict, 0) + 1
            repo, task = rng.randrange(20), rng.randrange(50)
            at = started + timedelta(seconds=k * 12)
            clone = f"{MACHINES[machine]}/repo-{repo}"
            # The label moves monthly: a task failing on several mornings of one month
            # is "still failing".
            label = (end - timedelta(days=(day // 30) * 30)).date().isoformat()
            failing = verdict in ("fail", "timeout")
            written = verdict in ("pass", "fail", "timeout")
            rows.append({
                "run_id": f"run-{r}", "started_at": at, "ended_at": at + timedelta(seconds=12),
                "repo": clone, "task_id": f"TASK-{task}",
                "task_path": f"backlog/tasks/task-{task} - Check-{task}.md",
                "label_date": label, "recipe": f"verify-t{task}", "verdict": verdict,
                "reason": None if written else f"{verdict} for a reason",
                "exit_code": 0 if verdict == "pass" else 1, "duration": 12.0,
                "output_path": f"/srv/elsewhere/state/runs/run-{r}/repo-{repo}-TASK-{task}.log",
                "commit_sha": f"{len(rows):040x}" if written and len(rows) % 7 else None,
                "edit_state": "committed" if written else "none", "edit_paths": "[]",
                "machine": machine,
                "summary": SUMMARY.format(at=at.isoformat(), task=task, run=r, repo=repo)
                if failing else None})
            if written:
                claim_rows.append({
                    "key": f"{len(rows):064x}", "identity": f"github.com/acme/repo-{repo}",
                    "task_id": f"TASK-{task}", "label_date": label, "machine": machine,
                    "run_id": f"run-{r}", "repo": clone, "claimed_at": at,
                    "expires_at": at + timedelta(minutes=15), "finished_at": at,
                    "verdict": verdict})
        exit_code = (1 if counts.keys() & {"fail", "timeout", "drift"} else
                     3 if counts.keys() & {"error", "interrupted", "skipped", "locked"} else 0)
        run_rows.append({"run_id": f"run-{r}", "machine": machine, "config": "/etc/loop.yaml",
                         "trigger": "launchd" if machine == "studio-mac" else "systemd",
                         "started_at": started,
                         "ended_at": started + timedelta(seconds=12 * count + 3),
                         "exit_code": exit_code, "counts": json.dumps(counts, sort_keys=True)})
    with ledger.engine.begin() as conn:
        conn.execute(attempts.insert(), rows)
        conn.execute(runs.insert(), run_rows)
        conn.execute(claims.insert(), claim_rows)
    ensure_audit_tables(ledger.engine)
    for i in range(n_audits):
        when = end - timedelta(seconds=rng.randrange(days * 86400))
        repo = f"/srv/elsewhere/repo-{i % 20}"
        bad = i % 5 == 0
        findings = [AuditFinding(repo, "origin", "refs/heads/main", "commit", None, None,
                                 f"{i * 100 + k:040x}",
                                 "UNGRANTED" if bad and k == 0 else "PUSH_LOGGED",
                                 "a push the log never saw" if bad and k == 0 else "logged")
                    for k in range(12)]
        insert_audit_run(ledger.engine, AuditRun(
            recorded_at=when, command="closeout", verdict="fail" if bad else "pass",
            exit_code=1 if bad else 0, repos={repo: {"origin": f"git@github.com:acme/r{i % 20}"}},
            machine="ci-box", run_dir=f"/srv/elsewhere/runs/{i}", charter_sha256="ab" * 32,
            findings=findings))
    ledger.close()


def time_review(config: Path, out: Path, days: int) -> tuple[float, float]:
    since = (END - timedelta(days=days)).isoformat()
    argv = [sys.executable, "-m", "jobs.main", "review", "--config", str(config),
            "--since", since, "--until", END.isoformat(), "--out", str(out)]
    cpu_before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"review failed ({done.returncode}): {done.stderr}")
    return took, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ledger = base / "ledger.db"
        built = time.perf_counter()
        build_ledger(ledger, args.attempts, args.audits, args.runs)
        print(f"ledger: {args.attempts} attempts, {args.runs} runs, {args.audits} audit runs "
              f"over {DAYS} days (built in {time.perf_counter() - built:.1f}s)")
        config = base / "config.yaml"
        config.write_text(f"ledger: sqlite:///{ledger}\ntimezone: UTC\n"
                          f"state_dir: {base / 'state'}\n")
        for days in (30, DAYS):
            out = base / f"review-{days}.html"
            time_review(config, out, days)  # warm-up: bytecode caches, the ledger's indexes
            timed = [time_review(config, out, days) for _ in range(args.repeat)]
            times = [wall for wall, _cpu in timed]
            median = statistics.median(times)
            cpu = statistics.median(c for _wall, c in timed)
            size = out.stat().st_size
            # Wall-clock is the goal; the CPU time and the load say how much of it was waiting.
            print(f"review, {days}-day window, whole process: median {median:.2f}s "
                  f"(min {min(times):.2f}s, max {max(times):.2f}s, {args.repeat} runs; "
                  f"CPU {cpu:.2f}s; load average {os.getloadavg()[0]:.1f}); "
                  f"report {size / 1024:.0f} KiB")
            if median >= GOAL_S or size >= GOAL_BYTES:
                print(f"MISS: the goal is under {GOAL_S:.0f} s and {GOAL_BYTES // 10**6} MB")
                missed = True
            else:
                print(f"ok: under {GOAL_S:.0f} s and {GOAL_BYTES // 10**6} MB")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
