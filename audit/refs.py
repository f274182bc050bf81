"""Which ref is which and which push-log entries speak of it: the default branch, what changed
between two snapshots of a remote, and which entries cover a remote.

Plain functions of plain data, shared by the evidence side (which reads the history of the
default branch a remote judges, with the entries that cover it) and the judge; neither imports
the other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from audit.model import Change, PushEntry
from jobs.core.urls import github_remote, redact_url

# ls-remote's peeled lines (`refs/tags/v1^{}`) describe a tag; they are not refs.
PEELED = "^{}"


def remote_urls(part: Mapping[str, Any]) -> set[str]:
    """Every URL a remote names, as configured and where insteadOf rules send it, redacted and
    normalised: how remotes (and push-log entries) are compared."""
    urls = [part.get("url"), *part.get("pushurls", []), *part.get("rewritten_to", [])]
    return {_same_url(u) for u in urls if isinstance(u, str) and u}


def _same_url(url: str) -> str:
    """One spelling per repository: a local path as `/p`, `/p/` or `file:///p`; a github.com
    repository as https, ssh or scp-like, with or without `.git`, in any case (GitHub's names
    are case-insensitive). Anything else only loses a trailing slash."""
    url = redact_url(url).rstrip("/")
    found = github_remote(url)
    if found is not None:
        return "github:" + found[1].lower()
    if url.startswith("file://"):
        path = unquote(url.removeprefix("file://"))
        url = path if path.startswith("/") else url
    if "://" not in url and url.startswith("/"):
        url = os.path.normpath(url)
    return url


def covering(entries: Sequence[PushEntry], name: str, part: Mapping[str, Any],
             remotes: Mapping[str, Mapping[str, Any]] | None = None) -> list[PushEntry]:
    """The entries that cover remote `name`: its `remote` is that name, or a URL of it, or another
    remote (of `remotes`, the repository's remotes in either snapshot) sharing a URL with it after
    insteadOf (a push through one name lands wherever the URL leads). In one pass: what each
    distinct `remote` value of the log means is worked out once, not once per entry."""
    mine = remote_urls(part)
    known = remotes or {}
    verdict: dict[str, bool] = {}
    out: list[PushEntry] = []
    for e in entries:
        said = e.remote
        if said not in verdict:
            other = known.get(said)
            verdict[said] = (said == name or _same_url(said) in mine
                             or (other is not None and bool(remote_urls(other) & mine)))
        if verdict[said]:
            out.append(e)
    return out


class EntryIndex:
    """A remote's push-log entries, indexed once by ref: judging 8,000 tags must not rescan
    the whole log for each one."""

    def __init__(self, entries: Sequence[PushEntry]) -> None:
        self.all: tuple[PushEntry, ...] = tuple(entries)
        self._by_ref: dict[str, list[PushEntry]] | None = None

    def of_ref(self, ref: str) -> list[PushEntry]:
        if self._by_ref is None:
            self._by_ref = {}
            for e in self.all:
                self._by_ref.setdefault(e.ref, []).append(e)
        return self._by_ref.get(ref, [])


def default_branch(b_part: Mapping[str, Any], a_part: Mapping[str, Any]) -> str:
    """The remote's HEAD symref as the run found it, else main. HEAD as the run left it counts
    only for a remote that had no branch at all when the run started: a HEAD that named no
    existing branch then (a server advertises none) must not let the run choose its default
    branch by creating the one it names, and so have main judged like any other branch."""
    target = b_part.get("symrefs", {}).get("HEAD")
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target
    if not any(ref.startswith("refs/heads/") for ref in b_part.get("refs", {})):
        target = a_part.get("symrefs", {}).get("HEAD")
        if isinstance(target, str) and target.startswith("refs/heads/"):
            return target
    return "refs/heads/main"


def ref_changes(b_refs: Mapping[str, str], a_refs: Mapping[str, str]) -> list[Change]:
    """Changed refs; ls-remote's peeled `^{}` lines describe a tag, they are not refs."""
    out: list[Change] = []
    for ref in sorted(set(b_refs) | set(a_refs)):
        if ref.endswith(PEELED):
            continue
        old, new = b_refs.get(ref), a_refs.get(ref)
        if old != new:
            out.append(Change(ref, old, new))
    return out


def judged_branch(b_part: Mapping[str, Any], a_part: Mapping[str, Any]) -> Change | None:
    """The default-branch change whose commits are judged one by one, if any."""
    ref = default_branch(b_part, a_part)
    old, new = b_part.get("refs", {}).get(ref), a_part.get("refs", {}).get(ref)
    if old == new or new is None:
        return None
    return Change(ref, old, new)
