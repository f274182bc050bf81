"""What a release-please release commit looks like: its subject and the files it may change.

Plain functions of plain data, shared by the evidence side (which reads more of a commit shaped
like a release) and the judge.
"""

from __future__ import annotations

import re

RELEASE_MANIFEST = ".release-please-manifest.json"
CHANGELOG = "CHANGELOG.md"
VERSION_FILES = frozenset({
    "package.json", "package-lock.json", "pyproject.toml", "setup.py", "setup.cfg",
    "Cargo.toml", "Cargo.lock", "version.txt", "version.py", "_version.py",
})
_RELEASE_SUBJECT = re.compile(
    r"^chore(?:\((?P<scope>[^()\s]+)\))?: release "
    r"(?:(?P<component>[A-Za-z0-9@][A-Za-z0-9@/._-]*) )?"
    r"v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?"
    r"(?: \(#\d+\))?$")


def is_release_subject(subject: str, branch: str) -> bool:
    match = _RELEASE_SUBJECT.match(subject)
    if match is None:
        return False
    scope = match.group("scope")
    return scope is None or scope == branch


def is_release_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path == RELEASE_MANIFEST or name == CHANGELOG or name in VERSION_FILES
