"""The one way either program starts git: an argument vector (never a shell), stdin and output
in unlinked files, a bounded wait that stops git and everything it started, and one error type.

Files rather than pipes: a hook, filter or fsmonitor that leaves a process in the background
holding git's stdout or stderr would keep a pipe open, and reading it to the end would wait for
that process rather than for git; and git never blocks writing its output, so stdin can be given
whole without a thread. Plain `subprocess` rather than GitPython's command layer: both programs
only run git commands and read their output.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.git.hardened import environment
from jobs.process.exe import executable

# Seconds a git process told to stop (SIGTERM) has before it is killed (SIGKILL).
STOP_GRACE = 5.0


class GitError(Exception):
    """git could not be started, exited otherwise than expected, or ran past its time."""

    def __init__(self, message: str, *, argv: Sequence[str] = (), returncode: int | None = None,
                 timed_out: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.argv = list(argv)
        self.returncode = returncode
        self.timed_out = timed_out

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Finished:
    """A git process that ended: what it said, and which process it was."""

    returncode: int
    stdout: bytes
    stderr: bytes
    pid: int


def run(args: Sequence[str], *, cwd: Path | str | None = None, timeout: float | None = None,
        grace: float = STOP_GRACE, stdin: bytes | None = None,
        env: Mapping[str, str] | None = None, hardened: bool = False, network: bool = False,
        config: Sequence[tuple[str, str]] = (), git: str | None = None) -> Finished:
    """Run `git args...` in `cwd` and return how it ended, whatever its exit status.

    `hardened` is the audit's mode (jobs/git/hardened.py): its environment, and a session of its
    own, so that nothing it starts has a terminal to prompt on. `config` holds settings for
    this command only, passed through the environment rather than argv: they may carry a token,
    and argv is visible to every user of the machine. `git` is the executable to run; by
    default the one on PATH's absolute folders. Raises GitError when git cannot be started, or
    when it is still running after `timeout` seconds (it and what it started are stopped:
    SIGTERM, then SIGKILL after `grace`).
    """
    base = os.environ if env is None else env
    child_env = environment(base, hardened=hardened, network=network)
    for i, (key, value) in enumerate(config):
        child_env[f"GIT_CONFIG_KEY_{i}"] = key
        child_env[f"GIT_CONFIG_VALUE_{i}"] = value
    if config:
        child_env["GIT_CONFIG_COUNT"] = str(len(config))
    argv = ["git", *args]
    verb = _verb(args)
    try:
        program = git or executable("git", base)
        with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err:
            if stdin is not None:
                given.write(stdin)
                given.seek(0)
            with subprocess.Popen(argv, executable=program, cwd=cwd, env=child_env,
                                  stdin=given if stdin is not None else subprocess.DEVNULL,
                                  stdout=out, stderr=err, start_new_session=hardened) as proc:
                if timeout is None:
                    proc.wait()
                else:
                    # psutil only for a command with a limit: most callers never need it
                    from jobs.process.tree import ended_within, stop_tree

                    if not ended_within(proc, timeout):
                        stop_tree(proc, grace)
                        raise GitError(f"git {verb} failed: still running after {timeout:g} s "
                                       "(a hook that does not end?); it and what it started "
                                       "were stopped", argv=argv, timed_out=True)
            out.seek(0)
            err.seek(0)
            return Finished(proc.returncode, out.read(), err.read(), proc.pid)
    except OSError as exc:
        raise GitError(f"git {verb} cannot be started: {exc}", argv=argv) from None


def said(done: Finished, verb: str, ok: tuple[int, ...] = (0,)) -> str:
    """What a git process printed, as the file system names paths (a file name that is not
    UTF-8 survives the round trip); GitError when it exited otherwise than `ok`, saying why in
    one line: the reason ends up in `run`'s one line per task and in the log. Git and its hooks
    say why on stderr or stdout ("nothing to commit"): both are kept."""
    out, err = os.fsdecode(done.stdout), os.fsdecode(done.stderr)
    if done.returncode not in ok:
        why = " / ".join(line.strip() for line in (err + "\n" + out).splitlines()
                         if line.strip())
        raise GitError(f"git {verb} failed ({done.returncode}): {why or 'no message'}",
                       returncode=done.returncode)
    return out


def _verb(args: Sequence[str]) -> str:
    """The git command among `args`, past the options before it (`-C DIR`, `-c KEY=VALUE`)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-C", "-c"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "(no command)"
