"""Benchmark loop-pi-audit closeout on a big run.

For each N (default 2,000 and 20,000) it builds, with one `git fast-import`, a repository whose
default branch gains N commits during a run -- most in logged pushes, some backlog-only, some
another session's work under a logged push, a few a push the log never saw -- while 200 other
branches move (150 logged, 50 not). It then times `loop-pi-audit closeout` as a whole process
against the floor measured in the same run (`git rev-list` + `git log --name-only` over the same
range), and counts the git processes closeout starts (a counting `git` shim first on PATH) to
show that the count does not grow with N.

Usage: python bench/audit.py [N ...]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 100  # commits per logged push
OTHER_REFS = 200
UNGRANTED_TAIL = 5
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "LOOP_PI_GIT_TIMEOUT": "120",
}
for _var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL", "LOOP_PI_RUN_DIR"):
    ENV.pop(_var, None)


def git(repo: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=input,
                          capture_output=True, env=ENV, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {done.stderr.decode()}")
    return done.stdout.decode()


def audit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "audit.main", *args],
                          capture_output=True, env=env or ENV, cwd=ROOT, check=False)


def kind_of_chunk(i: int) -> str:
    """Every tenth chunk another session's (foreign), every tenth backlog-only; the rest logged."""
    return {3: "foreign", 7: "backlog"}.get(i % 10, "logged")


def fast_import_stream(base: str, n: int) -> bytes:
    out: list[bytes] = [b"reset refs/heads/main\nfrom " + base.encode() + b"\n\n"]
    for k in range(n):
        chunk = k // CHUNK
        tail = k >= n - UNGRANTED_TAIL
        kind = "ungranted" if tail else kind_of_chunk(chunk)
        msg = f"{kind} change {k}\n"
        if kind == "foreign":
            msg += "\nClaude-Session: other-session\n"
        elif kind == "logged":
            msg += "\nClaude-Session: bench-session\n"
        path = (f"backlog/tasks/task-{k % 500}.md" if kind == "backlog"
                else f"src/mod{k % 97}/file{k % 13}.py")
        body = f"{k}\n".encode()
        data = msg.encode()
        out.append(b"commit refs/heads/main\nmark :%d\n" % (k + 1))
        out.append(b"committer Bench <bench@example.invalid> %d +0000\n" % (1_700_000_000 + k))
        out.append(b"data %d\n%s" % (len(data), data))
        out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(body), body))
    return b"".join(out)


