"""Every git command loop-verify runs in a repository, through the one runner (jobs/git/run.py)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs.core.fs import cannot_write_into
from jobs.git.facts import CommitFacts, WorkTreeState
from jobs.git.run import STOP_GRACE, Finished, GitError, run, said


def _git(root: Path, args: Sequence[str], timeout: float | None = None,
         settings: Sequence[str] = (), grace: float = STOP_GRACE) -> Finished:
    return run([*settings, *args], cwd=root, timeout=timeout, grace=grace)


def _run(root: Path, *args: str, ok: tuple[int, ...] = (0,), timeout: float | None = None,
         settings: Sequence[str] = ()) -> str:
    return said(_git(root, args, timeout, settings), args[0], ok)


def git_dir(root: Path) -> Path:
    """The repository's git directory, read from disk (a linked worktree has a `.git` file)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    text = dot.read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir:"):
        raise GitError(f"{dot}: not a gitdir file")
    target = Path(text.removeprefix("gitdir:").strip())
    return target if target.is_absolute() else (root / target).resolve()


def work_tree_state(root: Path) -> WorkTreeState:
    """Branch and every non-ignored change, in one `git status` process."""
    # --no-ahead-behind: the branch's distance from its upstream is never read here, and
    # counting it walks every commit the run made since the last push, once per task.
    # --ignore-submodules=none: `ignore = dirty` in .gitmodules (or diff.ignoreSubmodules) would
    # hide what a recipe changed inside a submodule.
    # core.fsmonitor=false: a configured fsmonitor (a program a recipe can name in .git/config)
    # tells git status what changed; one that answers "nothing" would hide every change, and a
    # hook or daemon it starts is a process no recipe tree accounts for.
    out = _run(root, "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z",
               "--untracked-files=all", "--ignore-submodules=none",
               settings=("-c", "core.fsmonitor=false"))
    branch: str | None = None
    changes: list[str] = []
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        if rec.startswith("# branch.head "):
            head = rec.removeprefix("# branch.head ")
            branch = None if head == "(detached)" else head
        elif rec.startswith("#"):
            continue
        elif rec.startswith("1 "):
            changes.append(rec.split(" ", 8)[8])
        elif rec.startswith("2 "):
            changes.append(rec.split(" ", 9)[9])
            i += 1  # a rename's original path follows as its own record
        elif rec.startswith("u "):
            changes.append(rec.split(" ", 10)[10])
        elif rec.startswith("? "):
            changes.append(rec[2:])
    return WorkTreeState(branch, tuple(changes))


def hidden_from_status(root: Path) -> tuple[tuple[str, str], ...]:
    """(path, flag) of each index entry whose changes `git status` never looks for: marked
    assume-unchanged, or skip-worktree while present in the work tree (the entries a sparse
    checkout leaves out are absent, and hide nothing). One `git ls-files -v`."""
    hidden: list[tuple[str, str]] = []
    for rec in _run(root, "ls-files", "-v", "-z").split("\0"):
        tag, path = rec[:1], rec[2:]
        if tag.islower():
            hidden.append((path, "assume-unchanged"))
        elif tag == "S" and os.path.lexists(root / path):
            hidden.append((path, "skip-worktree"))
    return tuple(hidden)


@dataclass(frozen=True)
class Commit:
    sha: str
    # No process at all was started on this machine while `git commit` ran: no hook, filter,
    # fsmonitor or signing program ran in it (each is a process git starts), so git committed
    # exactly the paths named and changed nothing in the work tree. False whenever unsure.
    alone: bool


def commit_paths(root: Path, paths: Sequence[str], message: str, *,
                 new: Sequence[str] = (), timeout: float | None = None,
                 grace: float = STOP_GRACE) -> Commit:
    """Commit exactly `paths` (changed, removed, or added when listed in `new`).

    `git commit -- paths` takes the work tree's version of tracked paths itself, so only a file
    git does not know yet (listed in `new`) is added first: one process less per verdict.
    With `timeout`, a commit (hooks included) still running then is stopped: GitError.
    """
    # A removed path is never named to `git add`: that fails when its removal is already staged
    # (a run killed between its `git add` and its commit left it so).
    present = [p for p in new if (Path(root) / p).exists()]
    if present:
        _run(root, "add", "--", *present)
    try:
        # Each `git commit` would start `git maintenance run --auto` (a process per verdict);
        # the run asks for it once per repository instead (`auto_maintenance`).
        # --untracked-files=no: only what git shows about the commit, never what it holds; it
        # spares git a walk of the work tree for untracked files.
        done = _git(root, ["commit", "--quiet", "--untracked-files=no", "--message", message,
                           "--", *paths], timeout, NO_AUTO_MAINTENANCE, grace)
        alone = started_nothing_after(done.pid)
        said(done, "commit")
    except GitError:
        # Leave the index as we found it; the caller restores the files themselves. If even
        # that fails (a stale index.lock, say), the commit's own error is the one to report.
        with contextlib.suppress(GitError):
            _run(root, "reset", "--quiet", "--", *paths)
        raise
    return Commit(head_sha(root), alone)


