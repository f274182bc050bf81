"""Benchmark loop-pi-audit closeout on big runs, each against the git floor of the same run.

Scenarios (all timed as a whole `loop-pi-audit closeout` process, best of a few runs):

* unlogged: the default branch gains N commits none of which the push log saw (every one fails);
* logged:   the default branch gains N commits, every one in a logged push, while 200 other
  branches move (150 logged, 50 not): what a range a log entry covers costs. Its floor is the
  least a closeout that checks its objects must read: `git rev-list before..after | git cat-file
  --batch` plus `git ls-remote`;
* mixed:    as logged, but only most commits in logged pushes: some backlog-only, some another
  session's work under a logged push, five a push the log never saw (their paths, trailers and
  trees are read too);
* passing:  as mixed, with the five commits at main's tip logged too: main passes;
* tags:     N tags are added on the remote (and locally), every one logged.

The floor of mixed, passing and unlogged is what git alone needs for the same range (`git
rev-list` + `git log --name-only`); for tags, `git ls-remote` + `git for-each-ref`. Peak memory
is each process tree's maximum RSS (closeout with the git it starts; the floor's git). A counting
`git` shim first on PATH counts the git processes closeout starts: they may grow with changed
refs, never with commits or tags, so each scenario is also run at a tenth of its size and the
counts compared.

Each run is armed and sealed as a real one is: its own ledger, the push log sealed in it, and a
journal in the bare remote, so closeout's cost includes checking the seals and reading every
step. closeout runs the git `begin` recorded, so the counting git is the one a second run
directory, armed at the same moment, recorded.

Goals checked by `--check` (exit 1 when one is missed): 20,000 and 100,000 logged commits within
1.5x their floor; 8,000 logged tags under 1 s; peak memory at 100,000 mixed commits within 1.5x
the floor's; git process counts equal at both sizes of every scenario. (The issue also compares
1,000 unlogged commits against the public loop-pi-audit script; that script is not available
here, so that row prints its ratio to the git floor only.)

Usage: python bench/audit.py [--check] [--quick]
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
# Time the command as an installed one runs, with its bytecode cached: some machines (this
# project's CI) set PYTHONDONTWRITEBYTECODE, which would make every run compile from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
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



def own_ledger(work: Path) -> None:
    """This scenario's configuration and ledger (where begin seals the arm) in its own folder."""
    config = work / "config.yaml"
    config.write_text(f"state_dir: {work / 'state'}\n")
    ENV["LOOP_JOBS_CONFIG"] = str(config)


def journal(bare: Path) -> None:
    """The bare remote keeps a journal: closeout reads every step, not only the net change."""
    done = audit("journal", "install", str(bare))
    if done.returncode != 0:
        raise SystemExit(f"journal install failed: {done.stderr.decode()}")


def sealed_log(run_dir: Path, entries: list[dict[str, str]]) -> None:
    """The run's pushes as the pre-push hook logs them: sealed in the ledger, then appended."""
    sys.path.insert(0, str(ROOT))
    from audit.evidence.seal.pushes import record_pushes

    def fail(message: str) -> None:
        raise SystemExit(message)

    for where in (run_dir, run_dir.parent / "counted"):
        record_pushes(where, entries, ENV["LOOP_JOBS_CONFIG"], fail)


def arm(clone: Path, work: Path) -> Path:
    """`loop-pi-audit begin` on the clone with the bench's charter; the run directory. A second
    run directory, `counted`, is armed at the same moment with a git that counts its calls:
    closeout runs the git begin recorded, so that is the only way to count closeout's."""
    charter = work / "charter.md"
    charter.write_text("# Charter: bench/repo loop1\nsession: bench-session\n")
    env, _count = counting_env(work)
    for name, with_env in (("run", ENV), ("counted", env)):
        done = audit("begin", str(clone), "--charter", str(charter), "--run-dir",
                     str(work / name), env=with_env)
        if done.returncode != 0:
            raise SystemExit(f"begin failed: {done.stderr.decode()}")
    return work / "run"


