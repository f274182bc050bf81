"""What every part of one repository's judgement shares: its inputs and how it adds findings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from audit.model import Charter, Finding, History, PushEntry
from audit.refs import EntryIndex, covering
from jobs.core.urls import github_repo_from_url


@dataclass
class JudgeBase:
    repo: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    entries: tuple[PushEntry, ...]
    charter: Charter | None
    history: History
    hosts: tuple[str, ...]
    findings: list[Finding] = field(default_factory=list)
    commit_verdicts: dict[str, str] = field(default_factory=dict)
    release_verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    indexes: dict[str, EntryIndex] = field(default_factory=dict)
    github_names: dict[tuple[Any, tuple[Any, ...]], list[str]] = field(default_factory=dict)
    tag_indexes: dict[int, dict[str, set[str]]] = field(default_factory=dict)


    # -- findings -------------------------------------------------------------------------

    def _add(self, remote: str, ref: str, kind: str, before: str | None, after: str | None,
             verdict: str, reason: str, commit: str | None = None, order: int = 0,
             parent: str | None = None, evidence: str | None = None) -> Finding:
        finding = Finding(self.repo, remote, ref, kind, before, after, commit, verdict, reason,
                          order, parent, evidence)
        self.findings.append(finding)
        return finding

    def _remote_entries(self, name: str, part: Mapping[str, Any]) -> list[PushEntry]:
        return list(self.remote_index(name, part).all)

    def remote_index(self, name: str, part: Mapping[str, Any]) -> EntryIndex:
        """The entries covering remote `name`, worked out and indexed once per remote."""
        found = self.indexes.get(name)
        if found is None:
            found = EntryIndex(covering(self.entries, name, part, self.all_remotes()))
            self.indexes[name] = found
        return found

    def local_index(self) -> EntryIndex:
        found = self.indexes.get("")
        if found is None:
            found = self.indexes[""] = EntryIndex(self.entries)
        return found

    def all_remotes(self) -> dict[str, Mapping[str, Any]]:
        """The repository's remotes in either snapshot (the after one where both have it)."""
        return {**self.before.get("remotes", {}), **self.after.get("remotes", {})}

    def _github_repos(self, part: Mapping[str, Any]) -> list[str]:
        key = (part.get("url"), tuple(part.get("pushurls", [])))
        found = self.github_names.get(key)
        if found is None:
            found = self.github_names[key] = self._github_repos_of(part)
        return found

    def _github_repos_of(self, part: Mapping[str, Any]) -> list[str]:
        names: list[str] = []
        for url in [part.get("url"), *part.get("pushurls", [])]:
            if isinstance(url, str):
                found = github_repo_from_url(url, self.hosts)
                if found is not None and found.lower() not in [n.lower() for n in names]:
                    names.append(found)
        return names
