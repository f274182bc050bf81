"""YAML frontmatter of Backlog.md task files, read as the CLI reads it.

Values are read as text (PyYAML's base loader, libyaml when available), which is how js-yaml reads
the labels the CLI writes (`yes`, `123` and a bare date stay text) and avoids YAML 1.1 type
guessing. A repeated key is an error, as in js-yaml. Bare `@name` assignee/reporter values are
pre-quoted as the CLI does. Any valid YAML mapping is read: quoted and complex keys, flow
mappings, anchors and aliases, tags. Frontmatter in the small subset the CLI writes is read by
`jobs.backlog.frontmatter_fast` without PyYAML (it gives the values the loader would give);
everything else falls back to PyYAML, which also words the errors. PyYAML is imported on first use.
"""

from __future__ import annotations

import re
from typing import Any

from jobs.backlog.frontmatter_fast import fast_frontmatter

# Frontmatter as the CLI finds it: an optional BOM, an opening `---` line (blanks may follow the
# dashes), and the first line after it that starts with `---` closes it, whatever follows the
# dashes (gray-matter looks for "\n---": `--- `, `---\t` and `----` close it too). Group 2 is the
# rest of the closing line, group 3 its line ending.
FRONTMATTER_RE = re.compile(r"^\ufeff?---[ \t]*\r?\n(.*?)\r?\n---([^\n]*?)(\r?\n|$)", re.DOTALL)


class FrontmatterYAMLError(Exception):
    """The frontmatter is not the YAML the CLI would read; `line` is 1-based in the file."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# --------------------------------------------------------------------------- YAML reading


_loader_class: Any = None


def _loader() -> Any:
    """PyYAML's base loader (everything as text) refusing repeated keys; built on first use so
    a scan that never needs YAML never imports it."""
    global _loader_class
    if _loader_class is None:
        import yaml

        base: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

        def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
            # js-yaml refuses a repeated key, so the CLI skips such a task; a line editor would
            # also edit one occurrence while a reader sees the other.
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = loader.construct_object(key_node, deep=True)
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                if isinstance(key, str):
                    seen.add(key)
            result: dict[Any, Any] = yaml.constructor.BaseConstructor.construct_mapping(
                loader, node, deep=deep)
            return result

        _loader_class = type("StrictTextLoader", (base,), {})
        _loader_class.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                      construct_mapping)
    return _loader_class


# The CLI's own pre-pass (src/markdown/parser.ts, preprocessFrontmatter): each line that sets
# `assignee:` or `reporter:` (at any indentation, no blank before the colon) gets its value, once
# trimmed, double-quoted unless it starts with `[`, a quote or `-`; a one-line flow list
# `[...]` (a comment may follow) gets its `@` items quoted. Compiled on first use (re's cache).
_PEOPLE_RE = r"^(\s*(?:assignee|reporter):\s*)([^\r\n\u2028\u2029]*)$"
_PEOPLE_FLOW_RE = r"^\[(.*)\]\s*(#.*)?$"
_AT_ITEM_RE = r"^([ \t]*-[ \t]+)(@[^\r\n]*?)([ \t]*\r?)$"


def _dq(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _js_trim(value: str) -> str:
    # JavaScript's String.prototype.trim: Unicode blanks, line ends and the BOM
    return value.strip(" \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                       "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


def _people_line(line: str) -> str | None:
    """The line as the CLI's pre-pass rewrites it, or None when it leaves it alone."""
    m = re.match(_PEOPLE_RE, line)
    if m is None:
        return None
    prefix, value = m.group(1), _js_trim(m.group(2))
    flow = re.match(_PEOPLE_FLOW_RE, value)
    if flow is not None:
        items = [_js_trim(i) for i in flow.group(1).split(",")]
        items = [_dq(i) if i.startswith("@") else i for i in items if i]
        return f"{prefix}[{', '.join(items)}]" + (f" {flow.group(2)}" if flow.group(2) else "")
    if value and value[0] not in "['\"-" and value[0] not in "|>":
        # (a block scalar's indicator is left to YAML, as the fast reader reads it)
        return prefix + _dq(value)
    return None


