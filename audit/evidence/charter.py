"""The run's charter: which repository and loop it is, and what authority it grants."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from audit.model import Charter, Grant
from jobs.core.errors import InputError
from jobs.core.fs import read_regular

KNOWN_GRANTS = frozenset({"release-please"})

_TITLE = re.compile(r"^#\s+Charter:\s+(?P<repo>\S+)\s+loop(?P<loop>\d+)\s*$")
# `key: value`, optionally as a markdown list item or with the key in bold (`**authority:**`).
_KEY = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?P<key>[A-Za-z][A-Za-z0-9_-]*)"
                  r"(?P<colon>:(?:\*\*|__)?|(?:\*\*|__):)\s*(?P<value>.*?)\s*$")
_LINE_END = re.compile(r"\r\n|\r|\n")
_OWNER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*)/[A-Za-z0-9._-]+$")
# A GitHub login: a user's or machine user's, or an App's bot account (`name[bot]`).
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*)(?:\[bot\])?$")


def charter_sha256(path: Path) -> str:
    """sha256 of the file's bytes: what `begin --charter` freezes and closeout checks."""
    return hashlib.sha256(_read_bytes(path)).hexdigest()


def load_charter(path: Path) -> Charter:
    """Parse a charter; anything it cannot use is an InputError naming the file and line."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    # Markdown's line endings only: splitlines() would also break at U+2028, U+0085 or a form
    # feed inside a line, and the text after one would be read as a key.
    lines = _LINE_END.split(text.removeprefix("\ufeff"))
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError(path, "empty charter: first line must be `# Charter: <repo> loop<N>`",
                         line=1)
    title = _TITLE.match(lines[0])
    if title is None:
        raise InputError(path, f"first line must be `# Charter: <repo> loop<N>`, "
                         f"got {lines[0][:80]!r}", line=1)
    try:
        loop = int(title.group("loop"))
    except ValueError:  # more digits than Python converts
        raise InputError(path, "loop number too long", line=1) from None
    grants: list[Grant] = []
    session: str | None = None
    bots: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        match = _KEY.match(line)
        if match is None:
            continue
        key = match.group("key").lower()
        if key not in ("authority", "session", "release-bots"):
            continue
        if key in seen:
            # Two authority lines would leave a reader unsure which one the run was held to.
            raise InputError(path, f"`{key}:` given twice (first on line {seen[key]})",
                             line=number)
        seen[key] = number
        value = match.group("value")
        if key == "authority":
            grants = _parse_authority(path, number, value)
        elif key == "release-bots":
            bots = _parse_logins(path, number, value)
        else:
            if not value or any(ch.isspace() for ch in value):
                raise InputError(path, f"`session:` must be one word, got {value!r}",
                                 line=number)
            session = value
    return Charter(path=Path(path), repo=title.group("repo"), loop=loop,
                   grants=tuple(grants), session=session, sha256=hashlib.sha256(data).hexdigest(),
                   release_bots=tuple(bots))


def _parse_authority(path: Path, number: int, value: str) -> list[Grant]:
    grants: list[Grant] = []
    if not value.strip() or value.strip().lower() == "none":
        return grants
    for item in value.split(","):
        words = item.split()
        if not words:
            raise InputError(path, f"empty grant in `authority: {value}`", line=number)
        kind = words[0]
        if kind not in KNOWN_GRANTS:
            raise InputError(path, f"unknown grant {kind!r} (known: "
                             f"{', '.join(sorted(KNOWN_GRANTS))})", line=number)
        name = words[1].partition("/")[2] if len(words) == 2 else ""
        if len(words) != 2 or not _OWNER_NAME.match(words[1]) or name in (".", ".."):
            raise InputError(path, f"malformed grant {item.strip()!r}: "
                             f"expected `{kind} <owner/name>`", line=number)
        if name.lower().endswith(".git"):
            # GitHub names no repository so (it takes `.git` off a new one's name): the grant
            # would match nothing, and the release it was meant for would fail unexplained.
            raise InputError(path, f"malformed grant {item.strip()!r}: a GitHub repository "
                             f"name never ends in `.git`; write `{words[1][:-4]}`", line=number)
        grants.append(Grant(kind=kind, repo=words[1]))
    return grants


def _parse_logins(path: Path, number: int, value: str) -> list[str]:
    """`release-bots:`, comma-separated GitHub logins (an App's bot account or a machine user)."""
    logins: list[str] = []
    for item in value.split(","):
        login = item.strip()
        if not _LOGIN.match(login):
            raise InputError(path, f"malformed login {login!r} in `release-bots:` (expected "
                             "GitHub logins such as `my-release-app[bot]`, comma-separated)",
                             line=number)
        if login not in logins:
            logins.append(login)
    return logins


def _read_bytes(path: Path) -> bytes:
    try:
        return read_regular(path)
    except OSError as exc:
        raise InputError(path, f"cannot read charter: {exc.strerror or exc}") from None
