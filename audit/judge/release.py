"""Releases, their tags and release-please commits: the parts of the judgement GitHub owns."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from audit.judge.release_commit import ReleaseCommitJudge
from audit.judge.rules import LOCAL, chain, lines
from audit.model import (
    PUSH_LOGGED,
    RELEASE_PLEASE,
    UNGRANTED,
    UNVERIFIED,
    Change,
    grants_release_please,
    is_release_bot,
    release_bots,
    short,
)
from audit.refs import PEELED, EntryIndex, ref_changes


class ReleaseJudge(ReleaseCommitJudge):
    # -- releases and tags ------------------------------------------------------------------

    def _tag_commits(self, gh_repo: str, tag: str, snap: Mapping[str, Any]) -> set[str]:
        """Commits the tag names on the remotes whose URLs name `gh_repo`."""
        found: set[str] = set()
        for part in snap.get("remotes", {}).values():
            if not part.get("available") or gh_repo.lower() not in [
                    g.lower() for g in self._github_repos(part)]:
                continue
            refs = part.get("refs", {})
            sha = refs.get(f"refs/tags/{tag}{PEELED}") or refs.get(f"refs/tags/{tag}")
            if isinstance(sha, str):
                found.add(sha)
        return found

    def _judge_releases(self) -> bool:
        b, a = self.before.get("releases", {}), self.after.get("releases", {})
        down = [f"{side}: {p.get('reason', 'unavailable')}"
                for side, p in (("before", b), ("after", a)) if not p.get("available")]
        if down:
            self._add("github", "releases", "releases-unavailable", None, None, UNVERIFIED,
                      "; ".join(down))
            return False
        read = [_read_from(p) for p in (b, a)]
        if None not in read and read[0] != read[1]:
            # The after-snapshot asked other repositories (a GitHub Enterprise host unknown at
            # closeout, say): "no release" there says nothing of the ones read at the start.
            self._add("github", "releases", "releases-unavailable", None, None, UNVERIFIED,
                      f"releases were read from {', '.join(read[0] or ['no repository'])} at "
                      f"the start but from {', '.join(read[1] or ['no repository'])} at the "
                      "end: they cannot be compared")
            return False
        b_by = _releases_by_key(b, next(iter(self._release_repos(b)), ""))
        a_by = _releases_by_key(a, next(iter(self._release_repos(a)), ""))
        b_assets = _assets_by_key(b, next(iter(self._release_repos(b)), ""))
        a_assets = _assets_by_key(a, next(iter(self._release_repos(a)), ""))
        for key in sorted(set(b_by) | set(a_by)):
            olds, news = b_by.get(key, []), a_by.get(key, [])
            gh_repo, tag = key
            remote, ref = f"github:{gh_repo}" if gh_repo else "github", f"releases/{tag}"
            before_sha = _one(self._tag_commits(gh_repo, tag, self.before)) if olds else None
            after_sha = _one(self._tag_commits(gh_repo, tag, self.after)) if news else None
            if olds == news:
                self._judge_assets(remote, key, b_assets.get(key, {}), a_assets.get(key, {}),
                                   news, before_sha, after_sha)
                continue
            if olds and news:
                self._add(remote, ref, "release-changed", before_sha, after_sha, UNGRANTED,
                          "release changed: " + _release_diff(olds, news))
                continue
            if olds:
                self._add(remote, ref, "release-deleted", before_sha, None, UNGRANTED,
                          f"release {tag} deleted")
                continue
            for rel in news:
                verdict, reason = self._judge_added_release(gh_repo, tag, json.loads(rel))
                self.release_verdicts[(gh_repo.lower(), tag)] = verdict
                self._add(remote, ref, "release-added", None, after_sha, verdict, reason)
            self._judge_assets(remote, key, {}, a_assets.get(key, {}), news, None, after_sha)
        return True

    def _judge_assets(self, remote: str, key: tuple[str, str], olds: Mapping[str, Any],
                      news: Mapping[str, Any], releases: Sequence[str], before_sha: str | None,
                      after_sha: str | None) -> None:
        """An asset added, replaced or deleted is a change of its own: covered only on a granted
        release-please release and uploaded by a release bot."""
        gh_repo, tag = key
        for name in sorted(set(olds) | set(news)):
            old, new = olds.get(name), news.get(name)
            if old == new:
                continue
            ref = f"releases/{tag}/assets/{name}"
            if new is None:
                self._add(remote, ref, "asset-deleted", before_sha, after_sha, UNGRANTED,
                          f"asset {name} of release {tag} deleted")
                continue
            kind = "asset-added" if old is None else "asset-replaced"
            what = f"asset {name} of release {tag} {kind.removeprefix('asset-')}"
            uploader = new.get("uploader")
            owner = self._release_please_release(gh_repo, tag, releases)
            if owner is None:
                self._add(remote, ref, kind, before_sha, after_sha, UNGRANTED,
                          f"{what} by {uploader}: not a granted release-please release")
            elif not is_release_bot(self.charter, uploader):
                self._add(remote, ref, kind, before_sha, after_sha, UNGRANTED,
                          f"{what} by {uploader}, not by "
                          f"{' or '.join(release_bots(self.charter))}")
            else:
                self._add(remote, ref, kind, before_sha, after_sha, RELEASE_PLEASE,
                          f"{what} by {uploader} on {owner}")

    def _release_please_release(self, gh_repo: str, tag: str,
                                releases: Sequence[str]) -> str | None:
        """How the release is a granted release-please release (None when it is not): added in
        this run and judged RELEASE_PLEASE, or there before, by a release bot, with the
        charter granting release-please for its repository."""
        if self.release_verdicts.get((gh_repo.lower(), tag)) == RELEASE_PLEASE:
            return f"release {tag}, judged RELEASE_PLEASE"
        if not grants_release_please(self.charter, gh_repo):
            return None
        authors = {json.loads(r).get("author") for r in releases}
        if releases and all(is_release_bot(self.charter, a) for a in authors):
            return f"release {tag} by {', '.join(sorted(str(a) for a in authors))} (granted)"
        return None

    def _judge_added_release(self, gh_repo: str, tag: str,
                             rel: Mapping[str, Any]) -> tuple[str, str]:
        author = rel.get("author")
        if not grants_release_please(self.charter, gh_repo):
            return UNGRANTED, (f"release {tag} by {author}: the charter grants no release-please "
                               f"for {gh_repo or 'this repository'}")
        if not is_release_bot(self.charter, author):
            return UNGRANTED, (f"release {tag} made by {author}, not by "
                               f"{' or '.join(release_bots(self.charter))}")
        if rel.get("draft") is not False:
            return UNGRANTED, f"release {tag} by {author} is a draft, not a release yet"
        targets = self._tag_commits(gh_repo, tag, self.after)
        if not targets:
            return UNGRANTED, f"release {tag} by {author}: its tag is on no remote of {gh_repo}"
        judged = sorted((self.commit_verdicts.get(t), t) for t in targets
                        if self.commit_verdicts.get(t) in (RELEASE_PLEASE, PUSH_LOGGED))
        if judged and len(judged) == len(targets):
            return RELEASE_PLEASE, (f"release {tag} by {author} (granted for {gh_repo}); its tag "
                                    f"is on {short(judged[0][1])}, judged {judged[0][0]}")
        return UNGRANTED, (f"release {tag} by {author}: its tag is on "
                           f"{', '.join(short(t) for t in sorted(targets))}, a commit this audit "
                           "judged neither RELEASE_PLEASE nor PUSH_LOGGED")

    def _release_tag(self, tag_ref: str, value: str | None, releases_ok: bool,
                     remote_repos: Sequence[str] | None) -> tuple[str, str] | None:
        """RELEASE_PLEASE for an added tag owned by a granted release-please release (UNVERIFIED
        when the releases could not be read and one might have owned it); None otherwise.

        A remote tag belongs to the release when the remote names the release's repository; a
        local tag when it holds the same object as that repository's remote tag."""
        tag = tag_ref.removeprefix("refs/tags/")
        if not releases_ok:
            part = self.after.get("releases", {})
            candidates = (list(remote_repos) if remote_repos is not None
                          else self._release_repos(part))
            if any(grants_release_please(self.charter, g) for g in candidates):
                return UNVERIFIED, ("may belong to a release-please release, but the releases "
                                    "could not be read")
            return None
        for (gh_repo, rel_tag), verdict in sorted(self.release_verdicts.items()):
            if rel_tag != tag or verdict != RELEASE_PLEASE:
                continue
            if remote_repos is not None:
                owned = gh_repo in [g.lower() for g in remote_repos]
            else:
                owned = value in self._tag_values(gh_repo, tag)
            if owned:
                return RELEASE_PLEASE, f"tag of release {tag} of {gh_repo} (RELEASE_PLEASE)"
        return None

    def _tag_values(self, gh_repo: str, tag: str) -> set[str]:
        values: set[str] = set()
        for part in self.after.get("remotes", {}).values():
            if part.get("available") and gh_repo.lower() in [
                    g.lower() for g in self._github_repos(part)]:
                sha = part.get("refs", {}).get(f"refs/tags/{tag}")
                if isinstance(sha, str):
                    values.add(sha)
        return values

    def _judge_remote_tag(self, name: str, a_part: Mapping[str, Any], change: Change,
                          releases_ok: bool) -> None:
        self._judge_tag(name, change, self.remote_index(name, a_part), releases_ok,
                        self._github_repos(a_part))

    def _judge_tag(self, remote: str, change: Change, entries: EntryIndex,
                   releases_ok: bool, remote_repos: Sequence[str] | None) -> None:
        kind = f"tag-{change.change}"
        logged = chain(entries.of_ref(change.ref), change.before, change.after)
        if logged is not None:
            self._add(remote, change.ref, kind, change.before, change.after, PUSH_LOGGED,
                      f"logged (push-log line{'s' if len(logged) > 1 else ''} "
                      f"{lines(logged)})")
            return
        if change.before is None:
            release = self._release_tag(change.ref, change.after, releases_ok, remote_repos)
            if release is not None:
                self._add(remote, change.ref, kind, None, change.after, *release)
                return
            why = "a tag the log never saw, and no granted release-please release owns it"
        else:
            why = (f"tag {change.change}: a push the log never saw (a moved or deleted tag is "
                   "never release-please's)")
        self._add(remote, change.ref, kind, change.before, change.after, UNGRANTED, why)

    def _judge_local_tags(self, releases_ok: bool) -> None:
        b, a = self.before.get("tags", {}), self.after.get("tags", {})
        down = [f"{side}: {p.get('reason', 'unavailable')}"
                for side, p in (("before", b), ("after", a)) if not p.get("available")]
        if down:
            self._add(LOCAL, "refs/tags", "tags-unavailable", None, None, UNVERIFIED,
                      "; ".join(down))
            return
        for change in ref_changes(b.get("tags", {}), a.get("tags", {})):
            self._judge_tag(LOCAL, change, self.local_index(), releases_ok, None)