def kind_of_chunk(i: int, every: bool = False) -> str:
    """Every tenth chunk another session's (foreign), every tenth backlog-only; the rest logged
    (`every`: all logged)."""
    return "logged" if every else {3: "foreign", 7: "backlog"}.get(i % 10, "logged")


def fast_import_stream(base: str, n: int, every: bool = False) -> bytes:
    out: list[bytes] = [b"reset refs/heads/main\nfrom " + base.encode() + b"\n\n"]
    for k in range(n):
        chunk = k // CHUNK
        tail = k >= n - UNGRANTED_TAIL and not every
        kind = "ungranted" if tail else kind_of_chunk(chunk, every)
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


def build(work: Path, n: int, logged: bool = True, tail_logged: bool = False,
          every: bool = False) -> tuple[Path, Path, str, str]:
    """The repository, its run directory, and main before and after the run. `tail_logged`:
    the last commits are logged too, so that main passes; `every`: every commit of main is in a
    logged push."""
    bare = work / "remote.git"
    clone = work / "clone"
    own_ledger(work)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)],
                   check=True, env=ENV)
    journal(bare)
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True,
                   env=ENV)
    (clone / "README.md").write_text("bench\n")
    git(clone, "add", "README.md")
    git(clone, "commit", "-q", "-m", "initial")
    base = git(clone, "rev-parse", "HEAD").strip()
    git(clone, "remote", "add", "origin", str(bare))
    git(clone, "push", "-q", "origin", "main",
        *[f"{base}:refs/heads/side/{i:03d}" for i in range(OTHER_REFS)])
    run_dir = arm(clone, work)

    marks = work / "marks"
    git(clone, "fast-import", "--quiet", f"--export-marks={marks}",
        input=fast_import_stream(base, n, every))
    sha_of = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        sha_of[int(mark[1:])] = sha
    after = sha_of[n]
    # The run's pushes, as the pre-push hook would have logged them: one per logged chunk,
    # each starting where the remote then stood (so foreign and backlog chunks are gaps).
    entries: list[dict[str, str]] = []
    stood = base
    tail = 0 if every else UNGRANTED_TAIL
    for chunk in range((n - tail + CHUNK - 1) // CHUNK):
        last = min((chunk + 1) * CHUNK, n - tail)
        if logged and kind_of_chunk(chunk, every) == "logged":
            entries.append(entry(clone, "refs/heads/main", stood, sha_of[last]))
        stood = sha_of[last]
    if tail_logged and not every:
        entries.append(entry(clone, "refs/heads/main", stood, after))
    moves = []
    for i in range(OTHER_REFS if logged else 0):
        target = sha_of[1 + (i * 37) % n]
        moves.append(f"{target}:refs/heads/side/{i:03d}")
        if i % 4 != 3:
            entries.append(entry(clone, f"refs/heads/side/{i:03d}", base, target))
    git(clone, "push", "-q", "origin", "main", *moves)
    sealed_log(run_dir, entries)
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
    bindir = work / "shim"
    count = work / "git-calls"
    if not bindir.exists():
        real = shutil.which("git", path=ENV.get("PATH"))
        if real is None:
            raise SystemExit("git not found")
        bindir.mkdir()
        shim = bindir / "git"
        shim.write_text(f'#!/bin/sh\necho "$*" >> "{count}"\nexec "{real}" "$@"\n')
        shim.chmod(0o755)
    return {**ENV, "PATH": f"{bindir}{os.pathsep}{ENV.get('PATH', '')}"}, count


def build_tags(work: Path, n: int) -> tuple[Path, Path, str, str]:
    """A clone and run whose only change is `n` new tags on the remote, each one logged."""
    clone, run_dir, base, _after = build_empty(work)
    stream = "".join(f"reset refs/tags/t{i:05d}\nfrom {base}\n\n" for i in range(n))
    git(clone, "fast-import", "--quiet", input=stream.encode())
    git(clone, "push", "-q", "origin", "refs/tags/*:refs/tags/*")
    sealed_log(run_dir, [entry(clone, f"refs/tags/t{i:05d}", "0" * 40, base)
                         for i in range(n)])
    return clone, run_dir, base, base


def build_empty(work: Path) -> tuple[Path, Path, str, str]:
    bare = work / "remote.git"
    clone = work / "clone"
    own_ledger(work)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, env=ENV)
    journal(bare)
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True, env=ENV)
    (clone / "README.md").write_text("bench\n")
    git(clone, "add", "README.md")
    git(clone, "commit", "-q", "-m", "initial")
    base = git(clone, "rev-parse", "HEAD").strip()
    git(clone, "remote", "add", "origin", str(bare))
    git(clone, "push", "-q", "origin", "main")
    run_dir = arm(clone, work)
    return clone, run_dir, base, base


