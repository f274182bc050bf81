"""What to do with a pending edit a killed run left between writing a task file and its commit."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from jobs.ledger.model import Attempt
from jobs.verify.rules.readiness import some_paths


class Action(enum.Enum):
    ALREADY_COMMITTED = "already committed"   # the commit landed before the run died
    COMMIT = "commit"                          # the edit is on disk, only its commit is missing
    ABANDON = "abandon"                        # the edit never reached the file
    SKIP_REPO = "skip"                         # something else changed too: hands off


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str | None = None


def written(pending: Attempt, current_sha256: str | None) -> bool:
    """Whether the edit's new bytes are what the target file holds now."""
    return current_sha256 is not None and current_sha256 == pending.after_sha256


def decide(pending: Attempt, current_sha256: str | None,
           changes: tuple[str, ...], *, in_git: bool = False,
           wrong_checkout: str | None = None, source_sha256: str | None = None) -> Decision:
    """The pending edit's fate from the target file's hash and the work tree's changed paths.

    `changes` only matters once the edit is known to be written. `in_git` says the verdict's
    own commit was found in the history (asked only when the file no longer holds the edit): a
    verdict that reached git was committed, whatever the task file holds now (its owner may
    have edited it since), and is never called abandoned. `wrong_checkout` says why no commit
    may be made in the checkout as it is (another branch, a detached HEAD, a merge in progress):
    the verdict belongs on the configured branch, so the edit then waits. `source_sha256` is
    the hash of a moved task's old file when it is there: committing the move deletes it, which
    only the bytes the verdict came from may be.
    """
    if not written(pending, current_sha256):
        if in_git:
            return Decision(Action.ALREADY_COMMITTED)
        # The crash came before the file was replaced: the verdict never reached the task,
        # which stays eligible and is verified again.
        return Decision(Action.ABANDON)
    if not changes:
        return Decision(Action.ALREADY_COMMITTED)
    if not set(changes) <= set(pending.edit_paths):
        return Decision(Action.SKIP_REPO, "work tree changed beyond the pending edit of "
                        f"{pending.task_id}: {some_paths(changes)}")
    if wrong_checkout is not None:
        return Decision(Action.SKIP_REPO, f"the pending edit of {pending.task_id} is not "
                        f"committed here: {wrong_checkout}")
    if source_sha256 is not None and source_sha256 != pending.before_sha256:
        return Decision(Action.SKIP_REPO, f"the pending edit of {pending.task_id} is not "
                        f"committed: {pending.edit_paths[0]} changed since it was written")
    return Decision(Action.COMMIT)


def decide_kept(kept: Attempt, current_sha256: str | None, target_exists: bool,
                stored: bool) -> Decision:
    """Whether a verdict whose commit was refused can still be committed as it was written.

    Only onto the very bytes it was computed from: any change to the task since means the owner
    acted, and the task is judged afresh.
    """
    if current_sha256 != kept.before_sha256:
        return Decision(Action.ABANDON, "the task file changed since the verdict was given")
    if len(kept.edit_paths) > 1 and target_exists:
        return Decision(Action.ABANDON, f"{kept.edit_paths[-1]} exists now")
    if not stored:
        return Decision(Action.ABANDON, "the kept copy of the edited task file is gone")
    return Decision(Action.COMMIT)
