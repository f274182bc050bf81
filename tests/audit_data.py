"""Plain data for the audit's judge: snapshots, commits and histories built in memory, so that each
rule is tested without git (the git side is tested on real repositories elsewhere)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.judge.compare import judge
from audit.model import (
    ZERO,
    BranchHistory,
    Charter,
    Commit,
    Finding,
    Grant,
    History,
    PushEntry,
)

REPO = "/work/app"
GH = "acme/widgets"
GH_URL = f"https://github.com/{GH}.git"
MAIN = "refs/heads/main"


def sha(n: int) -> str:
    """A made-up object name; never the all-zero "absent"."""
    return f"{n:040x}"


def charter(*, grants: Iterable[str] = (), session: str | None = "mine",
            release_bots: Sequence[str] = ()) -> Charter:
    """A charter granting `release-please` for each `owner/name` of `grants`."""
    return Charter(path=Path("charter.md"), repo=GH, loop=1,
                   grants=tuple(Grant("release-please", g) for g in grants), session=session,
                   sha256="0" * 64, release_bots=tuple(release_bots))


def remote(refs: Mapping[str, str], *, url: str = "/srv/app.git", head: str | None = MAIN
           ) -> dict[str, Any]:
    """One remote's part of a snapshot: its refs, and HEAD pointing at `head`."""
    return {"available": True, "url": url, "refs": dict(refs),
            "symrefs": {"HEAD": head} if head else {}}


def repo_part(remotes: Mapping[str, Mapping[str, Any]], *,
              tags: Mapping[str, str] | None = None,
              releases: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One repository's part: its remotes, local tags, and releases (not applicable when None)."""
    rel: dict[str, Any] = ({"available": True, "releases": [], "note": "not on GitHub"}
                           if releases is None else
                           {"available": True, "releases": list(releases), "github_repo": GH,
                            "github_repos": [GH]})
    return {"remotes": {k: dict(v) for k, v in remotes.items()},
            "tags": {"available": True, "tags": dict(tags or {})}, "releases": rel}


def snapshot(part: Mapping[str, Any], repo: str = REPO) -> dict[str, Any]:
    return {"taken_at": "2026-11-30T07:00:00Z", "charter_sha256": None, "repos": {repo: part}}


def entry(ref: str, old: str, new: str, line: int = 1, *, remote_name: str = "origin",
          repo: str = REPO) -> PushEntry:
    return PushEntry(repo, remote_name, ref, old, new, "2026-11-30T07:00:00Z", "test", line)


def release(tag: str, *, author: str = "release-please[bot]", draft: bool = False,
            assets: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    return {"tag_name": tag, "name": tag, "draft": draft, "prerelease": False,
            "author": author, "target_commitish": "main", "repo": GH,
            "created_at": "2026-11-30T07:10:00Z", "published_at": "2026-11-30T07:10:00Z",
            "assets": [dict(a) for a in assets]}


def history(branches: Mapping[tuple[str, str], BranchHistory] | None = None,
            entries: Sequence[PushEntry] = (), repo: str = REPO) -> History:
    """What git said: `branches` by (remote, ref), the push log's entries naming `repo`."""
    return History(entries={repo: tuple(entries)},
                   branches={(repo, r, ref): h for (r, ref), h in (branches or {}).items()})


def line(commits: Sequence[Commit], *, fast_forward: bool | None = True,
         present: Iterable[str] = (), **extra: Any) -> BranchHistory:
    """A branch's history as git listed it, children first."""
    return BranchHistory(fast_forward, tuple(commits), frozenset(present), **extra)


def judged(before: Mapping[str, Any], after: Mapping[str, Any], hist: History,
           grant: Charter | None = None) -> list[Finding]:
    return judge(before, after, grant, hist, ())


def by_key(findings: Sequence[Finding]) -> dict[tuple[str, str], str]:
    """(ref or commit, kind) → verdict; a run of commits (a logged push's, which the judge
    reports as one) by its newest and oldest."""
    out = {(f.commit or f.ref, f.kind): f.verdict for f in findings}
    out.update({(f.first, f.kind): f.verdict for f in findings if f.first is not None})
    return out


def moved_main(commits: Sequence[Commit], before: str, after: str,
               entries: Sequence[PushEntry] = (), *, grant: Charter | None = None,
               releases_after: Sequence[Mapping[str, Any]] | None = None,
               tags_after: Mapping[str, str] | None = None, **extra: Any) -> list[Finding]:
    """Judge origin's main moving from `before` to `after` through `commits`."""
    b_refs, a_refs = {MAIN: before}, {MAIN: after, **(tags_after or {})}
    url = GH_URL if releases_after is not None else "/srv/app.git"
    b = snapshot(repo_part({"origin": remote(b_refs, url=url)},
                           releases=[] if releases_after is not None else None))
    a = snapshot(repo_part({"origin": remote(a_refs, url=url)}, releases=releases_after))
    # Unless the test says otherwise, every logged push of main was a fast-forward.
    extra.setdefault("fast_forwards", frozenset(
        (e.old, e.new) for e in entries if e.ref == MAIN and ZERO not in (e.old, e.new)))
    tips = {s for e in entries for s in (e.old, e.new) if s != ZERO}
    known = {c.sha for c in commits} | {before}
    hist = history({("origin", MAIN): line(commits, present=tips & known, **extra)}, entries)
    return judge(b, a, grant, hist, ())
