"""Two `loop-verify run` processes at once on the same repositories: each task verified once.

Three repositories, four new due tasks in each per round, recipes that take 0.3 s and append a
line to a counter file outside the repositories. Two real processes share one configuration (and
so one ledger); the rounds vary how they meet: started together in the same repository order,
in opposite orders, and one starting while the other is half-way. After each round every task's
recipe ran exactly once, every task has exactly one `passed` commit, each process reports only
passes and `locked` repositories (exit 3 when it met a lock, else 0), and the ledger agrees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from verify_helpers import (
    ROOT,
    VerifyRepo,
    kill_marked,
    make_verify_repo,
    start_verify,
    wait_for,
)

from jobs.config.load import load_config
from jobs.ledger import claims
from jobs.ledger.store import Ledger
from jobs.process.scope import SCOPE_DIR, Scope
from jobs.process.tree import pid_namespace
from jobs.verify.claims import RepoClaims

TODAY = ("--today", "2026-11-30")
REPOS = 2
PER_ROUND = 3
# (what the round tries, which repository the first run must have reached before the second
# starts (None: both at once), whether the second takes the repositories in reverse order)
ROUNDS = [("same order", None, False), ("opposite orders", None, True),
          ("second starts mid-way", "app1", False),
          ("opposite orders, second starts mid-way", "app1", True)]


def justfile(name: str, counter: Path, count: int) -> str:
    return "".join(f"verify-t{n}:\n    echo {name}:TASK-{n} >> {counter}\n    sleep 0.1\n\n"
                   for n in range(1, count + 1))


def wait_for_line(path: Path, line: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not (path.exists() and line in path.read_text().split()):
        assert proc.poll() is None, "the first run ended before the second could start"
        assert time.monotonic() < deadline
        time.sleep(0.01)


def passed_commits(repo: VerifyRepo) -> Counter[str]:
    return Counter(s.split(" ")[1] for s in repo.subjects()
                   if s.startswith("loop-verify: ") and " passed " in s)


@pytest.mark.slow
def test_two_concurrent_runs_verify_each_task_once(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    total = PER_ROUND * len(ROUNDS)
    repos = []
    for i in range(REPOS):
        name = f"app{i}"
        repo = make_verify_repo(tmp_path / name, justfile=justfile(name, counter, total))
        repos.append(repo)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [{"path": str(r.root)} for r in repos], "timeout": "30s",
        "kill_grace": "1s", "timezone": "UTC", "state_dir": str(tmp_path / "state")}))
    expected: Counter[str] = Counter()

    for rnd, (how, reached, reverse) in enumerate(ROUNDS):
        for i, repo in enumerate(repos):
            for n in range(rnd * PER_ROUND + 1, (rnd + 1) * PER_ROUND + 1):
                repo.add_task(n, notes=f"verify-cmd: just verify-t{n}")
                expected[f"app{i}:TASK-{n}"] = 1
            repo.commit_all(f"round {rnd}")
        remotes = [r.remote_refs() for r in repos]
        order = [str(r.root) for r in repos]
        mark = uuid.uuid4().hex
        procs: list[subprocess.Popen[bytes]] = []
        for k in range(2):
            repo_args = [a for p in (order[::-1] if reverse and k else order)
                         for a in ("--repo", p)]
            if k and reached is not None:
                first = f"{reached}:TASK-{rnd * PER_ROUND + 1}"
                wait_for_line(counter, first, procs[0])
            procs.append(start_verify(repos[0], "run", "--config", str(config), *repo_args,
                                      *TODAY, "--json", mark=mark,
                                      out=tmp_path / f"r{rnd}-{k}"))
        try:
            for p in procs:
                p.wait(timeout=60)
        finally:
            kill_marked(mark)
        outputs: list[dict[str, Any]] = []
        for k, p in enumerate(procs):
            err = (tmp_path / f"r{rnd}-{k}.stderr").read_text()
            data = json.loads((tmp_path / f"r{rnd}-{k}.stdout").read_text())
            verdicts = Counter(r["verdict"] for r in data["results"])
            assert set(verdicts) <= {"pass", "locked"}, (how, data, err)
            assert p.returncode == (3 if verdicts["locked"] else 0), (how, data, err)
            outputs.append(data)

        # Every task verified exactly once, by one of the two, and committed exactly once.
        ran = Counter(counter.read_text().split())
        assert ran == expected, how
        passes = Counter(f"{Path(r['repo']).parent.name}:{r['task_id']}"
                         for d in outputs for r in d["results"] if r["verdict"] == "pass")
        assert passes == Counter({k: 1 for k in expected if
                                  int(k.rsplit("-", 1)[1]) > rnd * PER_ROUND}), how
        for i, repo in enumerate(repos):
            commits = passed_commits(repo)
            assert set(commits.values()) == {1}, (how, commits)
            assert len(commits) == (rnd + 1) * PER_ROUND
            assert repo.status() == ""
            assert repo.remote_refs() == remotes[i]
        # A repository one process found locked was done by the other.
        for d, other in ((outputs[0], outputs[1]), (outputs[1], outputs[0])):
            for r in d["results"]:
                if r["verdict"] == "locked":
                    assert any(o["repo"] == r["repo"] for o in other["results"]), how

    history = repos[0].run("history", "--config", str(config), "--json")
    attempts = json.loads(history.stdout)["attempts"]
    ledger_passes = Counter(f"{Path(a['repo']).parent.name}:{a['task_id']}"
                            for a in attempts if a["verdict"] == "pass")
    assert ledger_passes == expected
    assert all(a["edit_state"] in ("committed", "none") for a in attempts)


OPEN_LEDGER = """
import sys, time
from jobs.ledger.store import Ledger
folder, start, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
for n in range(rounds):
    while time.time() < start + n * 0.25:
        pass  # spin: every process leaves the line within microseconds of the others
    Ledger(f"sqlite:///{folder}/ledger-{n}.db").close()
