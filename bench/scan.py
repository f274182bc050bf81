#!/usr/bin/env python3
"""How long users wait for `loop-verify list --json`, against the floors it cannot beat.

    python bench/scan.py [--tasks 5000,20000] [--runs 7] [--check]

For each size, builds a temporary git repository with a `backlog/config.yml` and N task files in
the Backlog.md CLI's exact format (Appendix A of notes/backlog-md.md: 5:2:3 To Do/In Progress/
Done, labels on every Done task, Description + AC, NOTES with `verify-cmd` on every third Done
task; random.seed(42)). Then times, in the same run and interleaved (so the machine's other load
falls on all alike), each as a whole process:

  list       <venv>/bin/loop-verify list --json --repo REPO     (the command users run)
  cat        cat backlog/tasks/*                                 (one process: the read floor)
  help       <venv>/bin/loop-verify --help
  empty      <venv>/bin/loop-verify list --json --repo EMPTY     (a backlog without tasks)
  bare       <venv>/bin/loop-verify list --repo EMPTY            (and no configuration file)
  python     <venv>/bin/python -c pass                           (the interpreter floor)

Each command runs once to warm caches (and write bytecode, as an install would), then --runs
times; the best run counts (other load only ever adds time) and the median is shown too, with
the best CPU time (user + system) for reading on a busy machine. Goals, on wall-clock time
(issues 13 and 19): list within 2x of cat at every size; help and an empty list (both forms)
within 2x of python. `--check` exits 1 when a goal is missed. `--tasks ''` times only the
start-up commands (help, empty, bare, python).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATUSES = ["To Do"] * 5 + ["In Progress"] * 2 + ["Done"] * 3
GOAL = 2.0
CONFIG_YML = ('project_name: "Bench"\ndefault_status: "To Do"\n'
              'statuses: ["To Do", "In Progress", "Done"]\nlabels: []\ntask_prefix: "task"\n')


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


def venv_bin() -> Path:
    """The folder of this interpreter's entry points (the venv's `loop-verify`)."""
    found = Path(sys.executable).parent / "loop-verify"
    if not found.exists():
        sys.exit(f"bench/scan.py: no {found}; run it with the venv's python (make setup)")
    return found.parent


def run(argv: Sequence[str], cwd: Path, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, "NO_COLOR": "1", **(extra_env or {})}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if extra_env is not None:
        env.pop("LOOP_JOBS_CONFIG", None)
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, check=True, env=env)


def build(repo: Path, n: int) -> list[str]:
    """The repository with n tasks; the task paths relative to it."""
    (repo / "backlog" / "tasks").mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], repo)
    (repo / "backlog" / "config.yml").write_text(CONFIG_YML)
    rng = random.Random(42)
    names = []
    for i in range(1, n + 1):
        name, text = task_text(i, rng.choice(STATUSES), rng)
        (repo / "backlog" / "tasks" / name).write_text(text)
        names.append(f"backlog/tasks/{name}")
    return sorted(names)


# A command: its argument vector, working directory and, when set, the environment variables
# that replace the caller's configuration (then $LOOP_JOBS_CONFIG is dropped too).
Command = tuple[list[str], Path, dict[str, str] | None]


def measure(commands: dict[str, Command],
            runs: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall-clock and CPU (user + system) seconds of each run of each command."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for argv, cwd, env in commands.values():
        run(argv, cwd, env)  # warm-up
    for _ in range(runs):
        for name, (argv, cwd, env) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            run(argv, cwd, env)
            times[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return times, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", default="5000,20000", help="sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    sizes = [int(n) for n in args.tasks.split(",") if n.strip()]
    bin_dir = venv_bin()
    verify, python = str(bin_dir / "loop-verify"), str(bin_dir / "python")
    missed = []
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        base = Path(tmp)
        config = base / "config.yaml"
        config.write_text(f"state_dir: {base / 'state'}\ntimezone: UTC\n")
        listing = [verify, "list", "--json", "--config", str(config), "--today", "2026-11-30"]
        empty = base / "empty"
        build(empty, 0)
        # No configuration file: where loop-verify looks for one is an empty folder, and its
        # state (the log) goes to the temporary folder, not the caller's.
        bare_env = {"XDG_CONFIG_HOME": str(base / "no-config"), "XDG_STATE_HOME": str(base),
                    "HOME": str(base)}
        commands: dict[str, Command] = {
            "python": ([python, "-c", "pass"], base, None),
            "help": ([verify, "--help"], base, None),
            "empty": ([*listing, "--repo", str(empty)], base, None),
            "bare": ([verify, "list", "--repo", str(empty)], base, bare_env),
        }
        for n in sizes:
            repo = base / f"repo-{n}"
            paths = build(repo, n)
            env_size = sum(len(k) + len(v) + 2 for k, v in os.environ.items())
            room = os.sysconf("SC_ARG_MAX") - env_size
            if sum(len(p) + 1 for p in paths) > room:
                sys.exit(f"bench/scan.py: {n} paths are too long for one cat")
            commands[f"list {n}"] = ([*listing, "--repo", str(repo)], base, None)
            commands[f"cat {n}"] = (["cat", *paths], repo, None)
        times, cpu = measure(commands, args.runs)
    best = {name: min(t) for name, t in times.items()}
    print(f"loop-verify list benchmark: whole processes, best (median) of {args.runs} runs; "
          "CPU = user + system time (best), which the machine's other load disturbs least")
    for name, t in times.items():
        print(f"  {name:12} {best[name] * 1000:7.0f} ms  ({statistics.median(t) * 1000:.0f} ms)"
              f"   CPU {min(cpu[name]) * 1000:6.0f} ms")
    goals = [(f"list {n} / cat {n}", best[f"list {n}"] / best[f"cat {n}"]) for n in sizes]
    goals += [("help / python", best["help"] / best["python"]),
              ("empty list / python", best["empty"] / best["python"]),
              ("bare empty list / python", best["bare"] / best["python"])]
    for label, ratio in goals:
        ok = ratio <= GOAL
        if not ok:
            missed.append(label)
        print(f"  {label:26} {ratio:5.2f}x  (goal <= {GOAL:.0f}x: {'met' if ok else 'MISSED'})")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
