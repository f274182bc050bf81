"""`~` and `$VAR`/`${VAR}` in the configuration's paths and ledger URL, as a shell would expand
them in an unquoted word — except that an undefined variable is an error, never an empty string
(a state folder at `/loop-jobs` because `$XDG_STATE_HOME` was unset in a scheduled job's
environment would be a silent surprise). `$$` is one literal `$`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from jobs.core.errors import ConfigError

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOLLAR = re.compile(rf"\$(?:(?P<name>{_NAME})|\{{(?P<braced>[^}}]*)\}}|(?P<dollar>\$))")


class ExpandError(ValueError):
    """Why a value cannot be expanded (the caller names the file, line, key and value)."""


def expand(raw: str, env: Mapping[str, str], *, tilde: bool = True) -> str:
    """`raw` with a leading `~` or `~user` (when `tilde`) and every `$NAME`, `${NAME}` and `$$`
    expanded from `env`."""
    text = expand_tilde(raw, env) if tilde else raw
    if "$" not in text:
        return text
    out: list[str] = []
    at = 0
    for m in _DOLLAR.finditer(text):
        out.append(_plain(text, at, m.start()))
        if m.group("dollar") is not None:
            out.append("$")
        else:
            name = m.group("name")
            braced = m.group("braced")
            if braced is not None:
                if not braced:
                    raise ExpandError("empty ${} (write $$ for a literal `$`)")
                if re.fullmatch(_NAME, braced) is None:
                    raise ExpandError(f"${{{braced}}} is not a variable name")
                name = braced
            value = env.get(name)
            if value is None:
                shown = f"${{{name}}}" if braced is not None else f"${name}"
                raise ExpandError(f"undefined variable {shown} (set it where loop-verify runs, "
                                  "or write $$ for a literal `$`)")
            out.append(value)
        at = m.end()
    out.append(_plain(text, at, len(text)))
    return "".join(out)


def expand_ledger(raw: str, env: Mapping[str, str]) -> str:
    """A ledger URL with its variables expanded, and a `~` right after `sqlite:///`."""
    url = expand(raw, env, tilde=False)
    if url.startswith("sqlite:///~"):
        url = "sqlite:///" + expand_tilde(url.removeprefix("sqlite:///"), env)
    return url


def _plain(text: str, start: int, end: int) -> str:
    """Text between expansions: a `$` left there starts nothing the syntax knows."""
    part = text[start:end]
    if "$" in part:
        if text.startswith("${", start + part.index("$")):
            raise ExpandError("unclosed ${ (write $$ for a literal `$`)")
        raise ExpandError("a `$` must start $NAME, ${NAME} or $$ (for a literal `$`)")
    return part


def expand_tilde(raw: str, env: Mapping[str, str]) -> str:
    """A leading `~` (the home folder in `env`, else this process's) or `~user`."""
    if not raw.startswith("~"):
        return raw
    head, sep, rest = raw.partition("/")
    if head == "~":
        home = env.get("HOME") or os.path.expanduser("~")
        return home.rstrip("/") + sep + rest if rest or sep else home
    expanded = os.path.expanduser(head)
    if expanded == head:
        raise ExpandError(f"cannot expand '{head}': no such user or no home directory")
    return expanded + sep + rest


def expand_user(raw: str | Path, where: Path | str, key: str) -> Path:
    """`~` and `~user` in a path given on the command line (whose shell expanded the rest); an
    unknown user is a ConfigError, not a RuntimeError."""
    try:
        return Path(raw).expanduser()
    except RuntimeError:
        raise ConfigError(where, key, str(raw), "cannot expand '~': no such user or no home "
                          "directory") from None

