"""What the configuration's YAML says beyond its data: keys a mapping repeats (PyYAML keeps the
last without a word). Imported only for a file outside `config_fast`'s shapes, like PyYAML."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml


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
