"""What the audit asks git: history, objects and remote refs, each read in bulk through the one
runner in its hardened mode (jobs/git/run.py, jobs/git/hardened.py)."""

from __future__ import annotations

import hashlib
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from jobs.core.urls import scp_parts
from jobs.git import run as git_run
from jobs.git.hardened import HARDENED_LOG_OPTIONS, hardened_argv
from jobs.git.run import GitError
from jobs.process.exe import executable

DEFAULT_REMOTE_TIMEOUT = 60.0
TIMEOUT_ENV = "LOOP_PI_GIT_TIMEOUT"


def seconds_from_env(name: str, default: float, env: Mapping[str, str] = os.environ) -> float:
    """A positive number of seconds from `$name`; unset, unreadable or not positive: `default`."""
    raw = env.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


def remote_timeout(env: Mapping[str, str] = os.environ) -> float:
    """Seconds a git command that talks to a remote may take ($LOOP_PI_GIT_TIMEOUT, default 60)."""
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_REMOTE_TIMEOUT, env)


# The git executable the audit runs: pinned by closeout to the one `begin` recorded (and hashed
# again), so that a `git` put earlier on PATH during the run never answers the audit.
_PINNED: list[str] = []


@contextmanager
def use_git(program: str) -> Iterator[None]:
    """Run `program` as git (absolute path) for every command inside the block."""
    _PINNED.append(program)
    try:
        yield
    finally:
        _PINNED.pop()


def git_program(env: Mapping[str, str] | None = None) -> str:
    """The git executable the audit runs: the pinned one, else the one on PATH's absolute
    folders."""
    return _PINNED[-1] if _PINNED else executable("git", env)


def run_git(repo: Path | str | None, *args: str, timeout: float | None = None,
            input_text: str | None = None, env: Mapping[str, str] | None = None,
            errors: str = "surrogateescape", config: Sequence[tuple[str, str]] = (),
            network: bool = False, git: str | None = None) -> str:
    """Run `git -C repo args...` in the hardened mode and return its stdout as text; raise
    GitError on any failure (see `run_git_bytes`)."""
    return run_git_bytes(repo, *args, timeout=timeout, input_text=input_text, env=env,
                         config=config, network=network, git=git).decode("utf-8", errors)


def run_git_bytes(repo: Path | str | None, *args: str, timeout: float | None = None,
                  input_text: str | None = None, env: Mapping[str, str] | None = None,
                  config: Sequence[tuple[str, str]] = (), network: bool = False,
                  git: str | None = None) -> bytes:
    """Run `git -C repo args...` through the one runner in its hardened mode (jobs/git/run.py)
    and return its stdout; GitError, saying what git said on stderr, on any other exit than 0.

    Only a command given `network=True` (our own fetch and ls-remote, by URL) may reach a
    remote. On timeout git and everything it started (ssh, upload-pack, helpers) are killed.
    """
    argv = ["-C", str(repo), *args] if repo is not None else list(args)
    try:
        program = git or (_PINNED[-1] if _PINNED else None)
        done = git_run.run(argv, timeout=timeout, grace=0.0,
                           stdin=input_text.encode() if input_text is not None else None,
                           env=env, hardened=True, network=network, config=config,
                           git=program)
    except GitError as exc:
        if exc.timed_out:
            raise GitError(f"timed out after {timeout:g}s (killed)", argv=exc.argv,
                           timed_out=True) from None
        raise GitError(f"cannot run git: {exc}", argv=exc.argv) from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.decode("utf-8", "replace").splitlines()
                 if ln.strip()]
        detail = " ".join(lines) if lines else f"exit status {done.returncode}"
        if len(detail) > 500:
            detail = detail[:497] + "..."
        raise GitError(detail, argv=["git", *argv], returncode=done.returncode)
    return done.stdout


# ---------------------------------------------------------------------------------------------
# Judgement side (used by audit/evidence/history.py; owned by the closeout/compare work).
# Bulk reads only: one process per repository or per changed ref, never one per commit.
# ---------------------------------------------------------------------------------------------

