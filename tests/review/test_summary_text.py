"""A failure's summary in the review is the text its task carries, byte for byte: what the verdict
appended to the task's Implementation Notes, read here from the verdict commit itself."""

from __future__ import annotations

from html import escape

import pytest
from review_helpers import ReviewWorld
from verify_helpers import git


def note_in_commit(world: ReviewWorld, attempt: dict[str, object]) -> str:
    """The failure summary the verdict commit appended to the task's notes."""
    root = world.app.root if "/one/" in str(attempt["repo"]) else world.lib.root
    paths = attempt["edit_paths"]
    assert isinstance(paths, list)
    text = git(root, "show", f"{attempt['commit_sha']}:{paths[-1]}")
    notes = text.split("<!-- SECTION:NOTES:BEGIN -->", 1)[1].split("<!-- SECTION:NOTES:END -->")[0]
    return notes[notes.index("verify-failed "):].rstrip("\n")


@pytest.mark.parametrize("recipe", ["verify-slow", "verify-hostile"])
def test_summary_is_the_tasks_own_text(world: ReviewWorld, recipe: str) -> None:
    attempt = next(a for a in world.attempts if a["recipe"] == recipe and a["commit_sha"])
    note = note_in_commit(world, attempt)
    # The timeout is said as the task says it ("after 1s"), not as the ledger's duration.
    assert note.startswith("verify-failed ")
    page = world.review("--format", "html").stdout
    assert escape(note, quote=True) in page
    markdown = world.review("--format", "markdown").stdout
    # In Markdown it stands in a fenced block, where every character is text.
    assert f"\n{note}\n" in markdown
