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
  `0` or `[1-9][0-9]*`, a decimal `1.5`; a duration such as `30m` or `1.5h`; or plain text
  starting with a letter, `/` or `~` made of letters, digits, ` _./~+@%=-` and colons followed
  by one of those (not `yes`, `null` and the like, which SafeLoader reads as booleans or null);
  each optionally followed by spaces and a `# comment`.

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

_COMMENT = r"(?: +#[ -~]*)?"
# A colon is text when no space follows it (`sqlite:///x`, `postgresql://h/db`).
_PLAIN_CHARS = r"(?:[A-Za-z0-9_./~+@%=-]|:(?=[A-Za-z0-9_./~+@%=-]))"
_VALUE = (r"(?P<empty>)"
          r"|(?P<flow>\[\])"
          r"|'(?P<sq>(?:[ -&(-~]|'')*)'"
          r'|"(?P<dq>[ !#-\[\]-~]*)"'
          r"|(?P<int>0|[1-9][0-9]*)"
          r"|(?P<float>[0-9]+\.[0-9]+)"
          r"|(?P<unit>[0-9]+(?:\.[0-9]+)?[smhd])"
          rf"|(?P<plain>[A-Za-z/~]{_PLAIN_CHARS}*(?: +{_PLAIN_CHARS}+)*)")
_KEY_LINE = re.compile(rf"(?P<key>[a-z_]+):(?: +(?:{_VALUE}))? *{_COMMENT}")
_ITEM_LINE = re.compile(
    rf"(?P<indent> *)- (?:(?P<ikey>[a-z_]+):(?: +|$))?(?:{_VALUE}) *{_COMMENT}")
_ITEM_KEY_LINE = re.compile(rf"(?P<indent> *)(?P<ikey>[a-z_]+):(?: +(?:{_VALUE}))? *{_COMMENT}")
_SKIP_LINE = re.compile(r" *(?:#[ -~]*)?")
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

    The key lines are 1-based: each top-level key, each `repos` item (`repos[0]`) and each key
    of an item that is a mapping (`repos[0].path`); the plain texts are the unquoted top-level
    scalar values exactly as written.
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
        m = _KEY_LINE.fullmatch(line)
        if m is not None:
            key = m.group("key")
            if key not in keys or key in data:
                return None
            kind = _kind(m)
            try:
                data[key] = _value(kind, m.group(kind) if kind else "")
            except ValueError:
                return None
            lines[key] = number
            items, indent, mapping = None, None, None
            if kind in (None, "empty"):
                items = []  # item lines may follow
                plain[key] = ""
            elif kind in ("int", "float", "unit", "plain"):
                plain[key] = m.group(kind)
            continue
        if _SKIP_LINE.fullmatch(line) is not None:
            continue
        if items is None:
            return None
        m = _ITEM_LINE.fullmatch(line)
        if m is not None:  # `- value` or `- key: value`
            if indent is None:
                indent = m.group("indent")
                data[key] = items
                del plain[key]  # a list, not a scalar
            elif m.group("indent") != indent:
                return None
            mapping = None
            if m.group("ikey") is not None:
                mapping = {}
                items.append(mapping)
            else:
                kind = _kind(m)
                if kind in (None, "empty"):
                    return None
                try:
                    items.append(_value(kind, m.group(kind)))
                except ValueError:
                    return None
            if key == "repos":
                lines[f"repos[{len(items) - 1}]"] = number
            if mapping is None:
                continue
        else:  # the next key of a mapping item, aligned with its first
            m = _ITEM_KEY_LINE.fullmatch(line)
            if m is None or mapping is None or indent is None or (
                    m.group("indent") != indent + "  "):
                return None
        ikey = m.group("ikey")
        kind = _kind(m)
        if ikey not in item_keys or ikey in mapping or kind in (None, "empty"):
            return None
        try:
            mapping[ikey] = _value(kind, m.group(kind))
        except ValueError:
            return None
        if key == "repos":
            lines[f"repos[{len(items) - 1}].{ikey}"] = number
    return data, lines, plain
