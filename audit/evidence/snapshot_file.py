"""Reading a snapshot file back: anything malformed is an InputError (exit 2), never a crash
and never a silently thinner snapshot."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobs.core.errors import InputError
from jobs.core.fs import read_regular

# What git prints for an object: full hex, SHA-1 or SHA-256. Anything else in a snapshot file
# was not written by a snapshot, and a value such as `--upload-pack=CMD` would reach git's
# argument vector when closeout fetches a tip it lacks.
_OBJECT_NAME = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def load_snapshot(path: Path) -> dict[str, Any]:
    """Read and check a snapshot file; anything malformed is an InputError (exit 2)."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        raise InputError(path, "no such snapshot file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read snapshot: {exc.strerror or exc}") from None
    return parse_snapshot(path, data)


def parse_snapshot(path: Path, data: bytes) -> dict[str, Any]:
    """Check the bytes read from the snapshot file `path` (once: the bytes whose seal was
    checked); anything malformed is an InputError (exit 2)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"cannot read snapshot: {exc}") from None
    try:
        snap = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed snapshot JSON: {exc.msg} (column {exc.colno})",
                         line=exc.lineno) from None
    except RecursionError:
        raise InputError(path, "malformed snapshot JSON: nested too deeply") from None
    except ValueError as exc:  # a number past Python's digit limit, say
        raise InputError(path, f"malformed snapshot JSON: {exc}") from None
    problem = _check_snapshot(snap)
    if problem is not None:
        raise InputError(path, f"not a loop-pi-audit snapshot: {problem}")
    return dict(snap)


def _check_snapshot(snap: Any) -> str | None:
    if not isinstance(snap, dict):
        return "top level is not a JSON object"
    if not isinstance(snap.get("taken_at"), str):
        return "`taken_at` missing or not a string"
    if "charter_sha256" not in snap or not isinstance(snap["charter_sha256"], str | None):
        return "`charter_sha256` missing or not a string/null"
    repos = snap.get("repos")
    if not isinstance(repos, dict):
        return "`repos` missing or not an object"
    for repo, entry in repos.items():
        if not repo.startswith("/") or "\0" in repo:
            # The key is where closeout runs git: a relative one would be read from wherever
            # compare runs, and a NUL crashed the process that was to run there.
            return f"repository key {repo!r} is not an absolute path"
        where = f"repos[{repo!r}]"
        problem = _check_repo(where, entry)
        if problem is not None:
            return problem
    return None


def _check_repo(where: str, entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"{where} is not an object"
    if "available" in entry and (entry["available"] is not False
                                 or not isinstance(entry.get("reason"), str)):
        return f"{where}: `available` may only be false, with a `reason`"
    remotes = entry.get("remotes")
    if not isinstance(remotes, dict):
        return f"{where}.remotes missing or not an object"
    for name, part in remotes.items():
        problem = _check_part(f"{where}.remotes[{name!r}]", part, {"refs": dict, "symrefs": dict})
        if problem is not None:
            return problem
        if not isinstance(part.get("url"), str | None) or not _strings(part.get("pushurls", [])) \
                or not _strings(part.get("rewritten_to", [])):
            return (f"{where}.remotes[{name!r}]: `url` must be a string (or null), "
                    "`pushurls` and `rewritten_to` lists of strings")
        if part["available"]:
            for label in ("refs", "symrefs"):
                if not all(isinstance(k, str) and isinstance(v, str)
                           for k, v in part[label].items()):
                    return f"{where}.remotes[{name!r}].{label} must map strings to strings"
            problem = _object_names(f"{where}.remotes[{name!r}].refs", part["refs"])
            if problem is not None:
                return problem
            bad = sorted(k for k, v in part["symrefs"].items() if not v.startswith("refs/"))
            if bad:
                return f"{where}.remotes[{name!r}].symrefs[{bad[0]!r}] is not a full ref name"
    for label, kind in (("tags", dict), ("releases", list)):
        part = entry.get(label)
        problem = _check_part(f"{where}.{label}", part, {label: kind})
        if problem is not None:
            return problem
    tags = entry["tags"]
    if tags["available"] and not all(isinstance(k, str) and isinstance(v, str)
                                     for k, v in tags["tags"].items()):
        return f"{where}.tags.tags must map strings to strings"
    if tags["available"]:
        problem = _object_names(f"{where}.tags.tags", tags["tags"])
        if problem is not None:
            return problem
    releases = entry["releases"]
    if not isinstance(releases.get("github_repo"), str | None) \
            or not _strings(releases.get("github_repos", [])):
        return (f"{where}.releases: `github_repo` must be a string (or null) and "
                "`github_repos` a list of strings")
    if releases["available"]:
        for i, rel in enumerate(releases["releases"]):
            if not isinstance(rel, dict) or not isinstance(rel.get("tag_name"), str) \
                    or not isinstance(rel.get("draft"), bool) \
                    or not isinstance(rel.get("prerelease"), bool) \
                    or not isinstance(rel.get("author"), str | None):
                return (f"{where}.releases.releases[{i}] needs tag_name (string), draft and "
                        "prerelease (booleans) and author (string or null)")
            # Optional (the contract's bare form has none), but never a thinner list than
            # was read: each asset an object with its name.
            assets = rel.get("assets", [])
            if assets is not None and not (isinstance(assets, list) and all(
                    isinstance(a, dict) and isinstance(a.get("name"), str) for a in assets)):
                return (f"{where}.releases.releases[{i}].assets must be a list of objects, "
                        "each with a name (string)")
    return None


def _object_names(where: str, refs: Mapping[str, str]) -> str | None:
    bad = sorted(ref for ref, value in refs.items() if not _OBJECT_NAME.match(value))
    if bad:
        return f"{where}[{bad[0]!r}] is not a full hex object name ({refs[bad[0]][:50]!r})"
    return None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_part(where: str, part: Any, fields: Mapping[str, type]) -> str | None:
    if not isinstance(part, dict) or not isinstance(part.get("available"), bool):
        return f"{where} is not an object with a boolean `available`"
    if not part["available"]:
        if not isinstance(part.get("reason"), str):
            return f"{where} is unavailable without a `reason`"
        return None
    for name, kind in fields.items():
        if not isinstance(part.get(name), kind):
            return f"{where}.{name} missing or not a{'n object' if kind is dict else ' list'}"
    return None
