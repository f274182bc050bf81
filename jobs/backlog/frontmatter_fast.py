"""The frontmatter the Backlog.md CLI writes, read with regular expressions instead of PyYAML.

The CLI writes a small subset of YAML (one `key: value` per line, plain or quoted scalars,
`[]`/one-line flow lists, `- item` block lists, `>-` folded long values). The patterns here
recognise exactly that subset and give the values the YAML loader would give; anything else
(comments, nested maps, tabs, a `: ` inside a plain value, quoted keys, odd characters...) makes
them answer None and the caller asks PyYAML (`jobs.backlog.frontmatter`). Tests check these readers
against PyYAML (corpora, fixtures, generated text).
"""

from __future__ import annotations

import re
from typing import Any

# --------------------------------------------------------------------------- the fast readers
# The simple YAML subset the CLI writes (see the module docstring), as regular expressions.
# Characters that are not plain printable text for YAML: controls and NEL, which YAML 1.1 reads
# as a line break. The non-Latin-1 ones (the Unicode line separators, the BOM, U+FFFE/U+FFFF) are
# refused by a separate check (`has_odd`) so the big patterns keep Latin-1 classes: a class with
# characters beyond U+00FF costs milliseconds to compile, at every start-up. (Strict UTF-8
# decoding never yields surrogates.)
_BAD = "\\x00-\\x1f\\x7f-\\x9f"
_ODD_CHARS = "\u2028\u2029\ufeff\ufffe\uffff"


def has_odd(text: str) -> bool:
    return not text.isascii() and any(c in text for c in _ODD_CHARS)


_FIRST = rf"[^{_BAD} \-?:,\[\]{{}}#&*!|>'\"%@`]"
# Possessive repeats (*+): a run of text is never split again on a failed match, so a line
# outside the subset fails in linear time instead of backtracking exponentially.
_PLAIN = rf"{_FIRST}(?:[^{_BAD}:#]++|:(?=[^ \r\n])|(?<! )#)*+"
_FLOW_PLAIN = rf"{_FIRST}(?:[^{_BAD}:#,\[\]{{}}?]++|:(?=[^ \r\n,\[\]{{}}])|(?<! )#)*+"
_SQ = rf"'(?:[^{_BAD}']++|'')*+'"
_DQ = rf'"[^{_BAD}"\\\\]*"'
_FLOW_ITEM = rf"(?:{_SQ}|{_DQ}|{_FLOW_PLAIN})"
_FLOW = rf"\[ *(?:{_FLOW_ITEM}(?: *, *{_FLOW_ITEM})* *)?\]"
_FLOW_ITEMS = re.compile(_FLOW_ITEM)

# The same subset as whole-frontmatter patterns, for the scan's four fields (no Python per line).
_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"
_VALUE = rf"(?:{_SQ}|{_DQ}|{_FLOW}|{_PLAIN})"
_ITEM = rf"(?:{_SQ}|{_DQ}|{_PLAIN})"
_BLANK = r" *\r?\n"
# A folded block (`>-`) as js-yaml writes a long value: lines at one indentation, none blank,
# none starting or ending with a space; YAML joins them with single spaces.
_FOLD_LINE = rf"[^{_BAD} ][^{_BAD}]*+(?<! )\r?\n"
# Blank lines after a fold that hold spaces may belong to the folded value (a line of spaces
# deeper than the fold's indentation is content to YAML): such a file goes to YAML.
_AFTER_FOLD = r"(?!(?:\r?\n)*+ +\r?\n)"
_LINES = (
    rf"{_BLANK}"
    rf"|{_KEY}: +{_VALUE} *\r?\n"
    rf"|(?:assignee|reporter): +@[^{_BAD}]*+\r?\n"  # the CLI quotes these before parsing
    rf"|{_KEY}: +>-\r?\n(?P<fi> +){_FOLD_LINE}(?:(?P=fi){_FOLD_LINE})*+{_AFTER_FOLD}"
    rf"|{_KEY}: *\r?\n(?:(?:{_BLANK})*+(?P<li> *)- "
    rf"(?:{_ITEM} *\r?\n|>-\r?\n(?P<ci>(?P=li) +){_FOLD_LINE}(?:(?P=ci){_FOLD_LINE})*+"
    rf"{_AFTER_FOLD})"
    rf"(?:(?:{_BLANK})*+(?P=li)- "
    rf"(?:{_ITEM} *\r?\n|>-\r?\n(?P<ci2>(?P=li) +){_FOLD_LINE}(?:(?P=ci2){_FOLD_LINE})*+"
    rf"{_AFTER_FOLD})"
    rf")*+)?+")
