"""What the recipe runner itself adds to each recipe: starting it in its own session, waiting for
it, and making sure nothing it started is left (one look at the process table after a normal
exit).

Baseline: `just verify-noop` run N times with subprocess.run in a new session. Then the same N
times through `jobs.process.recipe.run_recipe`. Each is measured --rounds times; the best round
counts (the machine's other load only ever adds time). Goal: <= 5 ms per recipe.

Run:  .venv/bin/python bench/runner_overhead.py [--recipes N] [--rounds R] [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Time the command as an installed one runs, with its bytecode cached: some machines (this
# project's CI) set PYTHONDONTWRITEBYTECODE, which would make every run compile from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.path.insert(0, str(ROOT))

from jobs.process.recipe import run_recipe  # noqa: E402

GOAL_MS = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when the goal is missed")
    args = parser.parse_args()
    just = shutil.which("just", path=os.pathsep.join([str(ROOT / ".venv" / "bin"),
                                                      os.environ.get("PATH", "")]))
    if just is None:
        sys.exit("just not found")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        justfile = root / "justfile"
        justfile.write_text("verify-noop:\n    @true\n")
        argv = [just, "--justfile", str(justfile), "--working-directory", str(root),
                "verify-noop"]
        base, ours = [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.recipes):
                subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               start_new_session=True)
            base.append((time.perf_counter() - start) / args.recipes * 1000)
            start = time.perf_counter()
            for n in range(args.recipes):
                res = run_recipe(root, justfile, "verify-noop", timeout=30, kill_grace=1,
                                 output_path=root / f"out-{n}.log", just=just)
                if res.exit_code != 0:
                    sys.exit(f"the recipe failed: {res}")
            ours.append((time.perf_counter() - start) / args.recipes * 1000)
    overhead = min(o - b for o, b in zip(ours, base, strict=True))
    verdict = "ok" if overhead <= GOAL_MS else "OVER GOAL"
    print(f"{args.recipes} recipes, best of {args.rounds} rounds")
    print(f"  `just verify-noop` alone  {min(base):6.1f} ms/recipe")
    print(f"  through run_recipe        {min(ours):6.1f} ms/recipe")
    print(f"  runner overhead: {overhead:.1f} ms/recipe (goal <= {GOAL_MS:.0f} ms): {verdict}")
    print(f"  ratio run_recipe / alone: {min(ours) / min(base):.2f}x")
    return 1 if args.check and overhead > GOAL_MS else 0


if __name__ == "__main__":
    raise SystemExit(main())
