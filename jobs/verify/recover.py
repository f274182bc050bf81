"""Verdicts an earlier run left uncommitted: an edit a killed run wrote but never committed, and a
verdict whose commit was refused (kept, committed later without running the recipe again).
The rules are in `recovery`; this is the sequence of side effects."""

from __future__ import annotations

import glob
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jobs.backlog.scan import write_task
from jobs.core.logs import get_logger
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger.model import Attempt, EditState, Verdict
from jobs.verify import kept
from jobs.verify.commit import check_commit, commit_checked, commit_made, still_written
from jobs.verify.context import RepoContext
from jobs.verify.rules import readiness, recovery
from jobs.verify.rules.edit_plan import sha256

log = get_logger("loop-verify")

Finish = Callable[[Attempt], None]


def file_sha256(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except FileNotFoundError:
        return None


def stray_temp_files(root: Path, paths: list[str]) -> list[Path]:
    """Temporary siblings `atomic_write` makes for these task files (`.<name>.*.tmp`)."""
    found: list[Path] = []
    for rel in paths:
        path = root / rel
        found.extend(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
    return found


def report_recovered(p: Attempt, note: str, finish: Finish) -> None:
    # The earlier run never reported this verdict as done: this run does, so a failure still
    # reaches the exit code and the output.
    p.reason = f"{p.reason}; {note}" if p.reason else note
    finish(p)


def recovered(p: Attempt, how: str, finish: Finish, settled: Finish) -> None:
    p.edit_state = EditState.COMMITTED
    log.info("verify.recovered", repo=p.repo, task=p.task_id, how=how, commit=p.commit_sha)
    report_recovered(p, "verdict of an interrupted run, finished by this one", finish)
    settled(p)


def recover_pending(ctx: RepoContext, pending: list[Attempt], finish: Finish,
                    settled: Finish) -> bool:
    """Finish or retire edits a killed run left between writing and committing; `settled` is
    told of each edit whose fate is now known (its run's claim is settled).

    Returns False when the repository must be skipped.
    """
    assert ctx.ledger is not None
    root = ctx.root
    for p in pending:
        paths = p.edit_paths
        original, target = root / paths[0], root / paths[-1]
        for stray in stray_temp_files(root, paths):
            # A crash inside the atomic write left its temporary sibling, ours by its name.
            stray.unlink(missing_ok=True)
            log.info("verify.recovered", repo=str(root), task=p.task_id,
                     how="removed an unfinished temporary file", path=str(stray))
        current = file_sha256(target)
        found: str | None = None
        wrong: str | None = None
        if recovery.written(p, current):
            state = git.work_tree_state(root)
            changes = state.changes
            wrong = readiness.wrong_checkout(readiness.operation_in_progress(git.git_dir(root)),
                                             state.branch, ctx.repo.branch)
        else:
            changes = ()
            if p.commit_message and p.after_sha256:
                # Killed after its commit, the task edited since: the verdict is in git.
                found = git.verdict_commit(root, paths[-1], p.commit_message, p.after_sha256,
                                           p.started_at)
        decision = recovery.decide(p, current, changes, in_git=found is not None,
                                   wrong_checkout=wrong, source_sha256=(
                                       file_sha256(original) if len(paths) > 1 else None))
        if decision.action is recovery.Action.ABANDON:
            # A moved task's new file left here is never ours to delete: the run that died
            # wrote it whole or not at all, so one that is not the edit is the owner's.
            p.edit_state = EditState.ABANDONED
            ctx.ledger.update(p)
            # Its claim is released: the task stays eligible, for any machine.
            settled(p)
            log.info("verify.recovered", repo=str(root), task=p.task_id,
                     how="edit never written; task stays eligible")
            continue
        if decision.action is recovery.Action.SKIP_REPO:
            finish(ctx.attempt(Verdict.SKIPPED, reason=decision.reason))
            return False
        if decision.action is recovery.Action.ALREADY_COMMITTED:
            last = (found,) if found else git.last_commit(root, paths[-1])
            p.commit_sha = last[0] if last else None
            how = "already committed"
        else:
            if len(paths) > 1 and original.exists():
                original.unlink()
            assert p.commit_message is not None
            head = git.head_sha(root)
            try:
                made = commit_made(ctx, paths, p.commit_message, head)
            except GitError as exc:
                # Left pending, as it is: the next run tries again (a stale index.lock, say).
                finish(ctx.attempt(Verdict.SKIPPED, reason=(
                    f"cannot commit the pending edit of {p.task_id}: {exc}")))
                return False
            done = check_commit(ctx, head, made, paths)
            if done.sha is None:
                # A hook added paths: the commit was undone, and with it the edit.
                p.edit_state = EditState.ABANDONED
                ctx.ledger.update(p)
                undone = ctx.attempt(Verdict.ERROR, reason=(
                    f"the pending edit's commit {done.why_undone()}: commit undone, task file "
                    "restored"))
                undone.task_id, undone.task_path = p.task_id, p.task_path
                undone.recipe, undone.label_date = p.recipe, p.label_date
                finish(undone)
                settled(p)
            else:
                p.commit_sha = done.sha
                recovered(p, "committed the pending edit", finish, settled)
            if done.hook_changed is not None:
                finish(ctx.attempt(Verdict.ERROR, reason=done.hook_changed))
                return False
            continue
        recovered(p, how, finish, settled)
    return True


@dataclass
class KeptResult:
    settled: set[str] = field(default_factory=set)   # task paths not to verify again this run
    repo_error: str | None = None                     # a commit hook changed the work tree


def commit_kept(ctx: RepoContext, rows: list[Attempt], finish: Finish,
                settled: Finish) -> KeptResult:
    """Commit verdicts whose commit an earlier run saw refused, onto the bytes they came from.

    Called on a clean tree that can take a commit. A verdict refused again is this run's `error`
    for its task, whose recipe is not run again; one whose task changed is dropped. `settled` is
    told of each kept verdict committed or dropped (the claim it held is finished or released:
    a dropped one no longer keeps the task from any machine).
    """
    assert ctx.ledger is not None
    out = KeptResult()
    root, state_dir = ctx.root, ctx.config.state_dir
    for row in rows:
        paths = row.edit_paths
        source, target = root / paths[0], root / paths[-1]
        after = kept.load(state_dir, row.after_sha256)
        decision = recovery.decide_kept(row, file_sha256(source), target.exists() and
                                        len(paths) > 1, after is not None)
        if decision.action is not recovery.Action.COMMIT or after is None:
            row.edit_state = EditState.ABANDONED
            ctx.ledger.update(row)
            kept.drop(state_dir, row.after_sha256)
            log.info("verify.kept_dropped", repo=str(root), task=row.task_id,
                     reason=decision.reason)
            settled(row)
            continue
        before = source.read_bytes()
        # Pending again while written and uncommitted: a run killed now leaves what the
        # pending-edit recovery finishes.
        row.edit_state = EditState.PENDING
        ctx.ledger.update(row)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_task(target, after)
        if len(paths) > 1:
            source.unlink()
        assert row.commit_message is not None

        def restore(before: bytes = before, source: Path = source, target: Path = target,
                    moves: bool = len(paths) > 1, after: bytes = after) -> None:
            if not still_written(target, after):
                return
            if moves:
                target.unlink(missing_ok=True)
            write_task(source, before)

        done = commit_checked(ctx, paths, row.commit_message, restore)
        if row.task_path is not None:
            out.settled.add(row.task_path)
        if done.sha is not None:
            row.commit_sha, row.edit_state = done.sha, EditState.COMMITTED
            kept.drop(state_dir, row.after_sha256)
            log.info("verify.recovered", repo=str(root), task=row.task_id,
                     how="committed a verdict whose commit was refused", commit=done.sha)
            report_recovered(row, f"verdict of run {row.run_id}, whose commit was refused, "
                             "committed by this one", finish)
            settled(row)
        else:
            if done.undone:
                # Undone: the hook, not the refusal, is the problem now; the task is run afresh.
                row.edit_state = EditState.ABANDONED
                kept.drop(state_dir, row.after_sha256)
            else:
                row.edit_state = EditState.RESTORED
            ctx.ledger.update(row)
            if done.undone:
                settled(row)
            why = (f"its commit {done.why_undone()}: commit undone" if done.undone
                   else str(done.refused))
            again = ctx.attempt(Verdict.ERROR, reason=(
                f"the {row.verdict} verdict of run {row.run_id} still cannot be committed "
                f"(recipe not run again): {why}"))
            again.task_id, again.task_path = row.task_id, row.task_path
            again.recipe, again.label_date = row.recipe, row.label_date
            finish(again)
        if done.hook_changed is not None:
            out.repo_error = done.hook_changed
            return out
    return out
