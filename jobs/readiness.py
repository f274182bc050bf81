"""Is the repository ready to be worked on: the SPEC's conditions before any recipe runs."""

from __future__ import annotations

from jobs.git import WorkTreeState

SHOWN_PATHS = 5


def some_paths(paths: tuple[str, ...] | list[str]) -> str:
    """The first few paths, for a one-line reason."""
    return ", ".join(paths[:SHOWN_PATHS]) + (" …" if len(paths) > SHOWN_PATHS else "")


def not_ready(in_progress: str | None, state: WorkTreeState, branch: str) -> str | None:
    """Why no recipe may run in this repository now, or None when it is ready.

    `in_progress` names a merge, rebase, ... that git left unfinished.
    """
    if in_progress is not None:
        return in_progress
    if state.branch is None:
        return f"HEAD is detached; {branch!r} must be checked out"
    if state.branch != branch:
        return f"on branch {state.branch!r}, not {branch!r}"
    if not state.clean:
        return f"work tree not clean: {some_paths(state.changes)}"
    return None
