"""`backlog/config.yml` read without the frontmatter readers' big patterns must read exactly as
the YAML loader reads it, or step aside (issue 13 item 3: an empty `list` spent more compiling
those patterns than on everything else)."""

from __future__ import annotations

from pathlib import Path

import pytest
from budget import examples
from frontmatter_strategies import cli_like_frontmatter, frontmatter_lines, yaml_view
from hypothesis import given, settings
from hypothesis import strategies as st
from project import CORPORA, FIXTURES

from jobs.backlog.frontmatter_fast import fast_config
from jobs.backlog.scan import read_config

GOOD = st.sampled_from([
    'project_name: "Loop Verify Fixture"', 'default_status: "To Do"',
    'statuses: ["To Do", "In Progress", "Done"]', "statuses: ['A', \"B\", c d]", "labels: []",
    "date_format: yyyy-mm-dd", "auto_commit: false", "default_port: 6420", 'task_prefix: "gci"',
    "definition_of_done:", '  - "python3 -m pytest tests -q"', "  - 'it''s done'", "- x", "",
    "statuses:", "x: [a, 'b''c', \"d\"]", "x: [ ]", "x: ~", "x: null", "on: yes", "x:"])
ODD = st.sampled_from([
    "    - y", "  ", "statuses: [a, [b]]", "statuses: [a,b ,c]", "x: a: b", "x: a #b",
    "x: 'a' # c", "# comment", "x: @me", "x: 'a", "  x: 1", "x:y", "x: >-", "  folded", "x: |",
    "x: a\tb", "x: \u2028", "x: 'a\\b'", 'x: "a\\nb"', "- - a", "x: [a, b", "? x"])


@st.composite
def config_text(draw: st.DrawFn) -> str:
    lines = [draw(ODD if draw(st.integers(0, 9)) == 0 else GOOD)
             for _ in range(draw(st.integers(0, 8)))]
    if draw(st.integers(0, 4)):  # mostly each key once, as the CLI writes them
        lines = [f"k{n}{line}" if line[:1].isalpha() else line for n, line in enumerate(lines)]
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n", "\r\n"]))


def check(text: str) -> bool:
    """Assert `fast_config` agrees with the YAML path whenever it answers; say whether it did."""
    fast = fast_config(text)
    if fast is not None:
        assert fast == yaml_view(text), text
    return fast is not None


@settings(max_examples=examples(1500), deadline=None)
@given(text=st.one_of(config_text(), frontmatter_lines(), cli_like_frontmatter()))
def test_fast_config_agrees_with_yaml(text: str) -> None:
    check(text)


def test_fast_config_reads_what_the_cli_writes() -> None:
    texts = [p.read_text() for p in FIXTURES.rglob("backlog/config.yml")]
    if CORPORA.is_dir():
        texts += [p.read_text() for p in CORPORA.glob("*/backlog/config.yml")]
    assert len(texts) >= 5
    for text in texts:
        assert check(text), text


@pytest.mark.parametrize("text", ["x: 1\nx: 2\n", "x: [a\n", "statuses:\n  - a\n - b\n"])
def test_read_config_still_reports_what_yaml_refuses(text: str, tmp_path: Path) -> None:
    (tmp_path / "backlog").mkdir()
    (tmp_path / "backlog" / "config.yml").write_text(text)
    assert fast_config(text) is None
    try:
        read_config(tmp_path)
    except Exception as exc:
        assert type(exc).__name__ == "BacklogError", exc
    else:
        raise AssertionError(f"read_config took {text!r}")
