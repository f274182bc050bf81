"""Frontmatter text drawn for property tests of the fast readers, and what PyYAML makes of it."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from jobs.backlog.scan import FrontmatterYAMLError, load_yaml, prequote_at_values


def yaml_view(fm: str) -> dict[str, Any] | None:
    """What the YAML path reads (None: an error or not a mapping)."""
    try:
        data = load_yaml(prequote_at_values(fm), 2)
    except FrontmatterYAMLError:
        return None
    if data is None:
        return {}
    return data if isinstance(data, dict) else None


SCALARS = st.text(alphabet=" abZ09-_:#'\"@&*!|>%`?,[]{}.\\\tü\u00a0\u2028\x85~", max_size=8)


@st.composite
def frontmatter_lines(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["key", "key", "empty", "item", "blank", "flow", "raw",
                                     "folded", "fold_line"]))
        key = draw(st.sampled_from(["id", "title", "status", "labels", "x", "on", "a-b", "id"]))
        value = draw(SCALARS)
        quote = draw(st.sampled_from(["", "'", '"']))
        if quote == "'":
            value = "'" + value.replace("'", "''") + "'"
        elif quote == '"':
            value = '"' + value + '"'
        if kind == "key":
            lines.append(f"{key}:{draw(st.sampled_from([' ', '  ', '']))}{value}")
        elif kind == "empty":
            lines.append(f"{key}:{draw(st.sampled_from(['', ' ']))}")
        elif kind == "item":
            lines.append(f"{draw(st.sampled_from(['', '  ', '    ']))}-"
                         f"{draw(st.sampled_from([' ', '  ', '']))}{value}")
        elif kind == "flow":
            items = draw(st.lists(SCALARS, max_size=3))
            sep = draw(st.sampled_from([", ", ",", " , "]))
            lines.append(f"{key}: [{sep.join(items)}]")
        elif kind == "folded":
            lines.append(f"{key}: >-" if draw(st.booleans()) else "  - >-")
        elif kind == "fold_line":
            lines.append(draw(st.sampled_from(["  ", " ", "    ", "      "])) + value)
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "  "])))
        else:
            lines.append(draw(SCALARS))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines)


TEXT = st.text(alphabet="abZ09 -_:#'@&*!?,.[]{}%`|>~üé/", min_size=1, max_size=10)


KEYS = ["id", "title", "status", "labels", "assignee", "references", "on", "x_y", "a-b"]


@st.composite
def cli_like_frontmatter(draw: st.DrawFn, keys_from: tuple[str, ...] = tuple(KEYS)) -> str:
    """Mostly what the CLI and people write: unique keys, quoted/plain/flow/block/folded values."""
    keys = draw(st.lists(st.sampled_from(keys_from), min_size=1, max_size=6, unique=True))
    lines = []
    for key in keys:
        kind = draw(st.sampled_from(["plain", "single", "double", "flow", "block", "folded",
                                     "empty", "at"]))
        text = draw(TEXT)
        if kind == "plain":
            lines.append(f"{key}: {text}")
        elif kind == "single":
            lines.append(f"{key}: '" + text.replace("'", "''") + "'")
        elif kind == "double":
            lines.append(f'{key}: "' + text.replace('"', "") + '"')
        elif kind == "flow":
            items = draw(st.lists(TEXT, max_size=3))
            lines.append(f"{key}: [" + ", ".join(items) + "]")
        elif kind == "block":
            indent = draw(st.sampled_from(["", "  ", "    "]))
            lines.append(f"{key}:")
            for item in draw(st.lists(TEXT, min_size=1, max_size=3)):
                if draw(st.integers(0, 5)) == 0:
                    lines.append(f"{indent}- >-")
                    lines += [f"{indent}    {w.strip() or 'w'}" for w in item.split(",")]
                else:
                    lines.append(f"{indent}- {item}")
                if draw(st.integers(0, 8)) == 0:
                    lines.append("")
        elif kind == "folded":
            lines.append(f"{key}: >-")
            indent = draw(st.sampled_from([" ", "  ", "   "]))
            lines += [indent + (w.strip() or "w") for w in draw(
                st.lists(TEXT, min_size=1, max_size=3))]
        elif kind == "empty":
            lines.append(f"{key}:")
        else:
            lines.append(f"{key}: @{text}")
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines)
