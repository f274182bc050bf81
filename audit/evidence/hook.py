"""The pre-push hook that writes every pushed ref to the run's push log.

`install` puts a small sh script at `<hooks dir>/pre-push` (the hooks dir honours core.hooksPath)
that execs this module with the interpreter that installed it, so it works from a venv. A
pre-push hook already there is moved aside to `pre-push.loop-pi-audit-chained` and run first with
the same arguments and stdin; its exit status decides. `uninstall` moves it back untouched.

When the run directory is known but the push cannot be logged, the push is refused with a message
on stderr (set LOOP_PI_AUDIT_ALLOW_UNLOGGED=1 to let it through, still with the message): a push
the log never saw would only fail the audit later, with less to go on.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from audit.evidence.git import is_tracked, run_git
from audit.evidence.pushlog import is_sha
from audit.evidence.rundir import ENV_VAR
from jobs.core.errors import LoopError, UsageError
from jobs.core.fs import atomic_write
from jobs.git.run import GitError

MARKER = "# loop-pi-audit pre-push hook"
CHAINED_SUFFIX = ".loop-pi-audit-chained"
SOURCE = "pre-push-hook"
ALLOW_ENV = "LOOP_PI_AUDIT_ALLOW_UNLOGGED"
PROG = "loop-pi-audit pre-push"


@dataclass(frozen=True)
class HookPaths:
    hook: Path
    chained: Path


def hook_paths(repo: Path) -> HookPaths:
    """Where git looks for this repository's pre-push hook (core.hooksPath included)."""
    try:
        out = run_git(repo, "rev-parse", "--git-path", "hooks", timeout=30).strip()
    except GitError as exc:
        raise UsageError(f"{repo}: not a git repository ({exc})") from None
    hooks = Path(out)
    if not hooks.is_absolute():
        hooks = Path(repo) / hooks
    hooks = Path(os.path.abspath(hooks))
    return HookPaths(hook=hooks / "pre-push", chained=hooks / ("pre-push" + CHAINED_SUFFIX))


def is_ours(path: Path) -> bool:
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return False
    return MARKER.encode() in head


CONFIG_OPTION = "--config="


def hook_script(python: str, run_dir: Path | None, chained: Path,
                config: Path | None = None) -> str:
    q = shlex.quote
    given = f" {q(CONFIG_OPTION + str(config))}" if config is not None else ""
    return (
        "#!/bin/sh\n"
        f"{MARKER}: records every pushed ref in the run's push log.\n"
        "# Installed by `loop-pi-audit hook install`; remove with `loop-pi-audit hook uninstall`.\n"
        # -P: the repository being pushed is the cwd and must not shadow our modules (not -I,
        # which would also drop a --user install's site-packages).
        f"exec {q(python)} -P -m audit.evidence.hook pre-push {q(str(run_dir) if run_dir else '')} "
        f"{q(str(chained))}{given} \"$@\"\n")


def install(repo: Path, run_dir: Path | None, python: str = sys.executable,
            config: Path | None = None) -> str:
    """Install (or refresh) the hook; returns a one-line description of what was done."""
    paths = hook_paths(repo)
    paths.hook.parent.mkdir(parents=True, exist_ok=True)
    existing = paths.hook.exists() or paths.hook.is_symlink()
    note = ""
    if existing and not is_ours(paths.hook):
        if is_tracked(repo, paths.hook):
            # core.hooksPath in the work tree (husky and the like): renaming the team's hook and
            # writing ours there changes a tracked file, which a commit of everything pushes.
            raise LoopError(f"{paths.hook} is tracked by git (core.hooksPath is inside the work "
                            "tree): installing would change it; log each push with "
                            "`loop-pi-audit record-push` instead", 1)
        if paths.chained.exists() or paths.chained.is_symlink():
            raise LoopError(f"{paths.hook} is not ours and {paths.chained} already exists; "
                            "refusing to overwrite either", 1)
        os.rename(paths.hook, paths.chained)
        note = f"; the existing hook now runs first from {paths.chained}"
    atomic_write(paths.hook, hook_script(python, run_dir, paths.chained, config).encode(),
                 mode=0o755)
    where = f"logging to {run_dir}" if run_dir else f"logging to ${ENV_VAR} at push time"
    sealing = (f"sealing in the ledger of {config}" if config is not None else
               "sealing in the ledger of the default configuration")
    return f"installed {paths.hook} ({where}, {sealing}){note}"


def uninstall(repo: Path) -> str:
    paths = hook_paths(repo)
    if not (paths.hook.exists() or paths.hook.is_symlink()):
        if paths.chained.exists() or paths.chained.is_symlink():
            os.rename(paths.chained, paths.hook)
            return f"restored {paths.hook} (no loop-pi-audit hook was installed)"
        return f"no pre-push hook in {paths.hook.parent}; nothing to do"
    if not is_ours(paths.hook):
        raise LoopError(f"{paths.hook} is not the loop-pi-audit hook; leaving it alone", 1)
    if paths.chained.exists() or paths.chained.is_symlink():
        os.replace(paths.chained, paths.hook)
        return f"removed the loop-pi-audit hook; restored the original {paths.hook}"
    paths.hook.unlink()
    return f"removed {paths.hook}"


