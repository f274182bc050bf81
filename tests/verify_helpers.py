"""Real repositories for loop-verify tests: a clone with a bare remote, a backlog and a justfile."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from inprocess import FORCE_SUBPROCESS, loop_verify
from project import ROOT

BACKLOG_CONFIG = """project_name: "Verify Test"
default_status: "To Do"
statuses: ["To Do", "In Progress", "Done"]
labels: []
date_format: yyyy-mm-dd
task_prefix: "task"
"""

# The shape the Backlog.md CLI writes (see backlog-fixtures/ for files it wrote itself).
TASK = """---
id: TASK-{n}
title: {title}
status: {status}
assignee: []
created_date: '2026-11-01 08:00'
updated_date: '2026-11-01 08:00'
labels:{labels}
dependencies: []
---

## Description

<!-- SECTION:DESCRIPTION:BEGIN -->
{title}
<!-- SECTION:DESCRIPTION:END -->

## Implementation Notes

<!-- SECTION:NOTES:BEGIN -->
{notes}
<!-- SECTION:NOTES:END -->
"""

JUSTFILE = """verify-ok:
    echo all good

verify-bad:
    echo disk usage 97% over 90%
    exit 3

verify-slow:
    sleep 30

verify-drift:
    touch drifted.txt
"""


def yaml_label(label: str) -> str:
    return f"'{label}'" if ":" in label else label


def git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


@dataclass
class VerifyRepo:
    root: Path
    bare: Path
    state_dir: Path
    config_path: Path

    def add_task(self, n: int, *, title: str | None = None, status: str = "Done",
                 labels: Sequence[str] = ("verify:2026-11-01",),
                 notes: str = "verify-cmd: just verify-ok", folder: str = "tasks") -> Path:
        title = title or f"Task {n}"
        label_text = "".join(f"\n  - {yaml_label(lb)}" for lb in labels) if labels else " []"
        path = self.root / "backlog" / folder / f"task-{n} - {title.replace(' ', '-')}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TASK.format(n=n, title=title, status=status, labels=label_text,
                                    notes=notes))
        return path

    def write_justfile(self, text: str = JUSTFILE, name: str = "justfile") -> None:
        (self.root / name).write_text(text)

    def commit_all(self, message: str = "setup") -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        git(self.root, "push", "-q", "origin", "HEAD:main")

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120, process: bool = False) -> subprocess.CompletedProcess[str]:
        """`loop-verify ARGS` against this repository's config, in its directory.

        In this process (tests/inprocess.py) unless `process`: a test of what only a real
        process shows (its exit on a signal, what its children inherit) asks for one.
        """
        argv = [sys.executable, "-m", "jobs.main", *args]
        if args and args[0] in ("run", "list", "history", "doctor") and "--config" not in args:
            argv += ["--config", str(self.config_path)]
        full_env = dict(os.environ)
        full_env.update(env or {})
        if not (process or FORCE_SUBPROCESS):
            return loop_verify(argv[3:], cwd=self.root, env=full_env)
        full_env["PYTHONPATH"] = str(ROOT)
        return subprocess.run(argv, cwd=self.root, capture_output=True, text=True,
                              timeout=timeout, env=full_env, check=False)

    def run_json(self, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        proc = self.run(*args, "--json", **kw)
        assert proc.stdout.strip(), proc.stderr
        return proc.returncode, json.loads(proc.stdout)

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.root, *args, check=check)

    def subjects(self) -> list[str]:
        return self.git("log", "--format=%s").splitlines()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def files_in_head_commit(self) -> list[str]:
        out = self.git("show", "--name-only", "--format=", "HEAD")
        return [line for line in out.splitlines() if line]

    def remote_refs(self) -> str:
        return git(self.bare, "for-each-ref", "--format=%(refname) %(objectname)")

    def status(self) -> str:
        return self.git("status", "--porcelain", "--untracked-files=all")

    def history(self) -> list[dict[str, Any]]:
        rc, data = self.run_json("history")
        assert rc == 0
        return list(data["attempts"])

    def log_events(self) -> list[dict[str, Any]]:
        path = self.state_dir / "loop-jobs.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hook(repo: VerifyRepo, name: str, body: str) -> Path:
    """A shell hook of the repository's own (`.git/hooks/<name>`) running `body`."""
    path = repo.root / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def git_show(repo: VerifyRepo, rev: str, path: Path) -> bytes:
    """The bytes of `path` (in the work tree) at `rev`."""
    return subprocess.run(["git", "show", f"{rev}:{path.relative_to(repo.root)}"], cwd=repo.root,
                          capture_output=True, check=True).stdout