"""


@pytest.mark.slow
def test_runs_opening_a_new_ledger_at_the_same_instant(tmp_path: Path) -> None:
    # The first morning several runs start together: all find no table and all create it.
    rounds = 8
    start = time.time() + 2.0  # after every process has imported SQLAlchemy
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_LEDGER, str(tmp_path), str(start),
                               str(rounds)], env=env, cwd=tmp_path, stderr=subprocess.PIPE,
                              text=True)
             for _ in range(4)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), errors


# A run that dies just before git commits its verdict (the process SIGKILLs itself at the call),
# or one that reaches the repository's lock only when told to: the two meet over the same
# pending edit.
STAGED = """
import os, runpy, signal, sys, time
import jobs.git.repo, jobs.verify.repo_run
if os.environ.get("DIE_BEFORE_COMMIT"):
    def commit_paths(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)
    jobs.git.repo.commit_paths = commit_paths
go = os.environ.get("LOCK_WHEN")
if go:
    real_lock = jobs.verify.repo_run.exclusive_dir_lock
    def exclusive_dir_lock(*a, **k):
        open(go + ".waiting", "w").close()
        while not os.path.exists(go):
            time.sleep(0.01)
        return real_lock(*a, **k)
    jobs.verify.repo_run.exclusive_dir_lock = exclusive_dir_lock