_VALID_PATTERN = rf"(?:{_LINES})*+"
# Many files at once (`_parse_many`): each file's text follows a NUL. Only what the CLI itself
# writes is taken here (LF, no BOM, id/title/status first, plain or single-quoted values, `[]`,
# two-space `- ` lists, `>-` folds); every other file goes through `parse_task`. Keeping this
# grammar small keeps it cheap to compile at start-up and quick to match.
_CLI_SCALAR = rf"(?:{_SQ}|{_PLAIN})"
_CLI_FOLD = rf"(?:  [^{_BAD} ][^{_BAD}]*+(?<! )\n)++"
_CLI_LINE = (rf"{_KEY}: (?:{_CLI_SCALAR}|\[\])\n"
             rf"|{_KEY}:\n(?:  - {_CLI_SCALAR}\n)++"
             rf"|{_KEY}: >-\n{_CLI_FOLD}")
# One match per file (each follows a NUL), in order, so `findall` answers for all of them: the
# groups are empty when the frontmatter is not in this subset (`fm` then is ""), and `body` is the
# rest of the file (all of it, then).
BULK_PATTERN = (
    "\\x00(?:---"
    rf"(?P<fm>\nid: (?P<id>{_CLI_SCALAR})\n"
    rf"title: (?:(?P<title>{_CLI_SCALAR})\n|>-\n(?P<tfold>{_CLI_FOLD}))"
    rf"status: (?P<status>{_CLI_SCALAR})\n"
    rf"(?:labels: \[\]\n|labels:\n(?P<lblock>(?:  - {_CLI_SCALAR}\n)++)"
    rf"|(?!labels:)(?:{_CLI_LINE}))*+)"
    "---(?:\\n|(?=\\x00)|\\Z))?+"
    "(?P<body>[^\\x00]*+)")
# The same, for a frontmatter in the CLI's own key order (its serializer writes every file so):
# each key at most once, so no key is repeated and the reader need not look for repeats.
_CLI_LIST_KEYS = ("assignee", "dependencies", "references", "documentation", "modified_files",
                  "subtasks")
_CLI_KEY_ORDER = ("assignee", "reporter", "created_date", "updated_date", "due_date", "labels",
                  "milestone", "dependencies", "references", "documentation", "modified_files",
                  "parent_task_id", "subtasks", "priority", "type", "ordinal", "onStatusChange")


# The values of keys other than labels are only checked, never read: a narrower scalar (printable
# ASCII quoted, or a word of letters, digits and `_./-`: text every YAML reader agrees on) keeps
# seventeen copies cheap to compile; a file with another value goes to the general pattern.
_CLI_WORD = r"(?:'(?:[ -&(-~]++|'')*+'|[A-Za-z0-9][A-Za-z0-9_./-]*+)"


def _cli_key(key: str) -> str:
    if key == "labels":
        return rf"(?:labels: \[\]\n|labels:\n(?P<lblock>(?:  - {_CLI_SCALAR}\n)++))?+"
    if key in _CLI_LIST_KEYS:
        return rf"(?:{key}(?:: \[\]\n|:\n(?:  - {_CLI_WORD}\n)++))?+"
    return rf"(?:{key}: {_CLI_WORD}\n)?+"


CANONICAL_PATTERN = (
    "\\x00(?:---"
    rf"(?P<fm>\nid: (?P<id>{_CLI_SCALAR})\n"
    rf"title: (?:(?P<title>{_CLI_SCALAR})\n|>-\n(?P<tfold>{_CLI_FOLD}))"
    rf"status: (?P<status>{_CLI_SCALAR})\n"
    + "".join(_cli_key(key) for key in _CLI_KEY_ORDER) + ")"
    "---(?:\\n|(?=\\x00)|\\Z))?+"
    "(?P<body>[^\\x00]*+)")
_bulk: re.Pattern[str] | None = None
_canonical: re.Pattern[str] | None = None


def canonical() -> re.Pattern[str]:
    """CANONICAL_PATTERN, compiled on first use (as `bulk`)."""
    global _canonical
    if _canonical is None:
        _canonical = re.compile(CANONICAL_PATTERN)
    return _canonical


def bulk() -> re.Pattern[str]:
    """The many-files pattern, compiled on first use: it costs milliseconds to compile, and
    `list` on an empty backlog, `--help` or `history` never need it."""
    global _bulk
    if _bulk is None:
        _bulk = re.compile(BULK_PATTERN)
    return _bulk


FM_NAMES = re.compile(rf"\n({_KEY}):")  # after validation: every key, for repeats


# The value after `key:` (validated already): one line, a folded block, or nothing (a list).
_VALUE_AT_PATTERN = (
    rf"(?: +({_VALUE}) *\r?\n| +>-\r?\n((?: +{_FOLD_LINE})++)| *\r?\n)")
_BLOCK_AT_PATTERN = rf" *\r?\n((?:(?: *| *- {_ITEM} *)\r?\n)*+)"
_per_file_patterns: tuple[re.Pattern[str], ...] = ()