def make_verify_repo(base: Path, *, justfile: str | None = JUSTFILE,
                     tasks: Iterable[int] = (), timeout: str = "10s",
                     extra_config: dict[str, Any] | None = None) -> VerifyRepo:
    """A clone at base/app with a bare remote at base/remote.git and a config for loop-verify."""
    bare = base / "remote.git"
    root = base / "app"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    git(root, "remote", "add", "origin", str(bare))
    (root / "README.md").write_text("# app\n")
    (root / ".gitignore").write_text("ignored/\n")
    (root / "backlog").mkdir()
    (root / "backlog" / "config.yml").write_text(BACKLOG_CONFIG)
    state = base / "state"
    config: dict[str, Any] = {"repos": [{"path": str(root)}], "timeout": timeout,
                              "kill_grace": "1s", "timezone": "UTC",
                              "state_dir": str(state)}
    config.update(extra_config or {})
    config_path = base / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    repo = VerifyRepo(root, bare, state, config_path)
    if justfile is not None:
        repo.write_justfile(justfile)
    for n in tasks:
        repo.add_task(n)
    repo.commit_all()
    return repo


# --------------------------------------------------------------------------- live processes
# For tests that kill or race `loop-verify run`: start it without waiting, and find every process
# it (or a recipe or hook it ran) left behind by a mark in the environment they all inherit.

MARK_VAR = "LOOP_VERIFY_TEST_MARK"


def verify_argv(repo: VerifyRepo, *args: str) -> list[str]:
    argv = [sys.executable, "-m", "jobs.main", *args]
    if args and args[0] in ("run", "list", "history", "doctor") and "--config" not in args:
        argv += ["--config", str(repo.config_path)]
    return argv


def start_verify(repo: VerifyRepo, *args: str, mark: str, out: Path,
                 env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`loop-verify` as a background process in its own session; output to out.{stdout,stderr}."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(ROOT)
    full_env[MARK_VAR] = mark
    with open(f"{out}.stdout", "wb") as so, open(f"{out}.stderr", "wb") as se:
        return subprocess.Popen(verify_argv(repo, *args), cwd=repo.root, env=full_env,
                                stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                start_new_session=True)


def marked_pids(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries this mark (Linux /proc)."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_marked(mark: str, timeout: float = 5.0) -> list[int]:
    """SIGKILL every process carrying the mark until none is left; returns those it killed."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        pids = marked_pids(mark)
        if not pids:
            return killed
        if time.monotonic() > deadline:
            raise AssertionError(f"processes marked {mark} survive SIGKILL: {pids}")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def wait_for(path: Path, proc: subprocess.Popen[bytes] | None = None,
             timeout: float = 30.0) -> None:
    """Wait until path exists; fail early if proc ends first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process ended ({proc.returncode}) before {path} appeared")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s")
        time.sleep(0.01)


def unshare_available() -> bool:
    """Whether a test can start a process in a PID namespace of its own (root and unshare)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


def verdict_commits(repo: VerifyRepo) -> dict[str, list[str]]:
    """Each task's verdict commits, oldest last, by their subjects."""
    out: dict[str, list[str]] = {}
    for subject in repo.subjects():
        m = re.fullmatch(r"loop-verify: (TASK-\d+) (passed|failed) \(just verify-\w\)", subject)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


# Kill points no outside observer can wait for: the process SIGKILLs itself at the exact call.
# Nothing of loop-verify is replaced; the death simply happens there.
CRASHER = """
import os, runpy, signal, sys
point, nth = os.environ["CRASH_AT"], int(os.environ["CRASH_NTH"])
calls = 0

def due() -> bool:
    global calls
    calls += 1
    return calls == nth

if point == "rename":
    real_replace = os.replace
    def replace(src, dst, *a, **k):
        # The task file's temporary sibling is written and fsynced; die before the rename.
        if "/backlog/" in str(dst) and str(src).endswith(".tmp") and due():
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *a, **k)
    os.replace = replace
elif point == "commit":
    import jobs.git.repo
    real_commit = jobs.git.repo.commit_paths
    def commit_paths(*a, **k):
        # The task file is written (and moved); die before git is asked to commit it.
        if due():
            os.kill(os.getpid(), signal.SIGKILL)
        return real_commit(*a, **k)
    jobs.git.repo.commit_paths = commit_paths
sys.argv = ["loop-verify", *sys.argv[1:]]
runpy.run_module("jobs.main", run_name="__main__", alter_sys=True)
"""
