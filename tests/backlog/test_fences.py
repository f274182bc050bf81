"""A fenced code block is text: its `verify-cmd:` lines do not count and a `<!--` in it opens no
comment (SPEC, "What a task is")."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.backlog.fences import FILLER, mask_fences
from jobs.backlog.scan import parse_task

HEAD = "---\nid: TASK-1\ntitle: T\nstatus: Done\nlabels: ['verify:2026-11-01']\n---\n\n"


def _cmds(body: str) -> tuple[str, ...]:
    return parse_task(Path("task-1 - T.md"), (HEAD + body).encode(), "tasks").verify_cmd_lines


def test_a_real_verify_cmd_after_a_fenced_comment_opener_is_found() -> None:
    body = ("## Description\n\nThe notes markers look like:\n\n```html\n<!-- SECTION:NOTES:BEGIN\n"
            "```\n\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
            "verify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->\n")
    assert _cmds(body) == ("verify-cmd: just verify-disk",)
    # The comment the fenced `<!--` would open would run to the END marker's `-->`.
    body = ("## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\nAn HTML comment opens so:"
            "\n\n```\n<!--\n```\n\nverify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->\n")
    assert _cmds(body) == ("verify-cmd: just verify-disk",)
    assert _cmds(body.replace("```", "~~~~")) == ("verify-cmd: just verify-disk",)


def test_a_fenced_verify_cmd_line_is_an_example_not_a_command() -> None:
    body = ("## Description\n\nWrite it so:\n\n~~~\nverify-cmd: just verify-example\n~~~\n\n"
            "## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
            "verify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->\n")
    assert _cmds(body) == ("verify-cmd: just verify-disk",)
    # ... in a list item's indented fence too, and in one never closed.
    assert _cmds("- step\n\n  ```\n  verify-cmd: just verify-a\n  ```\n") == ()
    assert _cmds("```\nverify-cmd: just verify-a\n") == ()


def test_a_comment_still_hides_what_it_holds() -> None:
    body = "<!--\n```\n-->\nverify-cmd: just verify-disk\n<!--\nverify-cmd: just verify-old\n-->\n"
    assert _cmds(body) == ("verify-cmd: just verify-disk",)


@pytest.mark.parametrize(("text", "masked_lines"), [
    ("a\n```\nb\n```\nc", [1, 2, 3]),
    ("````\n```\nb\n````\nc", [0, 1, 2, 3]),       # a shorter run closes nothing
    ("~~~ python\nb\n~~~\n```\nc", [0, 1, 2, 3, 4]),  # unclosed: runs to the end
    ("``` x `y`\nb", []),                           # a backtick in the info string: no fence
    ("<!--\n```\n-->\nc", []),                      # a fence line inside a comment
    ("x <!-- a --> y\n```\nb\n```", [1, 2, 3]),
])
def test_mask_fences_keeps_offsets(text: str, masked_lines: list[int]) -> None:
    masked = mask_fences(text)
    assert len(masked) == len(text)
    for n, (old, new) in enumerate(zip(text.split("\n"), masked.split("\n"), strict=True)):
        assert new == (FILLER * len(old) if n in masked_lines else old), n
