"""What counts as drift: a recipe that left the checkout other than it found it."""

from __future__ import annotations

from jobs.git.facts import WorkTreeState


def drift_reason(after: WorkTreeState, branch: str, head_before: str,
                 head_after: str | None,
                 hidden: tuple[tuple[str, str], ...] = ()) -> str | None:
    """Why the checkout after a recipe is not the one it started in, or None.

    A recipe that switched branches or committed leaves a clean tree, but the verdict would then
    be committed somewhere else, or on top of the recipe's own commit. `head_after` is only
    needed (and only read) when the configured branch is still checked out. `hidden` holds the
    files (path, flag) `git status` is now told not to look at: none were before the recipe
    (readiness), so the recipe marked them, and what it changed there git status cannot show.
    """
    reasons = []
    if not after.clean:
        reasons.append("the recipe changed the work tree: " + ", ".join(after.changes))
    if hidden:
        reasons.append("the recipe hid files from git status: " + ", ".join(
            f"{path} (marked {flag})" for path, flag in hidden))
    if after.branch != branch:
        where = "detached HEAD" if after.branch is None else f"branch {after.branch!r}"
        reasons.append(f"the recipe left {where} checked out, not {branch!r}")
    elif head_after is not None and head_after != head_before:
        reasons.append(f"the recipe moved {branch!r} from {head_before[:10]} "
                       f"to {head_after[:10]}")
    return "; ".join(reasons) or None


def extra_paths(committed: list[str], expected: list[str]) -> list[str]:
    """Paths a verdict commit holds beyond the task file (and its move): a hook staged them."""
    return sorted(set(committed) - set(expected))


def missing_paths(committed: list[str], expected: list[str]) -> list[str]:
    """Paths of the verdict a commit does not hold: a hook unstaged them (the edit is not in it)."""
    return sorted(set(expected) - set(committed))


def hook_changes(after_commit: WorkTreeState, branch: str) -> str | None:
    """The repository's error when the checkout is not as the verdict left it right after a
    verdict commit: the tree is not clean, or `branch` is no longer checked out.

    The tree was clean before the verdict and the commit took exactly the task file, so a change
    here was made by a commit hook; left alone, the next recipe would start dirty (or on another
    branch) and be blamed.
    """
    reasons = []
    if not after_commit.clean:
        reasons.append("a commit hook changed the work tree: " + ", ".join(after_commit.changes))
    if after_commit.branch != branch:
        where = ("detached HEAD" if after_commit.branch is None
                 else f"branch {after_commit.branch!r}")
        reasons.append(f"a commit hook left {where} checked out, not {branch!r}")
    return "; ".join(reasons) or None
