"""The configuration file read by PyYAML: its data, and what the YAML says beyond it (each key's
line, a key a mapping repeats, which PyYAML keeps the last of without a word, a scalar's text as
written). Imported only for a file outside `config.fast`'s shapes, with PyYAML."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from jobs.core.errors import ConfigError


def read_yaml(path: Path, text: str) -> tuple[Any, dict[str, int], str | None]:
    """(data, key lines, the schedule's plain text) read by PyYAML's SafeLoader."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None:
            raise ConfigError(path, "config", str(path), f"not valid YAML: {problem}") from None
        lines = text.splitlines()
        shown = lines[mark.line] if mark.line < len(lines) else ""
        raise ConfigError(f"{path}:{mark.line + 1}", "", shown,
                          f"not valid YAML: {problem}") from None
    repeated = repeated_key(node)
    if repeated is not None:
        # SafeLoader keeps the last of two equal keys without a word: a setting written twice
        # (one forgotten further down) would silently override the one the owner reads.
        key, at, first = repeated
        raise ConfigError(f"{path}:{at}", key, value_at(data, key),
                          f"repeated key (first on line {first})")
    return data, key_lines(node), plain_text(node, "schedule")


def plain_text(node: yaml.Node | None, key: str) -> str | None:
    """The text of a top-level unquoted scalar, exactly as written in the file."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if (key_node.value == key and isinstance(value_node, yaml.ScalarNode)
                    and value_node.style is None):
                return str(value_node.value)
    return None


def key_lines(node: yaml.Node | None) -> dict[str, int]:
    """1-based line of every top-level key, of each item of a list (`notify[0]`) and of the
    keys of an item that is a mapping (`repos[0].path`)."""
    lines: dict[str, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for key_node, value_node in node.value:
        key = str(key_node.value)
        lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.SequenceNode):
            for i, item in enumerate(value_node.value):
                lines[f"{key}[{i}]"] = item.start_mark.line + 1
                if isinstance(item, yaml.MappingNode):
                    for k, _ in item.value:
                        lines[f"{key}[{i}].{k.value}"] = k.start_mark.line + 1
    return lines


def repeated_key(node: yaml.Node | None) -> tuple[str, int, int] | None:
    """(key, its line, the first one's line) of the first key a mapping repeats, at the top level
    or in a `repos` item; None when there is none."""

    def mappings() -> Iterable[tuple[str, yaml.MappingNode]]:
        if not isinstance(node, yaml.MappingNode):
            return
        yield "", node
        for key_node, value_node in node.value:
            if key_node.value == "repos" and isinstance(value_node, yaml.SequenceNode):
                for i, item in enumerate(value_node.value):
                    if isinstance(item, yaml.MappingNode):
                        yield f"repos[{i}].", item

    for prefix, mapping in mappings():
        seen: dict[object, int] = {}
        for key_node, _ in mapping.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            line = key_node.start_mark.line + 1
            if key_node.value in seen:
                return f"{prefix}{key_node.value}", line, seen[key_node.value]
            seen[key_node.value] = line
    return None


def value_at(data: Any, key: str) -> object:
    """The value `data` holds for a key named as `repeated_key` names it (`repos[0].path`)."""
    head, _, rest = key.partition("].")
    try:
        if rest:
            return data["repos"][int(head.removeprefix("repos["))][rest]
        return data[key]
    except (LookupError, TypeError, ValueError):
        return None
