"""A release-please release commit, judged by content, never by file name (SPEC Part 2, rule 1).

Each path the commit changes is (a) a changelog (`CHANGELOG.md` or `CHANGES.md` in any folder), a
regular file added or changed: its text is documentation, never run (so it is not added
executable, nor made so); (b) a
`.release-please-manifest.json` in any folder that stays a JSON map, loses no key, and whose
changed or added values are versions; or (c) any other regular file changed in place (same mode;
no file added, deleted, linked or turned into a gitlink) whose lines are replaced one for one,
each new line equal to the old except for version strings, each changed to a version this release
makes. The versions a release makes come from the manifests' changes, else from the subject and
the tags on the commit.

Read where the contract leaves room (docs/audit.md "Release commits"):
* a version this release makes includes its Java siblings: `X-alpha` and `X-beta` for a release
  of `X` (`X-beta-SNAPSHOT` for a bump to `X-SNAPSHOT`), as release-please's Java strategies
  version a library's proto and grpc artifacts;
* `X-SNAPSHOT` → `X` is a change to a version this release makes too;
* a build number the old version carried may stay beside the released version, changed
  (release-please's Dart updater: `version: 1.2.3+4` → `1.3.0+5` in a release of `1.3.0`);
* a fourth number kept as it was beside a version the release makes (`1.4.0.0` → `1.4.1.0`,
  as the generic updater rewrites a .NET version);
* a release never lowers a version's numbers: `memmap2 = "0.9.4"` rewritten to the release's
  `0.4.0` is code (an older dependency) dressed as a version bump, and is refused. This is
  stricter than the contract's words (`never_lower=False` judges by those alone); a pre-release
  of the same numbers (`2.25.1` → `2.25.1rc0`) is not lowering. A manifest's values are not
  lowered either (release-please reads them as each component's last release).
* when the tags on the commit name versions, those are the versions it makes (each tag must
  have a bot release): a manifest value no tag names is refused, and the subject adds none
  (`released_only=False` judges by the contract's sources alone).

Plain functions of plain data: the evidence side gives the files' checked contents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from audit.model import REGULAR_MODES, Commit, FileChange
from audit.releases import RELEASE_SUBJECT

CHANGELOGS = frozenset({"CHANGELOG.md", "CHANGES.md"})
MANIFEST = ".release-please-manifest.json"
SNAPSHOT = "-SNAPSHOT"
EXECUTABLE = "100755"
JAVA_QUALIFIERS = ("alpha", "beta")

# `N.N.N` (a fourth number too), an optional leading `v`, `^`, `~` or `=`, and any pre-release or
# build suffix: semver's `-alpha.1`, `-SNAPSHOT`, `+build`; PEP 440's `a1`, `b1`, `rc1`, `.dev1`,
# `.post1`. Not inside a longer word or number. Its numbers are ASCII digits (`\d` would take any
# Unicode digit: `1.2.٣` is no version).
VERSION = re.compile(
    r"(?<![0-9A-Za-z.])(?P<prefix>[v^~=]?)"
    r"(?P<version>(?P<core>[0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+)?)"
    r"(?P<suffix>(?:(?:a|b|rc|\.dev|\.post)[0-9]+)*"
    r"(?:-[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?(?:\+[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?))"
    r"(?![0-9A-Za-z])")


@dataclass(frozen=True)
class Release:
    """A release commit: the versions it makes, and whether it is a `-SNAPSHOT` bump (a release
    commit that needs no release)."""
    versions: frozenset[str]
    snapshot_bump: bool


@dataclass(frozen=True)
class Refused:
    """Why a commit shaped like a release is not one: the path (or the subject) and the reason."""
    where: str
    why: str


def release_content(commit: Commit, tags: Sequence[str], *, never_lower: bool = True,
                    released_only: bool = True) -> Release | Refused:
    """Judge a commit whose subject is shaped like a release by what it changes. `tags`: the
    names of the tags on it."""
    subject = commit.subject or ""
    match = RELEASE_SUBJECT.match(subject)
    if match is None:
        return Refused("subject", f"{subject!r} is not `chore(<scope>): release …`")
    if commit.changes is None:
        return Refused("its files", "what it changes was not read")
    if not commit.changes:
        return Refused("its files", "it changes no file")
    tagged = {v for t in tags for v in versions_in(t)}
    # Each tag on a release commit must have a bot release, so when the tags name versions,
    # those are the versions released; any other would move a file to a version never released.
    released = (tagged, tags) if released_only and tagged else None
    made, manifest_refusal = _manifest_versions(commit.changes, never_lower, released)
    if manifest_refusal is not None:
        return manifest_refusal
    # The manifests' changed values are changed versions too: a bump sets none to a release.
    changed: list[str] = sorted(made)
    if not made:
        made = set(tagged) if released else {*versions_in(match.group("rest")), *tagged}
    in_files: list[str] = []
    for change in commit.changes:
        refusal = _judge_file(change, made, in_files, never_lower)
        if refusal is not None:
            return refusal
    changed += in_files
    subject_snapshot = any(v.endswith(SNAPSHOT) for v in versions_in(match.group("rest")))
    bump = subject_snapshot and bool(in_files) and all(v.endswith(SNAPSHOT) for v in changed)
    return Release(frozenset(made), bump)


def versions_in(text: str) -> list[str]:
    """The version strings in a subject or tag name, without their leading `v`, `^`, `~`, `=`."""
    return [m.group("version") for m in VERSION.finditer(text)]


def _manifest_versions(changes: Iterable[FileChange], never_lower: bool,
                       released: tuple[set[str], Sequence[str]] | None
                       ) -> tuple[set[str], Refused | None]:
    """The versions the manifests' changes make (their changed or added values), or why a
    manifest refuses the commit."""
    made: set[str] = set()
    for change in changes:
        if _name(change.path) != MANIFEST:
            continue
        if change.old_mode not in REGULAR_MODES or change.new_mode not in REGULAR_MODES:
            return made, Refused(change.path, "a manifest must stay a regular file "
                                 f"({_modes(change)})")
        old, new = _json_map(change.old), _json_map(change.new)
        if old is None or new is None:
            return made, Refused(change.path, "not a JSON map of versions on both sides")
        lost = sorted(set(old) - set(new))
        if lost:
            return made, Refused(change.path, f"loses key {lost[0]!r}")
        for key, value in new.items():
            if key in old and old[key] == value:
                continue
            if not isinstance(value, str) or not _is_version(value):
                return made, Refused(change.path, f"value of {key!r} ({value!r}) is no version")
            was = old.get(key)
            if never_lower and isinstance(was, str) and _lowers(was, value):
                return made, Refused(change.path, f"value of {key!r} {was} → {value} lowers a "
                                     "version (a release only raises them)")
            if released and value not in released[0] and not value.endswith(SNAPSHOT):
                return made, Refused(change.path, f"value of {key!r} ({value}) is a version no "
                                     f"tag on the commit names ({', '.join(released[1])})")
            made.add(value)
    return made, None


def _judge_file(change: FileChange, made: set[str], changed: list[str], never_lower: bool
                ) -> Refused | None:
    name = _name(change.path)
    if name in CHANGELOGS:
        if change.new_mode not in REGULAR_MODES or change.old_mode not in (None, *REGULAR_MODES):
            return Refused(change.path, f"a changelog must be a regular file ({_modes(change)})")
        if change.new_mode == EXECUTABLE and change.old_mode != EXECUTABLE:
            return Refused(change.path, f"a changelog must not become executable "
                           f"({_modes(change)})")
        return None
    if name == MANIFEST:
        return None  # judged with the versions it makes
    if change.old_mode is None:
        return Refused(change.path, "added (a release adds no file but a changelog)")
    if change.new_mode is None:
        return Refused(change.path, "deleted (a release deletes no file)")
    if change.old_mode != change.new_mode or change.new_mode not in REGULAR_MODES:
        return Refused(change.path, f"not a regular file changed in place ({_modes(change)})")
    if change.old is None or change.new is None:
        return Refused(change.path, "its content could not be read (missing, or not matching "
                       "its name in the clone)")
    old_lines, new_lines = change.old.split(b"\n"), change.new.split(b"\n")
    if len(old_lines) != len(new_lines):
        return Refused(change.path, f"{len(old_lines)} lines became {len(new_lines)} (a "
                       "release replaces lines one for one)")
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True), start=1):
        if old != new:
            why = _judge_line(old.decode("utf-8", "surrogateescape"),
                              new.decode("utf-8", "surrogateescape"), made, changed,
                              never_lower)
            if why is not None:
                return Refused(f"{change.path} line {number}", why)
    return None


def _judge_line(old: str, new: str, made: set[str], changed: list[str], never_lower: bool
                ) -> str | None:
    """Why this changed line is more than version strings changed to versions the release
    makes; None when it is no more."""
    olds, news = list(VERSION.finditer(old)), list(VERSION.finditer(new))
    if len(olds) != len(news) or _text(old, olds) != _text(new, news):
        return "changes more than version strings"
    for o, n in zip(olds, news, strict=True):
        if o.group(0) == n.group(0):
            continue
        if o.group("prefix") != n.group("prefix"):
            return f"{o.group(0)} → {n.group(0)} changes how the version is matched"
        was, now = o.group("version"), n.group("version")
        if not _made_by(now, was, made):
            makes = ", ".join(sorted(made)) or "none found in its manifests, subject or tags"
            return f"{was} → {now}: not a version this release makes ({makes})"
        if never_lower and _lowers(was, now):
            return f"{was} → {now} lowers a version (a release only raises them)"
        changed.append(now)
    return None


def _made_by(now: str, was: str, made: set[str]) -> bool:
    if now in made or (was.endswith(SNAPSHOT) and was[:-len(SNAPSHOT)] == now):
        return True
    # A build number the old version carried stays beside the released one (Dart's pubspec
    # `1.2.3+4` → `1.3.0+5`): build metadata is no part of which version is installed.
    released, build, _ = now.partition("+")
    if build and "+" in was and released in made:
        return True
    # A fourth number kept as it was beside the `N.N.N` the release sets (the generic updater
    # replaces the first three numbers of a .NET `1.4.0.0`): the version is still `N.N.N`.
    a, b = VERSION.fullmatch(now), VERSION.fullmatch(was)
    if a is not None and b is not None:
        head, dot, fourth = a.group("core").rpartition(".")
        if head.count(".") == 2 and b.group("core").count(".") == 3 \
                and b.group("core").endswith(dot + fourth):
            return _made_by(head + a.group("suffix"), was, made)
    for version in made:
        core = VERSION.fullmatch(version)
        if core is None:
            continue
        base, rest = core.group("core"), core.group("suffix")
        if any(now == f"{base}-{q}{rest}" for q in JAVA_QUALIFIERS):
            return True
    return False


def _lowers(was: str, now: str) -> bool:
    """Are `now`'s numbers lower than `was`'s (`1.4.1` after `2.7.0`)?"""
    a, b = VERSION.fullmatch(was), VERSION.fullmatch(now)
    if a is None or b is None:
        return False
    return _numbers(b.group("core")) < _numbers(a.group("core"))


def _numbers(core: str) -> tuple[int, ...]:
    numbers = tuple(int(n) for n in core.split("."))
    return numbers + (0,) * (4 - len(numbers))


def _text(line: str, found: Sequence[re.Match[str]]) -> list[str]:
    """The line's text around its version strings."""
    out, at = [], 0
    for m in found:
        out.append(line[at:m.start()])
        at = m.end()
    out.append(line[at:])
    return out


def _is_version(value: str) -> bool:
    match = VERSION.fullmatch(value)
    return match is not None and not match.group("prefix")


def _json_map(data: bytes | None) -> dict[str, object] | None:
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _modes(change: FileChange) -> str:
    return f"mode {change.old_mode or 'absent'} → {change.new_mode or 'absent'}"
