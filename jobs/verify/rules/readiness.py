"""Is the repository ready to be worked on: the SPEC's conditions before any recipe runs."""

from __future__ import annotations

from pathlib import Path

from jobs.git.facts import CommitFacts, WorkTreeState

SHOWN_PATHS = 5

# What git leaves in its folder while an operation waits to be finished.
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge is in progress",
    "rebase-merge": "a rebase is in progress",
    "rebase-apply": "a rebase or am is in progress",
    "CHERRY_PICK_HEAD": "a cherry-pick is in progress",
    "REVERT_HEAD": "a revert is in progress",
    "BISECT_LOG": "a bisect is in progress",
}


def operation_in_progress(gdir: Path) -> str | None:
    """What git left unfinished in the repository whose git folder is `gdir`, or None."""
    for name, what in _IN_PROGRESS.items():
        if (gdir / name).exists():
            return what
    return _sequence_in_progress(gdir / "sequencer" / "todo")


def _sequence_in_progress(todo: Path) -> str | None:
    """A cherry-pick or revert of several commits whose stopped step was committed by hand:
    CHERRY_PICK_HEAD and REVERT_HEAD are gone, but git (and `git status`) still holds the
    rest of the sequence, named by the first command of its to-do list."""
    try:
        first = todo.read_text(encoding="utf-8", errors="replace").split(maxsplit=1)
    except OSError:
        return None
    if not first:
        return None
    return _IN_PROGRESS["REVERT_HEAD" if first[0] in ("revert", "r") else "CHERRY_PICK_HEAD"]


def some_paths(paths: tuple[str, ...] | list[str]) -> str:
    """The first few paths, for a one-line reason."""
    return ", ".join(paths[:SHOWN_PATHS]) + (" …" if len(paths) > SHOWN_PATHS else "")


def wrong_checkout(in_progress: str | None, checked_out: str | None, branch: str) -> str | None:
    """Why nothing may be committed here now: a merge, rebase, ... that git left unfinished
    (`in_progress`), or a checkout other than `branch` (`checked_out` None: detached)."""
    if in_progress is not None:
        return in_progress
    if checked_out is None:
        return f"HEAD is detached; {branch!r} must be checked out"
    if checked_out != branch:
        return f"on branch {checked_out!r}, not {branch!r}"
    return None


def not_ready(in_progress: str | None, state: WorkTreeState, branch: str,
              hidden: tuple[tuple[str, str], ...] = ()) -> str | None:
    """Why no recipe may run in this repository now, or None when it is ready.

    `in_progress` names a merge, rebase, ... that git left unfinished; `hidden` the files
    `git status` is told not to look at (path, flag), whose changes it cannot report.
    """
    problem = wrong_checkout(in_progress, state.branch, branch)
    if problem is not None:
        return problem
    if not state.clean:
        return f"work tree not clean: {some_paths(state.changes)}"
    if hidden:
        path, flag = hidden[0]
        more = f" (and {len(hidden) - 1} more)" if len(hidden) > 1 else ""
        return (f"work tree not clean: {path} is marked {flag}{more}, so git status cannot "
                f"tell whether it changed (git update-index --no-{flag} {path})")
    return None


def verdict_paths(tasks: list[tuple[Path, str]]) -> list[str]:
    """Every path a verdict on these tasks (repository-relative path, folder) may commit: a
    task reopened from completed/ moves to backlog/tasks/."""
    paths = []
    for rel, folder in tasks:
        paths.append(str(rel))
        if folder == "completed":
            paths.append(str(Path("backlog") / "tasks" / rel.name))
    return paths


def cannot_commit(facts: CommitFacts) -> str | None:
    """Why no verdict could be committed here (checked before any recipe runs), or None.

    A recipe whose verdict can never be committed would otherwise run again every morning.
    """
    if facts.locks:
        return (f"cannot take a commit: {facts.locks[0]} exists (a git command is running "
                "there, or one that crashed left it)")
    if facts.signing_error is not None:
        return ("cannot take a commit: commit.gpgsign is set but signing fails: "
                f"{facts.signing_error}")
    if facts.ignored:
        path, rule = facts.ignored[0]
        return f"cannot take a commit: backlog/ is ignored by git ({rule} ignores {path})"
    if facts.unwritable:
        folder, why = facts.unwritable[0]
        return f"cannot take a commit: {folder}/ cannot be written ({why})"
    return None


def commit_fix(facts: CommitFacts, root: Path) -> str | None:
    """What the owner should do about what `cannot_commit` reports (for `doctor`)."""
    if facts.locks:
        return f"if no git command is running in {root}, remove {facts.locks[0]}"
    if facts.signing_error is not None:
        return ("make signing work for the account the scheduler runs as (a key the agent can "
                f"use without a prompt), or `git -C {root} config commit.gpgsign false`")
    if facts.ignored:
        rule = facts.ignored[0][1]
        source = rule.split(":", 1)[0]
        return f"stop ignoring backlog/ (the rule {rule} in {source}) and commit the task files"
    if facts.unwritable:
        folder = root / facts.unwritable[0][0]
        return (f"let the account the scheduler runs as write into {folder} (its mode, owner, "
                "an immutable flag or a read-only mount)")
    return None
