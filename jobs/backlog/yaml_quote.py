"""Scalars written the way the Backlog.md CLI's YAML writer (js-yaml 3) writes them."""

from __future__ import annotations

import re

# js-yaml 3's indicators that may not start a plain scalar (`=` among them, which YAML 1.1
# reserved), and the characters that may not appear in one: `#` only after a space.
_PLAIN_UNSAFE_FIRST = set("-?:,[]{}#&*!|=>'\"%@`")
_PLAIN_UNSAFE = set(",[]{}:")
_DEPRECATED_BOOLEANS = frozenset(
    "y Y yes Yes YES on On ON n N no No NO off Off OFF".split())
_IMPLICIT = [
    re.compile(r"^(?:~|null|Null|NULL)$"),
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    re.compile(r"^[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|[0-9][0-9_]*"
               r"|[1-9][0-9_]*(?::[0-5]?[0-9])+)$"),
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
               r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
    re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
               r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?$"),
    re.compile(r"^<<$"),
]


def _printable(ch: str) -> bool:
    o = ord(ch)
    return (0x20 <= o <= 0x7E or o in (0x09, 0x0A, 0x0D, 0x85) or 0xA0 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD and o != 0xFEFF or 0x10000 <= o <= 0x10FFFF)


def yaml_scalar(value: str, *, flow: bool = False) -> str:
    """Render a string the way the CLI's js-yaml 3 dumper renders a short one-line scalar."""
    if value == "":
        return "''"
    if any(not _printable(c) or c in "\r\n" for c in value):
        return _double_quoted(value)
    if value in _DEPRECATED_BOOLEANS:
        return f"'{value}'"
    plain = (value[0] not in _PLAIN_UNSAFE_FIRST and not value[0].isspace()
             and not value[-1].isspace() and not any(c in _PLAIN_UNSAFE for c in value)
             and " #" not in value and "\t#" not in value)
    if flow and any(c in ",[]{}" for c in value):
        plain = False
    if plain and not any(p.match(value) for p in _IMPLICIT):
        return value
    return "'" + value.replace("'", "''") + "'"


def _double_quoted(value: str) -> str:
    out = []
    for c in value:
        o = ord(c)
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif not _printable(c) or o < 0x20:
            out.append(f"\\x{o:02X}" if o <= 0xFF else f"\\u{o:04X}" if o <= 0xFFFF
                       else f"\\U{o:08X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'