def parse_stdin(text: str, repo: str, remote: str, url: str, at: str) -> list[dict[str, str]]:
    """git's lines `<local ref> <local sha> <remote ref> <remote sha>` → push-log entries."""
    entries = []
    # Newlines only: a ref name may hold U+2028 or U+0085, where splitlines() would break it.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        fields = line.split(" ")
        if len(fields) != 4 or not is_sha(fields[1]) or not is_sha(fields[3]):
            raise ValueError(f"unexpected line {number} from git: {line[:200]!r}")
        local_ref, local_sha, remote_ref, remote_sha = fields
        entries.append({"repo": repo, "remote": remote, "url": url, "ref": remote_ref,
                        "old": remote_sha, "new": local_sha, "local_ref": local_ref,
                        "at": at, "source": SOURCE})
    return entries


def run_pre_push(installed_run_dir: str, chained: str, hook_args: Sequence[str], stdin: bytes,
                 env: Mapping[str, str] = os.environ, config: str | None = None) -> int:
    """What the installed hook does at push time; returns the exit status git sees."""
    status = _run_chained(Path(chained), hook_args, stdin) if chained else 0
    if status != 0:
        return status  # the original hook refused: the push will not happen, nothing to log
    remote = hook_args[0] if hook_args else ""
    url = hook_args[1] if len(hook_args) > 1 else remote
    if remote == url:
        remote = _remote_named_by(url) or remote
    run_dir_text = env.get(ENV_VAR) or installed_run_dir
    if not run_dir_text:
        print(f"{PROG}: warning: no run directory (${ENV_VAR} unset and none given at install);"
              " this push is not logged", file=sys.stderr)
        return 0
    run_dir = Path(run_dir_text)
    try:
        entries = parse_stdin(stdin.decode("utf-8", "surrogateescape"),
                              os.path.realpath(os.getcwd()), remote, url,
                              datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if not run_dir.is_dir():
            # git runs hooks from the top of the work tree, not from where `git push` was typed.
            where = ("" if run_dir.is_absolute() else
                     f" (a relative ${ENV_VAR} is read from {os.getcwd()}, where git runs "
                     "hooks; give an absolute path)")
            raise OSError(f"run directory {run_dir} does not exist{where}")
        from audit.evidence.seal.pushes import record_pushes

        # The configuration in force at push time ($LOOP_JOBS_CONFIG), else the one in force
        # at install: its ledger seals each entry before it is appended.
        record_pushes(run_dir, entries, env.get("LOOP_JOBS_CONFIG") or config,
                      lambda message: print(f"{PROG}: warning: {message}", file=sys.stderr))
    except (OSError, ValueError) as exc:
        allowed = env.get(ALLOW_ENV, "") not in ("", "0")
        print(f"{PROG}: could not log this push to {run_dir}/push-log.jsonl: {exc}",
              file=sys.stderr)
        if allowed:
            print(f"{PROG}: pushing anyway because {ALLOW_ENV} is set; the audit will not "
                  "find this push in the log", file=sys.stderr)
            return 0
        print(f"{PROG}: push refused; fix the run directory, or set {ALLOW_ENV}=1 to push "
              "unlogged", file=sys.stderr)
        return 1
    return 0


def _remote_named_by(url: str) -> str | None:
    """git passes the URL as the remote's name when a push names a URL, not a remote; the
    snapshot knows remotes by name, so use the remote configured with that URL, if any."""
    from audit.evidence.snapshot import read_remote_config  # only here: it pulls in PyGithub

    try:
        remotes = read_remote_config(os.getcwd())
    except GitError:
        return None
    for remote in remotes.values():
        if url in remote.urls or url in remote.pushurls:
            return remote.name
    return None


def _run_chained(chained: Path, hook_args: Sequence[str], stdin: bytes) -> int:
    # git itself skips a hook that is not executable; so do we.
    if not str(chained) or not chained.is_file() or not os.access(chained, os.X_OK):
        return 0
    try:
        # The user's own hook, as an argument vector: no shell.
        done = subprocess.run(
            [str(chained), *hook_args], input=stdin, check=False)
    except OSError as exc:
        print(f"{PROG}: cannot run the chained hook {chained}: {exc}", file=sys.stderr)
        return 1
    return done.returncode


def main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or argv[0] != "pre-push":
        print(f"{PROG}: this module is run by the installed pre-push hook", file=sys.stderr)
        return 2
    rest, config = argv[3:], None
    if rest and rest[0].startswith(CONFIG_OPTION):
        config, rest = rest[0].removeprefix(CONFIG_OPTION), rest[1:]
    return run_pre_push(argv[1], argv[2], rest, sys.stdin.buffer.read(), config=config)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
