#!/usr/bin/env python3
"""How fast loop-verify reads a big backlog, against the Backlog.md CLI and the raw read floor.

    python bench/scan.py [--tasks 5000] [--runs 5] [--check]

Builds a temporary git repository with `backlog init` and N task files in the CLI's exact format
(Appendix A of notes/backlog-md.md: 5:2:3 To Do/In Progress/Done, labels on every Done task,
Description + AC, NOTES with `verify-cmd` on every third Done task; random.seed(42)), then times,
in the same run, each as a whole process (interpreter start-up included):

  ours   python -c 'from jobs.backlog import scan; scan(root)'
  cli    backlog task list --plain
  floor  cat backlog/tasks/* > /dev/null   (one `cat` process, every path as an argument)

Python runs with bytecode caching on (the warm-up run writes `__pycache__`, as installing the
package would). It prints the median, min and max of each (one warm-up run discarded) and the
ratios; the goals are: ours at least 20x faster than the CLI listing, and within 5x of the
read floor. `--check` exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATUSES = ["To Do"] * 5 + ["In Progress"] * 2 + ["Done"] * 3


def task_text(i: int, status: str, rng: random.Random) -> tuple[str, str]:
    title = f"Synthetic task {i} for timing"
    upd = "updated_date: '2026-11-02 09:00'\n" if status != "To Do" else ""
    if status == "Done":
        day = rng.randint(1, 28)
        items = [f"  - 'verify:2026-11-{day:02d}'", "  - infra"]
        lab = "labels:\n" + "\n".join(items)
    else:
        lab = "labels: []"
    body = (f"## Description\n\n<!-- SECTION:DESCRIPTION:BEGIN -->\nTask {i} exists so the scan "
            f"has something to read.\nIt has two lines.\n<!-- SECTION:DESCRIPTION:END -->\n\n"
            f"## Acceptance Criteria\n<!-- AC:BEGIN -->\n- [x] #1 First criterion\n"
            f"- [ ] #2 Second criterion\n<!-- AC:END -->")
    if status == "Done" and i % 3 == 0:
        body += (f"\n\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
                 f"verify-cmd: just verify-t{i}\n<!-- SECTION:NOTES:END -->")
    text = (f"---\nid: TASK-{i}\ntitle: {title}\nstatus: {status}\nassignee: []\n"
            f"created_date: '2026-11-01 08:00'\n{upd}{lab}\ndependencies: []\n"
            f"ordinal: {i * 1000}\n---\n\n{body}\n")
    return f"task-{i} - {title.replace(' ', '-')}.md", text


def find_backlog() -> str:
    for candidate in (shutil.which("backlog"), ROOT / ".npm-prefix/node_modules/.bin/backlog"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    sys.exit("bench/scan.py: the backlog CLI is not installed (make setup)")


def run(argv: Sequence[str], cwd: Path) -> None:
    # An installed package has its bytecode compiled; let the warm-up run write it here too.
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, check=True, env=env)


def timed(argv: Sequence[str], cwd: Path, runs: int) -> list[float]:
    run(argv, cwd)  # warm-up: page cache, the CLI's own caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run(argv, cwd)
        times.append(time.perf_counter() - start)
    return times


def build(repo: Path, n: int, cli: str) -> None:
    repo.mkdir()
    run(["git", "init", "-q", "-b", "main"], repo)
    run([cli, "init", "Bench", "--defaults", "--integration-mode", "none"], repo)
    rng = random.Random(42)
    tasks = repo / "backlog" / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for i in range(1, n + 1):
        name, text = task_text(i, rng.choice(STATUSES), rng)
        (tasks / name).write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    cli = find_backlog()
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo, args.tasks, cli)
        paths = sorted(str(p.relative_to(repo)) for p in (repo / "backlog/tasks").iterdir())
        arg_bytes = sum(len(p) + 1 for p in paths)
        if arg_bytes > os.sysconf("SC_ARG_MAX") // 2:
            sys.exit(f"bench/scan.py: {arg_bytes} bytes of paths is too much for one cat")
        code = ("import sys; from pathlib import Path; from jobs.backlog import scan; "
                "s = scan(Path(sys.argv[1])); assert len(s.tasks) == int(sys.argv[2]), "
                "(len(s.tasks), s.errors[:3])")
        ours = timed([sys.executable, "-c", code, str(repo), str(args.tasks)], ROOT, args.runs)
        floor = timed(["cat", *paths], repo, args.runs)
        listing = timed([cli, "task", "list", "--plain"], repo, max(3, args.runs // 2))
    med = {name: statistics.median(t) for name, t in
           (("ours", ours), ("cli", listing), ("floor", floor))}
    print(f"backlog scan benchmark: {args.tasks} tasks, median of {args.runs} runs "
          f"(CLI: {max(3, args.runs // 2)}), whole processes")
    for name, label, t in (("ours", "jobs.backlog.scan (python -c)", ours),
                           ("cli", "backlog task list --plain", listing),
                           ("floor", "cat backlog/tasks/* (one process)", floor)):
        print(f"  {label:36} {med[name] * 1000:8.0f} ms   (min {min(t) * 1000:.0f}, "
              f"max {max(t) * 1000:.0f})")
    faster = med["cli"] / med["ours"]
    over_floor = med["ours"] / med["floor"]
    ok_cli = faster >= 20
    ok_floor = over_floor <= 5
    print(f"  ours vs CLI:   {faster:5.1f}x faster   (goal >= 20x: "
          f"{'met' if ok_cli else 'MISSED'})")
    print(f"  ours vs floor: {over_floor:5.1f}x slower   (goal <= 5x: "
          f"{'met' if ok_floor else 'MISSED'})")
    return 0 if (ok_cli and ok_floor) or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
