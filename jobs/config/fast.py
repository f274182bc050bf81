"""The loop-verify configuration file in its common, simple shapes, read without PyYAML.

Most configuration files are a few `key: value` lines and a `repos:` list of paths. Reading them
need not cost the PyYAML import (tens of milliseconds, more than `list` spends on everything
else for a small backlog). `read_simple` takes only a subset whose meaning under PyYAML's
SafeLoader is plain to see and answers None for anything else, so the caller asks PyYAML:

* whole text: printable ASCII and newlines only (no tabs, CR, BOM or other characters);
* lines: blank, `# comment`, `key: value`, `key:` followed by `- value` items (all at one
  indentation), where `key` is one of the keys the file may hold (an unknown key goes to PyYAML,
  which gives it its line) and no key is repeated;
* values: `[]`; a single-quoted scalar; a double-quoted one without backslashes; an integer
  `0` or `[1-9][0-9]*`, a decimal `1.5`; a duration such as `30m` or `1.5h` or a size such as
  `16MiB`; or plain text
  starting with a letter, `/`, `~` or `$` made of letters, digits, ` _./~+@%=${}-` and colons
  followed by one of those (not `yes`, `null` and the like, which SafeLoader reads as booleans
  or null); each optionally followed by spaces and a `# comment`.

Within that subset SafeLoader resolves the plain texts as strings: the implicit resolvers it
has for a first letter are only booleans and null, none for `/` or for `~` followed by more
text, and a value ending in a unit letter matches neither its int, float nor timestamp
pattern. Tests compare `read_simple` with PyYAML on generated text.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection

# YAML 1.1 booleans and nulls as PyYAML's SafeLoader resolves them (its implicit resolvers).
_NOT_TEXT = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL ~".split())

# A colon is text when no space follows it (`sqlite:///x`, `postgresql://h/db`).
_PLAIN_CHARS = r"(?:[A-Za-z0-9_./~+@%=${}-]|:(?=[A-Za-z0-9_./~+@%=${}-]))"
_VALUE = (r"(?P<empty>)"
          r"|(?P<flow>\[\])"
          r"|'(?P<sq>(?:[ -&(-~]|'')*)'"
          r'|"(?P<dq>[ !#-\[\]-~]*)"'
          r"|(?P<int>0|[1-9][0-9]*)"
          r"|(?P<float>[0-9]+\.[0-9]+)"
          r"|(?P<unit>[0-9]+(?:\.[0-9]+)?(?:[smhd]|[KMG]i?B))"
          rf"|(?P<plain>[A-Za-z/~$]{_PLAIN_CHARS}*(?: +{_PLAIN_CHARS}+)*)")
# Every line of the subset, in one pattern (each one compiled costs every start-up): an
# indentation, an item's `- `, a key, a value, a comment (a `#` at the start or after a space).
_LINE = re.compile(rf"(?P<indent> *)(?P<dash>- )?(?:(?P<key>[a-z_]+):(?= |$))? *(?:{_VALUE})"
                   r" *(?:(?<![^ ])#[ -~]*)?")
_PRINTABLE = re.compile(r"[ -~\n]*")


_KINDS = ("empty", "flow", "sq", "dq", "int", "float", "unit", "plain")


def _kind(m: re.Match[str]) -> str | None:
    """Which form of value the line holds (None: a key with nothing after its colon)."""
    for kind in _KINDS:
        if m.group(kind) is not None:
            return kind
    return None


def _value(kind: str | None, text: str) -> object:
    if kind is None or kind == "empty":
        return None
    if kind == "flow":
        return []
    if kind == "sq":
        return text.replace("''", "'")
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "plain" and text in _NOT_TEXT:
        raise ValueError(text)  # a boolean or null: PyYAML reads it
    return text


def read_simple(text: str, keys: Collection[str], item_keys: Collection[str]) -> tuple[
        dict[str, object], dict[str, int], dict[str, str]] | None:
    """(data, key lines, plain texts) as `yaml.safe_load` and the composed node would give them,
    or None when `text` is outside the simple subset.

    The key lines are 1-based: each top-level key, each item of a list (`repos[0]`,
    `notify[1]`) and each key of an item that is a mapping (`repos[0].path`); the plain texts
    are the unquoted top-level scalar values exactly as written.
    """
    if not text.isascii() or _PRINTABLE.fullmatch(text) is None:
        return None
    data: dict[str, object] = {}
    lines: dict[str, int] = {}
    plain: dict[str, str] = {}
    key = ""
    items: list[object] | None = None  # the list the item lines of the current key go to
    indent: str | None = None  # the items' indentation
    mapping: dict[str, object] | None = None  # the item that is a mapping, its keys to come
    for number, line in enumerate(text.split("\n"), start=1):
        m = _LINE.fullmatch(line)
        if m is None:
            return None
        kind = _kind(m)
        try:
            value = _value(kind, m.group(kind) if kind else "")
        except ValueError:
            return None
        dash, name, at = m.group("dash", "key", "indent")
        if name is None and dash is None:
            if kind != "empty":
                return None  # text of its own on a line: a value over several lines
            continue  # a blank or comment line
        if dash is None and not at:  # `key: value` or `key:` (items may follow)
            if name not in keys or name in data:
                return None
            key = name
            data[key] = value
            lines[key] = number
            items, indent, mapping = None, None, None
            if kind == "empty":
                items = []
                plain[key] = ""
            elif kind in ("int", "float", "unit", "plain"):
                plain[key] = m.group(kind)
            continue
        if items is None:
            return None
        if dash is not None:  # `- value` or `- key: value`
            if indent is None:
                indent = at
                data[key] = items
                del plain[key]  # a list, not a scalar
            elif at != indent:
                return None
            mapping = None
            if name is None:
                if kind == "empty":
                    return None
                items.append(value)
            else:
                mapping = {}
                items.append(mapping)
            lines[f"{key}[{len(items) - 1}]"] = number
            if name is None:
                continue
        elif mapping is None or indent is None or at != indent + "  ":
            return None  # not the next key of a mapping item, aligned with its first
        if mapping is None or name not in item_keys or name in mapping or kind == "empty":
            return None
        mapping[name] = value
        lines[f"{key}[{len(items) - 1}].{name}"] = number
    return data, lines, plain