def prequote_at_values(fm: str) -> str:
    """The frontmatter as the CLI hands it to YAML: `assignee:`/`reporter:` values quoted as its
    pre-pass quotes them (so `reporter: Jane: lead` or `assignee: @alice` reads as a name), and
    bare `- @alice` items under those keys quoted too.

    Works line by line so YAML error line numbers still point at the file.
    """
    if "assignee" not in fm and "reporter" not in fm:
        return fm
    out: list[str] = []
    in_people = False
    for line in fm.split("\n"):
        cr = "\r" if line.endswith("\r") else ""
        if cr:
            line = line[:-1]
        if line and not line[0].isspace() and not line.startswith("-"):
            in_people = bool(re.match(r"(assignee|reporter)[ \t]*:", line))
        quoted = _people_line(line)
        if quoted is not None:
            line = quoted
        elif in_people:
            m = re.match(_AT_ITEM_RE, line)
            if m:
                line = m.group(1) + _dq(m.group(2)) + m.group(3)
        out.append(line + cr)
    return "\n".join(out)


# js-yaml takes a tab for a blank in two places libyaml refuses it: a line of nothing but blanks
# (an editor's auto-indent leaves them), and the blanks after a block sequence item's dash. Only
# text libyaml refuses is read this way, so nothing it reads changes meaning; columns and line
# numbers stay as they were.
_TAB_ONLY_LINE = r"^[ \t]*\t[ \t]*(?=\r?$)"
_TAB_AFTER_DASH = r"^( *-)([ \t]*\t[ \t]*)(?=\S)"


def _tabs_as_blanks(text: str) -> str:
    text = re.sub(_TAB_ONLY_LINE, "", text, flags=re.MULTILINE)
    return re.sub(_TAB_AFTER_DASH, lambda m: m.group(1) + " " * len(m.group(2)), text,
                  flags=re.MULTILINE)


def _relaxed(text: str) -> str | None:
    """The text to read again once libyaml refused it, or None when tabs are not why."""
    if "\t" not in text:
        return None
    relaxed = _tabs_as_blanks(text)
    return None if relaxed == text else relaxed


def _load(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        relaxed = _relaxed(text)
        if relaxed is None:
            raise
        first = exc
    try:
        return yaml.load(relaxed, Loader=_loader())
    except yaml.YAMLError:
        raise first from None  # the error as the file is written


def load_yaml(text: str, first_line: int = 1) -> Any:
    """Parse YAML text with every scalar as text; errors carry the file line."""
    import yaml

    try:
        return _load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + first_line if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FrontmatterYAMLError(f"invalid YAML in frontmatter: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise FrontmatterYAMLError(f"invalid YAML in frontmatter: {exc}", None) from None


def yaml_has_aliases(text: str) -> bool:
    """Whether YAML text uses an alias (`*name`): read from the event stream, which never
    expands them. False for text that is not valid YAML (the loader reports that)."""
    import yaml

    text = prequote_at_values(text)
    # the text the loader reads: as written, else with its tabs read as js-yaml reads them
    for candidate in (text, _relaxed(text)):
        if candidate is None:
            break
        try:
            return any(isinstance(event, yaml.AliasEvent)
                       for event in yaml.parse(candidate, Loader=_loader()))
        except yaml.YAMLError:
            continue
    return False


def load_frontmatter(fm: str, first_line: int = 2) -> dict[str, Any]:
    """Parse frontmatter text (LF or CRLF) into a mapping of text values.

    `first_line` is the file line number of the frontmatter's first line, for error messages.
    """
    fast = fast_frontmatter(fm)
    if fast is not None:
        return fast
    data = load_yaml(prequote_at_values(fm), first_line)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterYAMLError("frontmatter is not a YAML mapping", first_line)
    return data



def split_frontmatter(text: str) -> tuple[int, int, int] | None:
    """(start, end, body start) of the frontmatter, exactly where FRONTMATTER_RE finds it.

    The regex's lazy `.*?` tests every character; a few `str.find` calls do the same job for a
    5,000-file scan at a fraction of the cost.
    """
    start = 1 if text.startswith("\ufeff") else 0
    if not text.startswith("---", start):
        return None
    start += 3
    while text.startswith((" ", "\t"), start):
        start += 1
    if text.startswith("\n", start):
        start += 1
    elif text.startswith("\r\n", start):
        start += 2
    else:
        return None
    nl = text.find("\n---", start)
    if nl < 0:
        return None
    end = nl - 1 if nl > start and text[nl - 1] == "\r" else nl
    eol = text.find("\n", nl + 4)
    return start, end, len(text) if eol < 0 else eol + 1


NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def is_null(value: object) -> bool:
    return value is None or (isinstance(value, str) and value in NULLS)