def _releases_by_key(part: Mapping[str, Any], default_repo: str
                     ) -> dict[tuple[str, str], list[str]]:
    """Releases grouped by (GitHub repo, tag), each as canonical JSON for comparison (without
    their assets, which are judged one by one)."""
    out: dict[tuple[str, str], list[str]] = {}
    for rel in part.get("releases", []):
        repo = rel.get("repo") or default_repo
        key = (str(repo).lower(), str(rel.get("tag_name")))
        bare = {k: v for k, v in rel.items() if k != "assets"}
        out.setdefault(key, []).append(json.dumps(bare, sort_keys=True))
    return {k: sorted(v) for k, v in out.items()}


def _assets_by_key(part: Mapping[str, Any], default_repo: str
                   ) -> dict[tuple[str, str], dict[str, Any]]:
    """Each release's assets by name, grouped like `_releases_by_key`."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rel in part.get("releases", []):
        repo = rel.get("repo") or default_repo
        key = (str(repo).lower(), str(rel.get("tag_name")))
        for asset in rel.get("assets") or []:
            if isinstance(asset, dict):
                out.setdefault(key, {})[str(asset.get("name"))] = asset
    return out


def _release_diff(olds: Sequence[str], news: Sequence[str]) -> str:
    if len(olds) != 1 or len(news) != 1:
        return f"{len(olds)} release(s) with this tag before, {len(news)} after"
    old, new = json.loads(olds[0]), json.loads(news[0])
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return ", ".join(f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys)


def _read_from(part: Mapping[str, Any]) -> list[str] | None:
    """The GitHub repositories a snapshot read releases from, as it recorded them (None for
    the contract's bare form, which records none)."""
    if "github_repos" not in part:
        return None
    return sorted({g.lower() for g in part["github_repos"]})


def _one(values: set[str]) -> str | None:
    return sorted(values)[0] if values else None