# Each commit: NUL, then sha, parents, subject and Claude-Session trailer values (RS-separated),
# split by US. With `-z --raw` git ends that header with NUL and then lists what the commit
# changes, each `:<old mode> <new mode> <old> <new> <status>` NUL `<path>` NUL; the next header
# starts after an empty field.
DETAILS_FORMAT = ("%x00%H%x1f%P%x1f%s%x1f"
                  "%(trailers:key=Claude-Session,valueonly,separator=%x1e)")


def object_types(repo: Path | str, shas: list[str]) -> dict[str, str | None]:
    """Each object's type (`commit`, `tag`, ...) or None when the repository lacks it, in one
    `git cat-file --batch-check`."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    out = run_git(repo, *hardened_argv("cat-file", "--batch-check=%(objectname) %(objecttype)"),
                  input_text="".join(f"{sha}\n" for sha in wanted))
    types: dict[str, str | None] = dict.fromkeys(wanted)
    for line in out.split("\n"):
        name, _, kind = line.partition(" ")
        if name in types and kind != "missing":
            types[name] = kind
    return types


def fetch_for_audit(repo: Path | str, url: str, refspecs: list[str],
                    timeout: float | None = None) -> None:
    """One `git fetch` of `refspecs` from `url` (no tags, no FETCH_HEAD, no hooks, no configured
    upload-pack: the remote's own settings in the clone are never consulted); raises GitError."""
    run_git(repo, *hardened_argv("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                                 "--no-auto-gc", "--no-recurse-submodules",
                                 # `--`: no URL or refspec is ever read as an option.
                                 f"--upload-pack={upload_pack(url)}", "--", url, *refspecs),
            timeout=timeout if timeout is not None else remote_timeout(), network=True)


def ls_remote(url: str, timeout: float, config: Sequence[tuple[str, str]] = ()) -> str:
    """`git ls-remote --symref URL`, run outside the clone (in an empty directory of its own):
    no `remote.<name>.uploadpack`, `remote.<name>.vcs`, `http.*` or other setting of the clone
    can choose who answers. The caller applies insteadOf rules itself and records where they
    lead."""
    with tempfile.TemporaryDirectory(prefix="loop-pi-audit-") as where:
        env = dict(os.environ)
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(where)
        return run_git(where, *hardened_argv("ls-remote", "--symref",
                                             f"--upload-pack={upload_pack(url)}", url),
                       timeout=timeout, env=env, config=config, network=True)


# For a remote on this machine git runs upload-pack itself, with the caller's global config
# (`GIT_CONFIG_GLOBAL` is kept, but git clears `-c` settings for a local transport): a
# `transfer.hideRefs` or `uploadpack.hideRefs` there hid the branch or tag the run pushed from
# the snapshot. Settings on upload-pack's own command line come last, and a `!` entry
# un-hides. Over ssh the remote runs the command (GitHub accepts none but git-upload-pack), and
# over http it is not ours to choose.
# The git it runs is named by its absolute path: git runs the command through the shell, whose
# PATH (with GIT_EXEC_PATH's folder put first by git) would otherwise choose the program.
LOCAL_UPLOAD_PACK = ("{git} -c transfer.hideRefs=!refs/ -c transfer.hideRefs=!HEAD "
                     "-c uploadpack.hideRefs=!refs/ -c uploadpack.hideRefs=!HEAD upload-pack")


def upload_pack(url: str) -> str:
    """The upload-pack command for `url`: see LOCAL_UPLOAD_PACK."""
    local = LOCAL_UPLOAD_PACK.format(git=shlex.quote(git_program()))
    if url.startswith("file://"):
        return local
    if "://" in url:
        return "git-upload-pack"
    if scp_parts(url) is not None:
        return "git-upload-pack"  # scp-like host:path, over ssh
    return local


def absolute_url(url: str, repo: Path | str) -> str:
    """A remote URL as git in `repo` would read it: a relative path is relative to the clone."""
    if "://" in url or os.path.isabs(url):
        return url
    if scp_parts(url) is not None:
        return url  # scp-like host:path
    return os.path.normpath(os.path.join(str(repo), url))


def ancestry_path(repo: Path | str, old: str, new: str) -> list[str]:
    """The commits that descend from `old` and lead to `new` (`git rev-list --ancestry-path
    old..new`), `new` first; empty when git finds no such path. The walk reads objects
    unchecked: the caller checks what it lists."""
    return run_git(repo, *hardened_argv("rev-list", "--ancestry-path", "--end-of-options",
                                        f"{old}..{new}", "--")).split()


def rev_list(repo: Path | str, tips: list[str], exclude: list[str]) -> str:
    """`git rev-list --parents` of every commit reachable from `tips` and not from `exclude`,
    children before parents: one line per commit, its name then its parents'. Revisions go
    through stdin so no list is too long. The walk reads objects unchecked: the caller checks
    what it lists."""
    revs = "".join(f"{t}\n" for t in tips) + "".join(f"^{x}\n" for x in exclude)
    return run_git(repo, *hardened_argv("rev-list", "--stdin", "--topo-order", "--parents"),
                   input_text=revs)


def commit_details(repo: Path | str, shas: Sequence[str]) -> str:
    """For each of these commits, in one `git log --no-walk`: its subject, its Claude-Session
    trailers, and its raw change against every parent (a merge is printed once per parent),
    with `-t`: the trees the diff went through, each as a line of its own (DETAILS_FORMAT)."""
    return run_git(repo, *hardened_argv("log", "--stdin", "--no-walk=unsorted",
                                        *HARDENED_LOG_OPTIONS, "--diff-merges=separate", "--root",
                                        "--raw", "-t", "--no-abbrev", "-z",
                                        f"--format={DETAILS_FORMAT}"),
                   input_text="".join(f"{sha}\n" for sha in shas),
                   # Text that can always be written out: invalid UTF-8 becomes U+FFFD.
                   errors="replace")


def stored_objects(repo: Path | str, shas: Sequence[str], keep: Callable[[str], bool] | None = None
                   ) -> dict[str, tuple[str, bytes] | None]:
    """Each object's type and content, in one `git cat-file --batch`; None for one the clone
    lacks or whose stored bytes do not hash to its name. git checks an object against its name
    where a walk starts, not where it follows a parent or a tree entry: an object file the run
    rewrote in its clone would otherwise be read as the object it names. `keep`, when given,
    says which checked objects' contents to return (a range of 100,000 commits is checked
    whole, but few of their bodies are read): the others map to (type, b"")."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    out = run_git_bytes(repo, *hardened_argv("cat-file", "--batch", "--buffer"),
                        input_text="".join(f"{sha}\n" for sha in wanted))
    found: dict[str, tuple[str, bytes] | None] = {}
    at = 0
    index, rindex, sha1, sha256 = out.index, out.rindex, hashlib.sha1, hashlib.sha256
    view = memoryview(out)
    try:
        for sha in wanted:
            # `<name> <type> <size>` LF `<content>` LF, or `<name> missing` LF; the object's
            # name is the hash of `<type> <size>` NUL `<content>`.
            end = index(b"\n", at)
            space = rindex(b" ", at, end)
            kind_at = at + len(sha) + 1
            if space < kind_at:
                found[sha] = None  # `<name> missing`
                at = end + 1
                continue
            size = int(out[space + 1:end])
            digest = (sha256 if len(sha) == 64 else sha1)(view[kind_at:end])
            digest.update(b"\0")
            digest.update(view[end + 1:end + 1 + size])
            kind = out[kind_at:space].decode("ascii", "replace")
            if digest.hexdigest() != sha or end + 1 + size > len(out):
                found[sha] = None
            elif keep is None or keep(sha):
                found[sha] = (kind, out[end + 1:end + 1 + size])
            else:
                found[sha] = (kind, b"")
            at = end + size + 2
    except ValueError:  # output cut short or garbled: nothing in it is vouched for
        return dict.fromkeys(wanted)
    return found


GITLINK_MODE = "160000"
# A symbolic link under backlog/ is no task edit either: a task file that is a link to
# ~/.ssh/authorized_keys would be read (and its text written back) by whatever reads tasks.
LINK_MODES = (GITLINK_MODE, "120000")
TREE_MODE = "040000"


def is_tracked(repo: Path | str, path: Path | str) -> bool:
    """Whether `path` is a file git tracks in `repo`'s work tree (False for a path outside it,
    or a repository without one)."""
    try:
        return bool(run_git(repo, *hardened_argv("ls-files", "-z", "--", str(path)), timeout=30))
    except GitError:
        return False


def is_shallow(repo: Path | str) -> bool:
    """A shallow clone cannot tell a rewritten history from one it was never given."""
    return run_git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"