# Linux: the last process id handed out in the reader's own PID namespace (ids are handed out in
# increasing order and a live or unreaped process keeps its own).
_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def started_nothing_after(pid: int) -> bool:
    """True only when no process or thread has been created on this machine (in this PID
    namespace) since process `pid`, which has ended. Any activity elsewhere, threads included,
    makes it False; so does a system without the counter (macOS): False is always safe."""
    try:
        return int(_LAST_PID.read_bytes()) == pid
    except (OSError, ValueError):
        return False


NO_AUTO_MAINTENANCE = ("-c", "maintenance.auto=false")


def auto_maintenance(root: Path) -> None:
    """What git would have done after each of the run's commits, once: `git maintenance run
    --auto`, which packs loose objects or runs `gc` only when git's own thresholds say so."""
    _run(root, "maintenance", "run", "--auto", "--quiet")


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def head_sha(root: Path) -> str:
    """HEAD's commit, read from the branch's loose ref file when it has one, else from git.

    Right after a commit the files backend always has the branch as a loose ref, so this saves
    a process per verdict; anything unexpected (packed refs, reftable, a detached HEAD) asks git.
    """
    try:
        gdir = git_dir(root)
        head = (gdir / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: refs/heads/"):
            common = gdir
            if (gdir / "commondir").is_file():
                common = (gdir / (gdir / "commondir").read_text(encoding="utf-8").strip())
            sha = (common / head.removeprefix("ref: ")).read_text(encoding="utf-8").strip()
            if _SHA.fullmatch(sha):
                return sha
    except (OSError, UnicodeDecodeError, GitError):
        pass
    return _run(root, "rev-parse", "HEAD").strip()


def blob_ids(root: Path, folders: Sequence[str]) -> dict[str, str]:
    """The git blob id of every file under `folders` in the checked-out commit, by its path from
    the root: one `git ls-tree` for all of them (a claim names the task file's blob)."""
    out = _git(root, ["ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *folders])
    if out.returncode != 0:
        return {}  # a branch without a commit yet holds no task file
    blobs: dict[str, str] = {}
    for entry in out.stdout.split(b"\0"):
        meta, tab, path = entry.partition(b"\t")
        parts = meta.split()
        if tab and len(parts) == 3 and parts[1] == b"blob":
            blobs[os.fsdecode(path)] = parts[2].decode("ascii")
    return blobs


def is_ancestor(root: Path, sha: str, of: str = "HEAD") -> bool:
    """Whether commit `sha` is in the history of `of` (False when this clone lacks it)."""
    return _git(root, ["merge-base", "--is-ancestor", sha, of]).returncode == 0


def last_commit(root: Path, path: str) -> tuple[str, str] | None:
    """SHA and subject of the newest commit touching `path`, if any."""
    out = _run(root, "log", "-1", "--format=%H%x00%s", "--", path).strip()
    if not out:
        return None
    sha, _, subject = out.partition("\0")
    return sha, subject


def verdict_commit(root: Path, path: str, subject: str, after_sha256: str,
                   since: datetime) -> str | None:
    """The commit, made since `since`, whose subject is `subject` and whose version of `path` has
    the sha256 `after_sha256`: a verdict's own commit, found even after later commits changed the
    file. One `git log`, plus one `git show` per commit with that subject (and, when its bytes
    differ, one `git cat-file --filters`)."""
    stamp = (since - timedelta(minutes=5)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = _run(root, "log", f"--since={stamp}", "--format=%H%x00%s", "--", path)
    for line in out.splitlines():
        sha, _, said = line.partition("\0")
        if said != subject:
            continue
        shown = _git(root, ["show", f"{sha}:{path}"])
        if shown.returncode == 0 and hashlib.sha256(shown.stdout).hexdigest() == after_sha256:
            return sha
        # The hash is of the bytes written into the work tree; an eol or filter attribute
        # (CRLF on checkout, say) makes the blob differ from them: compare them as checked out.
        checked_out = _git(root, ["cat-file", "--filters", f"{sha}:{path}"])
        if (checked_out.returncode == 0
                and hashlib.sha256(checked_out.stdout).hexdigest() == after_sha256):
            return sha
    return None


def _config_value(root: Path, key: str) -> str | None:
    try:
        return _run(root, "config", "--get", key).strip() or None
    except GitError:  # exit 1: not set
        return None


def branch_remote_url(root: Path, branch: str) -> str | None:
    """The URL of `branch`'s remote (insteadOf rewrites applied), else of `origin` when the
    branch tracks nothing (pushed with `git push origin HEAD` only); None without either."""
    remote = _config_value(root, f"branch.{branch}.remote")
    if remote == ".":
        return None
    if remote is None:
        if _config_value(root, "remote.origin.url") is None:
            return None
        remote = "origin"
    try:
        return _run(root, "ls-remote", "--get-url", remote).strip() or None
    except GitError:
        return None


def commit_files(root: Path, sha: str) -> list[str]:
    """Every path a (non-root) commit changed, a rename as its two paths."""
    out = _run(root, "diff-tree", "--no-commit-id", "--name-only", "--no-renames", "-r", "-z",
               sha)
    return [p for p in out.split("\0") if p]


def undo_commit(root: Path, previous: str) -> None:
    """Put branch, index and tracked files back to `previous` (untracked files stay).

    Only used right after our own commit on a tree that was clean before it, so nothing but our
    edit and what a hook did to tracked files is lost.
    """
    _run(root, "reset", "--quiet", "--hard", previous)


def branch_sha(root: Path, branch: str) -> str:
    """The commit `branch` points at, whatever is checked out."""
    return _run(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}").strip()


def move_branch(root: Path, branch: str, to: str, expected: str) -> None:
    """Point `branch` at `to`, only if it still points at `expected`; the checkout is untouched
    (used when another branch is checked out)."""
    _run(root, "update-ref", "-m", "loop-verify: undo a verdict commit", f"refs/heads/{branch}",
         to, expected)


def commit_facts(root: Path, branch: str, paths: Sequence[str]) -> CommitFacts:
    """Whether a verdict commit of `paths` on `branch` could be made, without making one.

    Signing is tried for real (a signed commit object no ref points to) only when configured.
    """
    gdir = git_dir(root)
    common = gdir
    if (gdir / "commondir").is_file():
        common = (gdir / (gdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    # A commit on the checked-out branch locks HEAD (the worktree's own) as well as the branch.
    locks = tuple(p for p in (gdir / "index.lock", gdir / "HEAD.lock",
                              common / "refs" / "heads" / f"{branch}.lock") if p.exists())
    signing = _run(root, "config", "--type=bool", "--get", "commit.gpgsign",
                   ok=(0, 1)).strip() == "true"
    signing_error = None
    if signing:
        try:
            # `commit-tree` ignores commit.gpgsign: -S asks for the signature it would make.
            _run(root, "commit-tree", "-S", "-p", "HEAD", "-m", "loop-verify signing probe",
                 "HEAD^{tree}", timeout=30)
        except GitError as exc:
            signing_error = str(exc)
    ignored: list[tuple[str, str]] = []
    if paths:
        out = _run(root, "check-ignore", "--no-index", "--verbose", "--", *paths, ok=(0, 1))
        for line in out.splitlines():
            rule, _, path = line.partition("\t")
            ignored.append((path, rule))
    unwritable: list[tuple[str, str]] = []
    for folder in sorted({str(Path(p).parent) for p in paths}):
        why = cannot_write_into(root / folder)
        if why is not None:
            unwritable.append((folder, why))
    return CommitFacts(locks, signing, signing_error, tuple(ignored), tuple(unwritable))


def committer_problem(root: Path) -> str | None:
    """Why git cannot name the committer here (its own `fatal:` line), or None."""
    for var in ("GIT_COMMITTER_IDENT", "GIT_AUTHOR_IDENT"):
        try:
            _run(root, "var", var)
        except GitError as exc:
            said = str(exc)
            return said[said.index("fatal:"):] if "fatal:" in said else var
    return None


def version() -> str:
    return _run(Path.cwd(), "--version").strip()


def remote_urls(root: Path) -> dict[str, str]:
    """Each configured remote's URL as written (before insteadOf), by remote name."""
    try:
        out = _run(root, "config", "--get-regexp", r"^remote\..*\.url$")
    except GitError:
        return {}  # no remote at all (git config exits 1), or not a repository any more
    urls: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        urls.setdefault(key.removeprefix("remote.").removesuffix(".url"), value)
    return urls