def _per_file() -> tuple[re.Pattern[str], ...]:
    """(valid, value-at, block-at), compiled on first use: a scan of CLI-written files never
    needs them, and every pattern compiled costs start-up time."""
    global _per_file_patterns
    if not _per_file_patterns:
        _per_file_patterns = tuple(re.compile(p) for p in (
            _VALID_PATTERN, _VALUE_AT_PATTERN, _BLOCK_AT_PATTERN))
    return _per_file_patterns


_FM_ITEM = rf"(?m)^ *- ({_ITEM}) *\r?$"  # compiled on first use (re's own cache)


def _value(raw: str) -> str | list[str]:
    first = raw[0]
    if first != "[" and first != "'" and first != '"':
        return raw.rstrip(" ")
    if first == "[":
        inner = raw[1:-1]
        return [scalar(x) for x in _FLOW_ITEMS.findall(inner)] if inner.strip(" ") else []
    return scalar(raw)


def fast_frontmatter(fm: str, only: frozenset[str] | None = None) -> dict[str, Any] | None:
    """The mapping the YAML loader would build, when `fm` is in the simple subset the CLI writes
    (see the module docstring); else None, and the caller asks PyYAML. With `only`, just those
    keys (a value outside the subset under another key does not matter then). This is the one
    per-file fast reader: `fast_fields` and the editor both use it."""
    if has_odd(fm):
        return None
    valid, value_at, block_at = _per_file()
    text = "\n" + fm + "\n"
    if valid.fullmatch(text, 1) is None:
        return None
    names = FM_NAMES.findall(text)  # validated: exactly the top-level keys, in order
    if len(set(names)) != len(names):
        return None  # a repeated key: YAML reports it
    out: dict[str, Any] = {}
    at = 1
    for key in names:
        if only is not None and key not in only:
            continue
        at = text.find(f"\n{key}:", at - 1) + len(key) + 2
        m = value_at.match(text, at)
        if m is None:  # pragma: no cover - the text was validated above
            return None
        raw, folded = m.group(1, 2)
        if raw:
            out[key] = _value(raw)
        elif folded:
            out[key] = " ".join([line.strip(" \r") for line in folded.split("\n")[:-1]])
        else:
            block = block_at.match(text, at)
            if block is None or text[block.end():block.end() + 1] in (" ", "-"):
                return None  # an item this reader does not take apart (a folded one, say)
            out[key] = [scalar(x) for x in re.findall(_FM_ITEM, block.group(1))] or ""
    return out


_FIELDS = frozenset(("id", "title", "status", "labels"))


def fast_fields(fm: str) -> tuple[Any, Any, Any, Any] | None:
    """(id, title, status, labels) as the YAML loader would read them, or None when `fm` is
    outside the simple subset (then the caller asks `load_frontmatter`). Missing keys read as ""."""
    found = fast_frontmatter(fm, _FIELDS)
    if found is None:
        return None
    get = found.get
    return get("id", ""), get("title", ""), get("status", ""), get("labels", "")


# backlog/config.yml as the CLI writes it: `key: value` lines and `key:` with `- item` lines.
_CONFIG_LINE_PATTERN = rf"({_KEY}):(?: +({_VALUE}))? *|( *)- ({_ITEM}) *| *"
_config_line: re.Pattern[str] | None = None


def fast_config(text: str) -> dict[str, Any] | None:
    """The mapping the YAML loader would build from a whole `backlog/config.yml` (every value
    text, as in frontmatter), when each line is `key: value` (plain, quoted or a one-line flow
    list), `key:` followed by `- item` lines at one indentation, or blank; else None, and the
    caller asks `load_frontmatter`. One small pattern: the frontmatter readers' patterns cost
    more to compile than an empty `list` spends on everything else."""
    global _config_line
    if has_odd(text):
        return None
    if _config_line is None:
        _config_line = re.compile(_CONFIG_LINE_PATTERN)
    line_of = _config_line.fullmatch
    out: dict[str, Any] = {}
    key = ""
    items: list[str] | None = None  # the list the item lines of `key` go to
    indent: str | None = None
    for line in text.split("\n"):
        m = line_of(line)
        if m is None:
            return None
        name, raw, at, item = m.groups()
        if name is not None:
            if name in out:
                return None  # a repeated key: YAML reports it
            key, items, indent = name, None, None
            if raw is None:
                out[key] = ""
                items = []
            else:
                out[key] = _value(raw)
        elif item is not None:
            if items is None:
                return None
            if indent is None:
                indent = at
                out[key] = items
            elif at != indent:
                return None
            items.append(scalar(item))
    return out


def scalar(raw: str) -> str:
    first = raw[0]
    if first == "'":
        return raw[1:-1].replace("''", "'")
    if first == '"':
        return raw[1:-1]
    return raw.rstrip(" ")