sys.argv = ["loop-verify", *sys.argv[1:]]
runpy.run_module("jobs.main", run_name="__main__", alter_sys=True)
"""


def test_a_pending_edit_is_finished_by_one_run_only(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    repo = make_verify_repo(tmp_path / "r", justfile=justfile("app", counter, 2))
    repo.add_task(1, notes="verify-cmd: just verify-t1")
    repo.add_task(2, notes="verify-cmd: just verify-t2")
    repo.commit_all("tasks")
    argv = [sys.executable, "-c", STAGED, "run", "--config", str(repo.config_path), *TODAY]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([*argv, "--json"], cwd=repo.root, env={**env, "DIE_BEFORE_COMMIT": "1"},
                            capture_output=True, text=True, timeout=60, check=False)
    assert killed.returncode == -9, killed.stderr
    assert [a["edit_state"] for a in repo.history()] == ["pending"]

    # B reads the ledger (one pending edit), then waits at the lock while A finishes everything.
    go = tmp_path / "go"
    late = subprocess.Popen([*argv, "--json"], cwd=repo.root, env={**env, "LOCK_WHEN": str(go)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not Path(f"{go}.waiting").exists():
            assert late.poll() is None and time.monotonic() < deadline, late.communicate()
            time.sleep(0.01)
        code, first = repo.run_json("run", *TODAY)
        go.touch()
        out, err = late.communicate(timeout=60)
    finally:
        if late.poll() is None:
            late.kill()
            late.wait()
    second = json.loads(out)
    assert code == 0 and late.returncode == 0, (first, out, err)
    reported = [(r["task_id"], r["verdict"]) for d in (first, second) for r in d["results"]]
    assert sorted(reported) == [("TASK-1", "pass"), ("TASK-2", "pass")]
    assert passed_commits(repo) == Counter({"TASK-1": 1, "TASK-2": 1})
    assert Counter(counter.read_text().split()) == Counter({"app:TASK-1": 1, "app:TASK-2": 1})
    recovered = [e for e in repo.log_events() if e["event"] == "verify.recovered"]
    assert [e["task"] for e in recovered] == ["TASK-1"]


def test_a_recipe_that_deletes_git_lock_files_keeps_the_repository_locked(tmp_path: Path) -> None:
    """The common "clean stale git locks" step (`rm -f .git/*.lock`) in a recipe must not let a
    second run in: two real `loop-verify run` processes, the recipe runs once."""
    count, started, go = tmp_path / "count", tmp_path / "started", tmp_path / "go"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-clean:\n    rm -f .git/*.lock\n    echo ran >> {count}\n    touch {started}\n"
        f"    while [ ! -e {go} ]; do sleep 0.02; done\n"))
    repo.add_task(1, notes="verify-cmd: just verify-clean")
    repo.commit_all("task")
    mark = uuid.uuid4().hex
    try:
        first = start_verify(repo, "run", *TODAY, "--json", mark=mark, out=tmp_path / "first")
        wait_for(started, first)
        second = start_verify(repo, "run", *TODAY, "--json", mark=mark, out=tmp_path / "second")
        deadline = time.monotonic() + 60
        while second.poll() is None and count.read_text().count("ran") < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert count.read_text().count("ran") == 1, "the recipe ran a second time"
        assert second.wait(timeout=60) == 3
        [locked] = json.loads((tmp_path / "second.stdout").read_text())["results"]
        assert locked["verdict"] == "locked", locked
        go.touch()
        assert first.wait(timeout=60) == 0, (tmp_path / "first.stderr").read_text()
    finally:
        go.touch()
        kill_marked(mark)
    assert count.read_text().count("ran") == 1
    assert passed_commits(repo) == Counter({"TASK-1": 1})
    assert repo.status() == ""


def test_a_live_runs_claim_is_never_taken_over_by_this_machine(tmp_path: Path) -> None:
    """A claim of this machine whose run is alive (its scope lock held) stays its own even when
    the repository's lock is free: only a run that is provably dead is taken over."""
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> {count}\n")
    task = repo.add_task(1)
    repo.commit_all("task")
    config = load_config(repo.config_path)
    ledger = Ledger(config.ledger, machine=config.machine)
    live = "20261130T073000Z-0a1b2c3d"
    try:
        with Scope(config.state_dir, run_id=live):  # the other run, alive in this process
            # ... which claimed the task as a run does
            taken = RepoClaims(ledger, repo.root, "main", 3600).take(
                "TASK-1", "2026-11-01", str(task.relative_to(repo.root)), live)
            assert isinstance(taken, claims.Claim)
            code, data = repo.run_json("run", *TODAY)
            assert code == 0, data  # checked by the other run: not unchecked here
            [skipped] = data["results"]
            assert skipped["verdict"] == "skipped"
            assert skipped["reason"].startswith(f"claimed by {config.machine} at "), skipped
            assert not count.exists()
        # Once that run is gone (its scope lock free and left behind), its claim is taken over.
        stale = config.state_dir / SCOPE_DIR / f"{live}.lock"
        stale.write_text(json.dumps({"pid": 1, "pidns": pid_namespace(), "uid": os.getuid()}))
        code, data = repo.run_json("run", *TODAY)
        assert code == 0 and [r["verdict"] for r in data["results"]] == ["pass"], data
        assert count.read_text() == "ran\n"
    finally:
        ledger.close()