def build(work: Path, n: int) -> tuple[Path, Path, str, str]:
    """The repository, its run directory, and main before and after the run."""
    bare = work / "remote.git"
    clone = work / "clone"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)],
                   check=True, env=ENV)
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True,
                   env=ENV)
    (clone / "README.md").write_text("bench\n")
    git(clone, "add", "README.md")
    git(clone, "commit", "-q", "-m", "initial")
    base = git(clone, "rev-parse", "HEAD").strip()
    git(clone, "remote", "add", "origin", str(bare))
    git(clone, "push", "-q", "origin", "main",
        *[f"{base}:refs/heads/side/{i:03d}" for i in range(OTHER_REFS)])
    run_dir = work / "run"
    charter = work / "charter.md"
    charter.write_text("# Charter: bench/repo loop1\nsession: bench-session\n")
    done = audit("begin", str(clone), "--charter", str(charter), "--run-dir", str(run_dir))
    if done.returncode != 0:
        raise SystemExit(f"begin failed: {done.stderr.decode()}")

    marks = work / "marks"
    git(clone, "fast-import", "--quiet", f"--export-marks={marks}",
        input=fast_import_stream(base, n))
    sha_of = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        sha_of[int(mark[1:])] = sha
    after = sha_of[n]
    # The run's pushes, as the pre-push hook would have logged them: one per logged chunk,
    # each starting where the remote then stood (so foreign and backlog chunks are gaps).
    entries: list[dict[str, str]] = []
    stood = base
    for chunk in range((n - UNGRANTED_TAIL + CHUNK - 1) // CHUNK):
        last = min((chunk + 1) * CHUNK, n - UNGRANTED_TAIL)
        if kind_of_chunk(chunk) == "logged":
            entries.append(entry(clone, "refs/heads/main", stood, sha_of[last]))
        stood = sha_of[last]
    moves = []
    for i in range(OTHER_REFS):
        target = sha_of[1 + (i * 37) % n]
        moves.append(f"{target}:refs/heads/side/{i:03d}")
        if i % 4 != 3:
            entries.append(entry(clone, f"refs/heads/side/{i:03d}", base, target))
    git(clone, "push", "-q", "origin", "main", *moves)
    with (run_dir / "push-log.jsonl").open("w") as fh:
        for e in entries:
            fh.write(json.dumps(e, sort_keys=True) + "\n")
    return clone, run_dir, base, after


def entry(clone: Path, ref: str, old: str, new: str) -> dict[str, str]:
    return {"repo": str(clone), "remote": "origin", "ref": ref, "old": old, "new": new,
            "at": "2026-11-30T07:00:00Z", "source": "bench"}


def timed(fn: object) -> float:
    start = time.perf_counter()
    assert callable(fn)
    fn()
    return time.perf_counter() - start


def counting_env(work: Path) -> tuple[dict[str, str], Path]:
    real = shutil.which("git", path=ENV.get("PATH"))
    if real is None:
        raise SystemExit("git not found")
    bindir = work / "shim"
    bindir.mkdir()
    count = work / "git-calls"
    shim = bindir / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{count}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return {**ENV, "PATH": f"{bindir}{os.pathsep}{ENV.get('PATH', '')}"}, count


def bench(n: int) -> dict[str, float | int | str]:
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        clone, run_dir, before, after = build(work, n)
        built = time.perf_counter() - t0

        def floor() -> None:
            git(clone, "rev-list", after, f"^{before}")
            git(clone, "log", "--name-only", "--format=%H", after, f"^{before}")

        floor_s = min(timed(floor) for _ in range(3))
        result: list[subprocess.CompletedProcess[bytes]] = []
        # Best of three, like the floor: the machine is shared and closeout is idempotent.
        closeout_s = min(timed(lambda: result.append(
            audit("closeout", "--run-dir", str(run_dir), "--charter", str(work / "charter.md"),
                  "--json"))) for _ in range(3))
        if result[0].returncode not in (0, 1, 3):
            raise SystemExit(f"closeout failed: {result[0].stderr.decode()}")
        report = json.loads(result[0].stdout)
        verdicts: dict[str, int] = {}
        for f in report["findings"]:
            verdicts[f["verdict"]] = verdicts.get(f["verdict"], 0) + 1
        env, count = counting_env(work)
        counted = audit("closeout", "--run-dir", str(run_dir), "--charter",
                        str(work / "charter.md"), "--json", env=env)
        if counted.stdout != result[0].stdout:
            raise SystemExit("closeout gave a different report the second time")
        calls = count.read_text().splitlines()
        startup_s = min(timed(lambda: subprocess.run(
            [sys.executable, "-c", "import audit.commands.closeout"], cwd=ROOT, env=ENV,
            check=True)) for _ in range(2))
        return {"n": n, "build_s": built, "floor_s": floor_s, "closeout_s": closeout_s,
                "startup_s": startup_s,
                "ratio": closeout_s / floor_s, "git_processes": len(calls),
                "exit": result[0].returncode,
                "verdicts": ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items()))}


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [2_000, 20_000]
    rows = [bench(n) for n in sizes]
    print(f"{'commits':>8} {'closeout':>9} {'floor':>7} {'ratio':>6} {'startup':>8} "
          f"{'git procs':>9}  verdicts")
    for r in rows:
        print(f"{r['n']:>8} {r['closeout_s']:>8.2f}s {r['floor_s']:>6.2f}s "
              f"{r['ratio']:>5.1f}x {r['startup_s']:>7.2f}s {r['git_processes']:>9}  "
              f"{r['verdicts']} (exit {r['exit']})")
    print("(startup: the interpreter importing closeout, a fixed cost inside every closeout)")
    procs = {r["git_processes"] for r in rows}
    print("git processes " + ("do not grow with commits" if len(procs) == 1
                              else f"differ across sizes: {sorted(procs)}"))
    return 0 if len(procs) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
