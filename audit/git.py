"""Running git: argument vectors only, never a prompt, and a bounded wait for anything remote."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

DEFAULT_REMOTE_TIMEOUT = 60.0
TIMEOUT_ENV = "LOOP_PI_GIT_TIMEOUT"


class GitFailed(Exception):
    """git exited non-zero, could not start, or ran past its time."""

    def __init__(self, args: list[str], message: str, returncode: int | None = None,
                 timed_out: bool = False) -> None:
        super().__init__(message)
        self.args_list = args
        self.message = message
        self.returncode = returncode
        self.timed_out = timed_out

    def __str__(self) -> str:
        return self.message


def remote_timeout(env: Mapping[str, str] = os.environ) -> float:
    """Seconds a git command that talks to a remote may take ($LOOP_PI_GIT_TIMEOUT, default 60)."""
    raw = env.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_REMOTE_TIMEOUT
    except ValueError:
        return DEFAULT_REMOTE_TIMEOUT
    return value if value > 0 else DEFAULT_REMOTE_TIMEOUT


def git_env(base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment for every git we start: nothing may wait for a human at 7 a.m."""
    env = dict(base)
    env["GIT_TERMINAL_PROMPT"] = "0"
    # A user's own GIT_SSH_COMMAND wins (it may carry keys or proxies); ours only adds batch mode.
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    env.setdefault("GCM_INTERACTIVE", "never")
    env["LC_ALL"] = "C"
    return env


def run_git(repo: Path | str | None, *args: str, timeout: float | None = None,
            input_text: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run `git -C repo args...` and return its stdout; raise GitFailed on any failure.

    The child gets a session of its own so that, on timeout, the whole group (ssh, upload-pack,
    helpers) dies with it; otherwise a grandchild holding the pipe open would keep us waiting.
    """
    argv = ["git"]
    if repo is not None:
        argv += ["-C", str(repo)]
    argv += list(args)
    try:
        # A fixed argument vector, no shell.
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env(env or os.environ),
            start_new_session=True)
    except OSError as exc:
        raise GitFailed(argv, f"cannot run git: {exc}") from exc
    data = input_text.encode() if input_text is not None else None
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise GitFailed(argv, f"timed out after {timeout:g}s (killed)", timed_out=True) from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
        detail = " ".join(lines) if lines else f"exit status {proc.returncode}"
        if len(detail) > 500:
            detail = detail[:497] + "..."
        raise GitFailed(argv, detail, returncode=proc.returncode)
    return out.decode("utf-8", "surrogateescape")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


# ---------------------------------------------------------------------------------------------
# Judgement side (used by audit/history.py; owned by the closeout/compare work).
# Bulk reads only: one process per repository or per changed ref, never one per commit.
# ---------------------------------------------------------------------------------------------

# Each commit: NUL, then sha, parents, subject and Claude-Session trailer values (RS-separated),
# split by US. With `-z --name-only` git ends that header with NUL and lists the paths after it,
# NUL-terminated; paths are never empty, so an empty field always marks the next header.
HISTORY_FORMAT = ("%x00%H%x1f%P%x1f%s%x1f"
                  "%(trailers:key=Claude-Session,valueonly,separator=%x1e)")


def object_types(repo: Path | str, shas: list[str]) -> dict[str, str | None]:
    """Each object's type (`commit`, `tag`, ...) or None when the repository lacks it, in one
    `git cat-file --batch-check`. Replace refs are ignored: history must be the real one."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    out = run_git(repo, "--no-replace-objects", "cat-file",
                  "--batch-check=%(objectname) %(objecttype)",
                  input_text="".join(f"{sha}\n" for sha in wanted))
    types: dict[str, str | None] = dict.fromkeys(wanted)
    for line in out.splitlines():
        name, _, kind = line.partition(" ")
        if name in types and kind != "missing":
            types[name] = kind
    return types


def fetch_for_audit(repo: Path | str, remote: str, refspecs: list[str],
                    timeout: float | None = None) -> None:
    """One `git fetch` of `refspecs` from `remote` (no tags, no FETCH_HEAD, no hooks' side
    trips); raises GitFailed."""
    run_git(repo, "-c", "fetch.recurseSubmodules=false", "fetch", "--quiet", "--no-tags",
            "--no-write-fetch-head", "--no-auto-gc", remote, *refspecs,
            timeout=timeout if timeout is not None else remote_timeout())


def is_ancestor(repo: Path | str, old: str, new: str) -> bool:
    """Is `old` an ancestor of `new` (a fast-forward)? Raises GitFailed when git cannot say."""
    try:
        run_git(repo, "--no-replace-objects", "merge-base", "--is-ancestor", old, new)
    except GitFailed as exc:
        if exc.returncode == 1:
            return False
        raise
    return True


def history_log(repo: Path | str, tips: list[str], exclude: list[str]) -> str:
    """`git log` of every commit reachable from `tips` and not from `exclude`, children before
    parents, each with its paths (a merge against its first parent) and Claude-Session
    trailers, in one process; revisions go through stdin so no list is too long."""
    revs = "".join(f"{t}\n" for t in tips) + "".join(f"^{x}\n" for x in exclude)
    return run_git(repo, "--no-replace-objects", "-c", "core.quotePath=false",
                   "-c", "log.showSignature=false", "log", "--stdin", "--topo-order",
                   "--no-color", "--no-renames", "--diff-merges=first-parent", "--root",
                   "--name-only", "-z", f"--format={HISTORY_FORMAT}", input_text=revs)


def is_shallow(repo: Path | str) -> bool:
    """A shallow clone cannot tell a rewritten history from one it was never given."""
    return run_git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"
