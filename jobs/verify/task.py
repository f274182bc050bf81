"""One due task, start to finish: check the recipe, run it, look for drift, write and commit the
verdict. Pure judgement lives in `drift` and `edit_plan`; this is the sequence of side effects."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jobs.backlog import scan as backlog
from jobs.config.load import Config, RepoConfig
from jobs.core.durations import format_duration
from jobs.core.fs import atomic_write
from jobs.core.logs import get_logger
from jobs.git import repo as git
from jobs.git.run import GitError
from jobs.ledger.model import Attempt, EditState, Verdict
from jobs.ledger.store import Ledger
from jobs.process import recipe as runner
from jobs.verify import kept
from jobs.verify.rules import drift, edit_plan, eligibility
from jobs.verify.rules import transition as verdicts
from jobs.verify.terminal import shown

log = get_logger("loop-verify")

Ticker = Callable[[str, float], None]


@dataclass
class RepoContext:
    """What every task of one repository in one run shares."""

    config: Config
    repo: RepoConfig
    run_id: str
    ledger: Ledger | None
    stop: threading.Event | None
    ticker: Ticker | None
    just: str
    recipes: runner.Recipes | None = None   # the justfile's recipes, read once per repository
    justfile: Path | None = None
    committed: bool = False  # a verdict commit was made: git's auto maintenance is due
    scope: runner.Scope | None = None  # the run's claim on the recipes it starts
    before_commit: Callable[[], None] | None = None  # the run's part before a verdict commit
    name: str = ""  # how output names the repository

    @property
    def root(self) -> Path:
        return self.repo.path

    def attempt(self, verdict: str, *, task: eligibility.Classified | None = None,
                reason: str | None = None, started: datetime | None = None) -> Attempt:
        now = datetime.now(UTC)
        result = Attempt(run_id=self.run_id, started_at=started or now, ended_at=now,
                         repo=str(self.root), verdict=verdict, reason=reason)
        if task is not None:
            result.task_id = task.task.id
            result.task_path = str(task.task.path.relative_to(self.root))
            result.recipe = task.recipe
            result.label_date = task.label_date.isoformat() if task.label_date else None
        return result


@dataclass(frozen=True)
class TaskResult:
    attempt: Attempt      # recorded in the ledger already when its `id` is set
    go_on: bool = True    # False: the repository's remaining tasks must not run
    # The repository's own error, found after this task (a commit hook changed the tree).
    repo_error: str | None = None


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


def storable(result: Attempt) -> Attempt:
    """The attempt with its free-text fields fit for the ledger, the terminal and the log.

    A recipe may leave a file whose name is not UTF-8; its path in a reason would otherwise make
    the ledger write (and every later run's `skipped` record) fail.
    """
    for name in ("reason", "task_path", "output_path", "summary"):
        value = getattr(result, name)
        if value is not None:
            setattr(result, name, shown(value))
    return result


def verify_task(ctx: RepoContext, task: eligibility.Classified,
                config: backlog.BacklogConfig) -> TaskResult:
    """Verify one due task and return what happened to it."""
    assert task.recipe is not None and task.label is not None
    started = datetime.now(UTC)
    timeout = ctx.config.timeout_for(ctx.repo)
    unsafe = edit_plan.unsafe_to_edit(task, config, timeout, started)
    if unsafe is not None:
        # A verdict that could not be written is not worth running the recipe for.
        return TaskResult(ctx.attempt(Verdict.ERROR, task=task, started=started, reason=unsafe))
    outcome = check_recipe(ctx, task, timeout)
    if isinstance(outcome, Attempt):
        # `just` cannot run here: this task is tried again next time; so are the others.
        return TaskResult(outcome)
    head: str | None = None  # HEAD as the recipe left it: where the verdict commit goes
    if outcome is None:
        head = git.head_sha(ctx.root)
        result = run_recipe(ctx, task, timeout)
        if isinstance(result, Attempt):
            if result.verdict == Verdict.ERROR:
                # Killed from outside (the OOM killer) after it may have written into the tree:
                # still the task's `error`, but no later recipe may start on what it left.
                left = moved_since(ctx, head)
                if left is not None:
                    result.reason = f"{result.reason}; {left}"
                    return TaskResult(result, go_on=False)
            return TaskResult(result)  # after an interruption the driver records the rest
        outcome = result
        moved = moved_since(ctx, head)
        if moved is not None:
            att = ctx.attempt(Verdict.DRIFT, task=task, started=started, reason=moved)
            att.exit_code, att.duration = outcome.exit_code, outcome.duration
            att.output_path = outcome.output_path
            return TaskResult(att, go_on=False)
    return write_verdict(ctx, task, config, outcome, started, head)


def moved_since(ctx: RepoContext, head: str) -> str | None:
    """How the checkout differs from the clean one on `head` a recipe started in, or None."""
    after = git.work_tree_state(ctx.root)
    head_after = git.head_sha(ctx.root) if after.branch == ctx.repo.branch else None
    return drift.drift_reason(after, ctx.repo.branch, head, head_after,
                              git.hidden_from_status(ctx.root))


def output_path(ctx: RepoContext, task: eligibility.Classified) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in task.task.id)
    folder = ctx.config.state_dir / "runs" / ctx.run_id
    stem = f"{ctx.root.name}-{safe}"
    path, n = folder / f"{stem}.log", 2
    # Two configured repositories may share a folder name (~/a/app, ~/b/app) and a task id: each
    # verdict must keep pointing at its own output.
    while os.path.exists(path):  # never raises: an unwritable state_dir is the runner's error
        path, n = folder / f"{stem}-{n}.log", n + 1
    return path


def check_recipe(ctx: RepoContext, task: eligibility.Classified,
                 timeout: float) -> verdicts.Outcome | Attempt | None:
    """A failed Outcome when the recipe cannot exist, an error Attempt, or None to run it."""
    assert task.recipe is not None
    if ctx.recipes is None:
        try:
            ctx.justfile = runner.find_justfile(ctx.root)
            if ctx.justfile is None:
                return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                        not_run="no justfile in the repository root")
            ctx.recipes = runner.read_recipes(ctx.justfile, ctx.root, just=ctx.just)
        except runner.JustfileInvalid as exc:
            return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                    not_run=f"the justfile cannot be read: {exc.message}")
        except runner.RecipeError as exc:
            return ctx.attempt(Verdict.ERROR, task=task, reason=str(exc))
    if task.recipe not in ctx.recipes.names:
        return verdicts.Outcome(verdicts.FAIL, task.recipe, timeout=timeout,
                                not_run=f"the justfile has no recipe {task.recipe}")
    return None


def run_recipe(ctx: RepoContext, task: eligibility.Classified,
               timeout: float) -> verdicts.Outcome | Attempt:
    assert task.recipe is not None and ctx.justfile is not None
    started = datetime.now(UTC)
    out = output_path(ctx, task)
    tick = None
    if ctx.ticker is not None:
        ticker = ctx.ticker
        label = (f"{ctx.name or ctx.root.name} {task.task.id} just {task.recipe} "
                 f"(limit {format_duration(timeout)})")

        def tick(elapsed: float) -> None:
            ticker(label, elapsed)

    if ctx.scope is not None:
        swept = ctx.scope.sweep_once()  # only a run about to start a recipe sweeps
        if swept:
            log.warning("run.swept_abandoned", run_id=ctx.run_id, processes=swept,
                        reason="left running by a loop-verify of this state directory that died")
    log.info("verify.started", run_id=ctx.run_id, repo=str(ctx.root), task=task.task.id,
             recipe=task.recipe, timeout_s=timeout)
    runs = ctx.recipes.running(task.recipe) if ctx.recipes is not None else ()
    res = runner.run_recipe(ctx.root, ctx.justfile, task.recipe, timeout=timeout,
                            kill_grace=ctx.config.kill_grace, output_path=out, just=ctx.just,
                            on_tick=tick, stop=ctx.stop, scope=ctx.scope,
                            output_limit=ctx.config.output_limit, state_dir=ctx.config.state_dir,
                            runs=runs)
    if res.outcome in ("error", "interrupted"):
        stopped = ("stopped while the recipe ran" if res.exit_code is not None
                   else "not run: loop-verify was told to stop")
        att = ctx.attempt(res.outcome, task=task, started=started, reason=res.error or stopped)
        att.exit_code, att.duration, att.output_path = (res.exit_code, res.duration,
                                                        str(res.output_path))
        return att
    verdict = (verdicts.TIMEOUT if res.outcome == "timed_out"
               else verdicts.PASS if res.exit_code == 0 else verdicts.FAIL)
    return verdicts.Outcome(verdict, task.recipe, exit_code=res.exit_code, duration=res.duration,
                            timeout=timeout, tail=res.tail, output_path=str(res.output_path))


def write_verdict(ctx: RepoContext, task: eligibility.Classified,
                  config: backlog.BacklogConfig, outcome: verdicts.Outcome,
                  started: datetime, head: str | None = None) -> TaskResult:
    """Write the verdict into the task file and commit exactly that file."""
    assert ctx.ledger is not None
    result = ctx.attempt(outcome.verdict, task=task, started=started)
    result.exit_code, result.duration = outcome.exit_code, outcome.duration
    result.output_path = outcome.output_path
    result.reason = outcome.not_run or failure_reason(outcome)
    try:
        current = task.task.path.read_bytes()
    except OSError as exc:
        result.verdict, result.reason = Verdict.ERROR, f"cannot read the task file again: {exc}"
        return TaskResult(result)
    edit = edit_plan.plan(ctx.root, task, config, outcome, current, datetime.now(UTC))
    if isinstance(edit, str):
        result.verdict, result.reason = Verdict.ERROR, edit
        return TaskResult(result)
    result.edit_state = EditState.PENDING
    result.before_sha256 = edit_plan.sha256(edit.before)
    result.after_sha256 = edit_plan.sha256(edit.after)
    result.edit_paths = edit.paths
    result.commit_message = edit.message
    result.summary = edit.note
    # The one write crash recovery depends on: synced before the task file is touched.
    ctx.ledger.record(storable(result), durable=True)
    try:
        edit.target.parent.mkdir(parents=True, exist_ok=True)
        backlog.write_task(edit.target, edit.after)
        if edit.moves:
            edit.source.unlink()
    except OSError as exc:
        if edit.moves:
            edit.target.unlink(missing_ok=True)
        result.verdict, result.edit_state = Verdict.ERROR, EditState.ABANDONED
        result.reason = f"cannot write the task file: {exc}"
        return TaskResult(result)
    if ctx.before_commit is not None:
        ctx.before_commit()
    done = commit_checked(ctx, edit.paths, edit.message, restore=lambda: restore(edit),
                          head=head)
    record_commit(ctx, result, done, edit.after)
    result.ended_at = datetime.now(UTC)
    return TaskResult(result, go_on=done.hook_changed is None, repo_error=done.hook_changed)


def failure_reason(outcome: verdicts.Outcome) -> str | None:
    """What a failed recipe did, for its line, the ledger and the message: its exit code, or
    the limit it ran into."""
    if outcome.verdict == verdicts.TIMEOUT:
        return f"timed out after {format_duration(outcome.timeout)}"
    if outcome.verdict == verdicts.FAIL and outcome.exit_code is not None:
        return f"exited {outcome.exit_code}"
    return None


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
