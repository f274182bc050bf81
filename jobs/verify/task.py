"""One due task, start to finish: check the recipe, run it, look for drift, write and commit the
verdict. Pure judgement lives in `drift` and `edit_plan`; this is the sequence of side effects."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jobs.backlog import scan as backlog
from jobs.core.durations import format_duration
from jobs.core.logs import get_logger
from jobs.git import repo as git
from jobs.ledger.model import Attempt, EditState, Verdict
from jobs.process import recipe as runner
from jobs.verify.commit import commit_checked, record_commit, restore
from jobs.verify.context import RepoContext
from jobs.verify.rules import drift, edit_plan, eligibility
from jobs.verify.rules import transition as verdicts
from jobs.verify.terminal import shown

log = get_logger("loop-verify")

@dataclass(frozen=True)
class TaskResult:
    attempt: Attempt      # recorded in the ledger already when its `id` is set
    go_on: bool = True    # False: the repository's remaining tasks must not run
    # The repository's own error, found after this task (a commit hook changed the tree).
    repo_error: str | None = None


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
