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
        proc = subprocess.Popen(  # noqa: S603 - fixed argument vector, no shell
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
        raise GitFailed(argv, f"`{' '.join(argv[3:] if repo is not None else argv[1:])}` "
                        f"timed out after {timeout:g}s", timed_out=True) from None
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
