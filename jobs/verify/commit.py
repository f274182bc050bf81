"""A verdict's commit: exactly the task file's paths, made on the configured branch, then checked
(SPEC: "The commit is checked afterwards"); a refused one puts the task file back, unless someone
edited it meanwhile."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jobs.core.fs import atomic_write
from jobs.core.logs import get_logger
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger.model import Attempt, EditState, Verdict
from jobs.verify import kept
from jobs.verify.context import RepoContext
from jobs.verify.rules import drift, edit_plan

log = get_logger("loop-verify")


@dataclass(frozen=True)
class Committed:
    """How a verdict commit went, checked afterwards."""

    sha: str | None = None           # the commit, when it stands
    refused: str | None = None       # git's message when the commit was refused
    extra: tuple[str, ...] = ()      # paths a hook added to it: the commit was undone
    missing: tuple[str, ...] = ()    # paths of ours a hook took out of it: undone too
    hook_changed: str | None = None  # the repository's error: the tree changed around it

    @property
    def undone(self) -> bool:
        return bool(self.extra or self.missing)

    def why_undone(self) -> str:
        """What was wrong with the undone commit, after "the ... commit "."""
        parts = []
        if self.extra:
            parts.append(f"also held {', '.join(self.extra)} (a commit hook staged it)")
        if self.missing:
            parts.append(f"did not hold {', '.join(self.missing)} (a commit hook unstaged it)")
        return " and ".join(parts)


def restore(edit: edit_plan.EditPlan) -> None:
    """Put the task file back as it was before the verdict."""
    if not still_written(edit.target, edit.after):
        return
    if edit.moves:
        edit.target.unlink(missing_ok=True)
    atomic_write(edit.source, edit.before)


def still_written(target: Path, after: bytes) -> bool:
    """Whether the task file still holds the verdict written into it. Someone who edited it
    while the commit ran (a slow hook) made it theirs: their bytes are never replaced."""
    with contextlib.suppress(OSError):
        if target.read_bytes() == after:
            return True
    log.warning("verify.restore_skipped", path=str(target),
                reason="the task file changed while its verdict was being committed")
    return False


def commit_checked(ctx: RepoContext, paths: list[str], message: str,
                   restore: Callable[[], None], head: str | None = None) -> Committed:
    """Commit exactly `paths` on `head` (HEAD now, read when not given), then check the commit
    and the tree (SPEC: "The commit is checked afterwards"). A refused commit calls `restore`;
    a commit holding more is undone."""
    if head is None:
        head = git.head_sha(ctx.root)
    try:
        made = commit_made(ctx, paths, message, head)
    except GitError as exc:
        restore()
        return Committed(refused=str(exc), hook_changed=tree_after_commit(ctx))
    return check_commit(ctx, head, made, paths)


def commit_made(ctx: RepoContext, paths: list[str], message: str, head: str) -> git.Commit:
    """`git.commit_paths` on `head`, except that a commit git made before it failed counts as
    made; GitError only when the configured branch did not move."""
    try:
        # A hook that never ends must not hold the run (and its lock) for ever: the commit
        # gets the repository's timeout, as a recipe does.
        made = git.commit_paths(ctx.root, paths, message, new=paths[1:],
                                timeout=ctx.config.timeout_for(ctx.repo),
                                grace=ctx.config.kill_grace)
    except GitError as exc:
        now = git.branch_sha(ctx.root, ctx.repo.branch)
        if now == head:
            raise
        # git failed after it had moved the branch (killed while its post-commit hook ran, or
        # "unable to write new index file" on a full disk): the commit is made, and putting the
        # old bytes back would revert the verdict in the tree. It is checked like any other.
        # (The branch, not HEAD: a hook that checked out another one moved HEAD, not it.)
        log.warning("verify.commit_made_but_failed", repo=str(ctx.root), commit=now,
                    reason=str(exc))
        made = git.Commit(now, alone=False)
    ctx.committed = True
    return made


def check_commit(ctx: RepoContext, head: str, made: git.Commit, paths: list[str]) -> Committed:
    """Keep the verdict commit (made on `head`) only if it holds exactly `paths`; then look at
    the checkout a commit hook may have changed.

    Whether or not the repository had a hook when the run looked: a recipe can install one where
    no check of the work tree sees it (.git/hooks, core.hooksPath, hook.* settings). Only a
    commit during which no process at all was started needs neither check (`Commit.alone`)."""
    if made.alone:
        return Committed(sha=made.sha)
    branch = ctx.repo.branch
    state = git.work_tree_state(ctx.root)
    # A hook that checked out another branch moved HEAD away from the verdict commit, which git
    # made on the configured branch: judge that branch's tip, and never reset the other one.
    switched = state.branch != branch
    sha = git.branch_sha(ctx.root, branch) if switched else made.sha
    committed = git.commit_files(ctx.root, sha)
    extra = tuple(drift.extra_paths(committed, paths))
    missing = tuple(drift.missing_paths(committed, paths))
    if extra or missing:
        if switched:
            # The checkout is the hook's now: only the configured branch goes back to `head`.
            git.move_branch(ctx.root, branch, head, sha)
        else:
            # The tree was clean before our edit: going back to `head` restores the task file.
            git.undo_commit(ctx.root, head)
        log.error("verify.commit_undone", repo=str(ctx.root), commit=sha, paths=list(extra),
                  missing=list(missing), reason=("a commit hook staged other paths" if extra
                                                 else "a commit hook unstaged the task file"))
        return Committed(extra=extra, missing=missing, hook_changed=tree_after_commit(ctx))
    return Committed(sha=sha, hook_changed=drift.hook_changes(state, branch))


def tree_after_commit(ctx: RepoContext) -> str | None:
    """The repository's error when a commit hook changed the work tree or the branch checked
    out, else None."""
    return drift.hook_changes(git.work_tree_state(ctx.root), ctx.repo.branch)


def record_commit(ctx: RepoContext, result: Attempt, done: Committed, after: bytes) -> None:
    """The attempt's verdict, edit state and reason after its checked commit."""
    if done.sha is not None:
        result.commit_sha, result.edit_state = done.sha, EditState.COMMITTED
    elif done.undone:
        result.reason = (f"the {result.verdict} verdict's commit {done.why_undone()}: "
                         "commit undone, task file restored")
        result.verdict, result.edit_state = Verdict.ERROR, EditState.RESTORED
    else:
        # Kept, so a later run commits it without running the recipe again.
        kept.save(ctx.config.state_dir, after)
        result.edit_state = EditState.RESTORED
        result.reason = f"commit failed, task file restored: {done.refused}"
        log.error("verify.commit_failed", repo=str(ctx.root), task=result.task_id,
                  reason=done.refused)