def measured(argv: list[str], env: dict[str, str], cwd: Path | None = None
             ) -> tuple[float, int, bytes, int, float]:
    """Run argv; its wall time, exit code, stdout, peak RSS in KiB and CPU seconds (user +
    system), the last two over the process and every child it waited for."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=cwd)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, proc.returncode, out, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def bench(scenario: str, n: int, runs: int = 3) -> dict[str, float | int | str]:
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as tmp:
        work = Path(tmp)
        if scenario == "tags":
            clone, run_dir, before, after = build_tags(work, n)
            floor_sh = (f'git -C "{clone}" ls-remote origin >/dev/null && '
                        f'git -C "{clone}" for-each-ref refs/tags >/dev/null')
        elif scenario == "logged":
            clone, run_dir, before, after = build(work, n, every=True)
            floor_sh = (f'git -C "{clone}" rev-list {after} ^{before} | '
                        f'git -C "{clone}" cat-file --batch >/dev/null && '
                        f'git -C "{clone}" ls-remote origin >/dev/null')
        else:
            clone, run_dir, before, after = build(work, n, logged=scenario != "unlogged",
                                                  tail_logged=scenario == "passing")
            floor_sh = (f'git -C "{clone}" rev-list {after} ^{before} >/dev/null && '
                        f'git -C "{clone}" log --name-only --format=%H {after} ^{before} '
                        '>/dev/null')
        floors = [measured(["sh", "-c", floor_sh], ENV) for _ in range(runs)]
        argv = [sys.executable, "-m", "audit.main", "closeout", "--run-dir", str(run_dir),
                "--charter", str(work / "charter.md"), "--json"]
        closeouts = [measured(argv, ENV, cwd=ROOT) for _ in range(runs)]
        first = closeouts[0]
        if first[1] not in (0, 1, 3):
            raise SystemExit(f"closeout failed with exit {first[1]}")
        if any(c[2] != first[2] for c in closeouts):
            raise SystemExit("closeout gave different reports for the same run")
        report = json.loads(first[2])
        verdicts: dict[str, int] = {}
        for f in report["findings"]:
            verdicts[f["verdict"]] = verdicts.get(f["verdict"], 0) + f.get("count", 1)
        env, count = counting_env(work)
        count.unlink(missing_ok=True)
        audit("closeout", "--run-dir", str(work / "counted"), "--charter",
              str(work / "charter.md"), "--json", env=env)
        floor_s = min(f[0] for f in floors)
        closeout_s = min(c[0] for c in closeouts)
        floor_cpu = min(f[4] for f in floors)
        closeout_cpu = min(c[4] for c in closeouts)
        return {"scenario": scenario, "n": n, "floor_s": floor_s, "closeout_s": closeout_s,
                "floor_cpu": floor_cpu, "closeout_cpu": closeout_cpu,
                "ratio": closeout_s / floor_s, "cpu_ratio": closeout_cpu / max(floor_cpu, 1e-3),
                "floor_kib": max(f[3] for f in floors),
                "closeout_kib": max(c[3] for c in closeouts),
                "git_processes": len(count.read_text().splitlines()),
                "findings": len(report["findings"]), "exit": first[1],
                "verdicts": ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items()))}


SCENARIOS = (("unlogged", 1_000), ("logged", 20_000), ("logged", 100_000), ("mixed", 20_000),
             ("passing", 20_000), ("mixed", 100_000), ("tags", 8_000))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    quick = "--quick" in argv  # a tenth of every size: a smoke run, goals not checked
    scale = 10 if quick else 1
    rows = [bench(kind, n // scale) for kind, n in SCENARIOS]
    # The same shapes at a tenth of the size: the git process counts must not differ.
    small = {(kind, n): bench(kind, max(10, n // (10 * scale)), runs=1)
             for kind, n in SCENARIOS if n != 100_000}
    print("wall: elapsed seconds; cpu: user+system seconds of the process tree (what a shared, "
          "loaded machine does not inflate; the goals are checked on it)")
    print(f"{'scenario':>9} {'size':>7} {'wall':>7} {'floor':>7} {'ratio':>6} {'cpu':>6} "
          f"{'floor':>6} {'ratio':>6} {'peak MiB':>9} {'floor MiB':>9} {'git':>4} "
          f"{'findings':>8}  verdicts")
    for r in rows:
        print(f"{r['scenario']:>9} {r['n']:>7} {r['closeout_s']:>6.2f}s {r['floor_s']:>6.2f}s "
              f"{r['ratio']:>5.1f}x {r['closeout_cpu']:>5.2f}s {r['floor_cpu']:>5.2f}s "
              f"{r['cpu_ratio']:>5.1f}x {int(r['closeout_kib']) / 1024:>9.1f} "
              f"{int(r['floor_kib']) / 1024:>9.1f} {r['git_processes']:>4} {r['findings']:>8}  "
              f"{r['verdicts']} (exit {r['exit']})")
    goals: list[tuple[str, bool]] = []
    by = {(r["scenario"], r["n"]): r for r in rows}
    for (kind, n), r in small.items():
        big = by[(kind, n // scale)]
        goals.append((f"git processes, {kind}: {r['git_processes']} at {r['n']}, "
                      f"{big['git_processes']} at {big['n']} (must not grow)",
                      r["git_processes"] == big["git_processes"]))
    for n in (20_000, 100_000):
        logged = by[("logged", n // scale)]
        goals.append((f"{n:,} logged commits: {logged['cpu_ratio']:.2f}x their floor (rev-list | "
                      f"cat-file --batch, ls-remote) in CPU time, {logged['ratio']:.2f}x in wall "
                      "time (goal <= 1.5x)", float(logged["cpu_ratio"]) <= 1.5))
    tags = by[("tags", 8_000 // scale)]
    goals.append((f"8,000 logged tags: {tags['closeout_cpu']:.2f}s CPU, "
                  f"{tags['closeout_s']:.2f}s wall (goal < 1 s)",
                  float(tags["closeout_cpu"]) < 1.0))
    huge = by[("mixed", 100_000 // scale)]
    mem = int(huge["closeout_kib"]) / max(1, int(huge["floor_kib"]))
    goals.append((f"peak memory at 100,000 mixed commits: {mem:.2f}x the floor's "
                  "(goal <= 1.5x)", mem <= 1.5))
    print("1,000 unlogged commits: compared with the git floor only (the public loop-pi-audit "
          "script is not available here)")
    for kind, n in (("mixed", 20_000), ("passing", 20_000), ("mixed", 100_000)):
        r = by[(kind, n // scale)]
        print(f"{n:,} {kind} commits: {r['cpu_ratio']:.2f}x their floor (rev-list, log "
              f"--name-only) in CPU time, {r['ratio']:.2f}x in wall time (shown, not a goal)")
    for text, ok in goals:
        print(f"{'ok  ' if ok else 'MISS'} {text}")
    if check and not quick:
        return 0 if all(ok for _text, ok in goals) else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
