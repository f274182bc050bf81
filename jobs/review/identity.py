"""Which repository each clone in the ledger is, and what `--repo PATH|NAME` selects.

The ledger keeps attempts by clone path; a repository is one thing whichever clones and machines
ran it. Its identity is the one the claims use (jobs/verify/claims.py: the normalised URL of the
branch's remote, else the path), taken from the claims table for every clone that ever claimed a
task, from the clone itself when it is on this machine, else the clone's path.

`--repo` is resolved here for every command that takes it (review, history): one rule.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from jobs.config.load import expand_user
from jobs.core.urls import canonical_identity
from jobs.ledger.rows import attempts, claims
from jobs.verify.terminal import repo_names

# (machine, clone path): machine is None for rows written before machines were recorded.
Clone = tuple[str | None, str]


@dataclass(frozen=True)
class RepoChoice:
    """`--repo` as given: a path (absolute, resolved) or a repository's name."""

    path: str | None = None
    name: str | None = None

    @property
    def shown(self) -> str:
        return self.path or self.name or ""


def parse_repo_option(raw: str | None, option: str = "--repo") -> RepoChoice | None:
    """A folder that exists, or anything spelled as a path, is a path; else a name."""
    if not raw:
        return None
    path = expand_user(raw, option, option)
    if os.sep in raw or raw.startswith("~") or path.is_dir():
        return RepoChoice(path=str(path.resolve()))
    return RepoChoice(name=raw)


def _last_part(text: str) -> str:
    return text.rstrip("/").rsplit("/", 1)[-1]


def choice_matches(choice: RepoChoice, identity: str, clones: Iterable[str]) -> bool:
    """Whether a repository (its identity and its clones' paths) is the one `--repo` names: a
    path names the clone there (or the identity, a local remote's path); a name is the last part
    of the identity (`app` for github.com/acme/app, any case on GitHub) or of any clone's path."""
    if choice.path is not None:
        return identity == choice.path or any(c == choice.path for c in clones)
    # A GitHub name is case-insensitive (its identity is in lower case: jobs.core.urls).
    name = (choice.name or "").lower() if identity.startswith("github.com/") else choice.name
    return _last_part(identity) == name or any(_last_part(c) == choice.name for c in clones)


def chosen_repositories(choice: RepoChoice, clones: Iterable[Clone],
                        identity: Callable[[str | None, str], str]) -> frozenset[str]:
    """The identities of the repositories `--repo` names: each one with a clone (or an identity)
    that matches. Every clone of such a repository belongs to the choice, whatever its folder is
    called and whichever machine ran it."""
    return frozenset(found for machine, repo in clones
                     if choice_matches(choice, found := identity(machine, repo), [repo]))


def read_claimed(conn: sa.Connection) -> dict[Clone, str]:
    """Each clone's identity as its run recorded it: on its attempts (every run since the column
    exists, a clone that only ever found its tasks verified elsewhere too), else on its claims. A
    clone whose remote changed was recorded under two: the greater one stands (a choice that does
    not change from one report to the next)."""
    c, a = claims.c, attempts.c
    recorded = sa.union(
        sa.select(c.repo, c.machine, c.identity).where(c.repo.is_not(None)),
        sa.select(a.repo, a.machine, a.repo_identity.label("identity"))
        .where(a.repo_identity.is_not(None)))
    found: dict[Clone, str] = {}
    for repo, machine, identity in conn.execute(recorded).fetchall():
        key = (machine, repo)
        if key not in found or identity > found[key]:
            found[key] = identity
    return found


def local_identity(repo: str, branch: str) -> str | None:
    """A clone on this machine's identity, found as a run finds it for its claims."""
    from jobs.core.urls import normalise_remote
    from jobs.git import repo as git

    root = Path(repo)
    if not (root / ".git").exists():
        return None
    url = git.branch_remote_url(root, branch)
    return normalise_remote(url, root) if url else repo


class Identities:
    """Each clone's identity, asked once per clone."""

    def __init__(self, claimed: Mapping[Clone, str], machine: str,
                 local: Callable[[str], str | None]) -> None:
        # As this version spells them: rows an earlier version wrote join their repository.
        self.claimed = {clone: canonical_identity(i) for clone, i in claimed.items()}
        self.machine = machine
        self.local = local
        by_path: dict[str, set[str]] = {}
        for (_m, repo), identity in self.claimed.items():
            by_path.setdefault(repo, set()).add(identity)
        # A row without a machine takes the identity its path was claimed under, when only one.
        self._by_path = {repo: next(iter(ids)) for repo, ids in by_path.items() if len(ids) == 1}
        self._cache: dict[Clone, str] = {}

    def __call__(self, machine: str | None, repo: str) -> str:
        key = (machine, repo)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._find(machine, repo)
        return found

    def _find(self, machine: str | None, repo: str) -> str:
        claimed = self.claimed.get((machine, repo))
        if claimed is None and machine is None:
            claimed = self._by_path.get(repo)
        if claimed is not None:
            return claimed
        if machine in (None, self.machine):
            return self.local(repo) or repo
        return repo


def group_names(identities: Iterable[str]) -> dict[str, str]:
    """Each identity's name on the page: its last part, or as much of it as tells it apart."""
    return repo_names(identities)
