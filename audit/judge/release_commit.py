"""Is a commit shaped like a release-please release one, and whose release is it (SPEC Part 2,
rule 1's RELEASE_PLEASE): by content (`audit.judge.release_content`), granted by the charter,
and with a release by a release bot for every tag on it (none for a `-SNAPSHOT` bump)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.judge.base import JudgeBase
from audit.judge.release_content import Refused, release_content
from audit.judge.rules import paths_note
from audit.model import (
    RELEASE_PLEASE,
    UNGRANTED,
    UNVERIFIED,
    Commit,
    grants_release_please,
    is_release_bot,
    release_bots,
)
from audit.refs import PEELED
from audit.releases import is_release_subject

TAGS = "refs/tags/"


class ReleaseCommitJudge(JudgeBase):
    # Refuse a version's numbers lowered (stricter than SPEC's words: audit.judge.release_content)
    never_lower = True

    def _release_commit(self, commit: Commit, gh_repos: Sequence[str]
                        ) -> tuple[str, str] | None:
        """RELEASE_PLEASE, or why a commit shaped like a release is not one (naming the path or
        subject that refused it); None for a commit not so shaped."""
        if commit.subject is None or not is_release_subject(commit.subject):
            return None
        shaped = "is shaped like a release-please release, but"
        content = release_content(commit, sorted(self._tags_on(commit.sha)),
                                  never_lower=self.never_lower)
        if isinstance(content, Refused):
            return UNGRANTED, f"{shaped} {content.where}: {content.why}"
        granted = [g for g in gh_repos if grants_release_please(self.charter, g)]
        if not granted:
            where = ", ".join(gh_repos) if gh_repos else "a remote not on GitHub"
            return UNGRANTED, f"{shaped} the charter grants no release-please for {where}"
        part = self.after.get("releases", {})
        if not part.get("available"):
            return UNVERIFIED, (f"{shaped} the releases could not be read: "
                                f"{part.get('reason', 'unavailable')}")
        tags = sorted(self._tags_on(commit.sha, granted))
        changes = paths_note(commit.paths)
        if not tags:
            if content.snapshot_bump:
                return RELEASE_PLEASE, (f"is a -SNAPSHOT bump, which needs no release "
                                        f"(granted for {', '.join(granted)}); changes {changes}")
            return UNGRANTED, (f"{shaped} no tag is on it, so no release by "
                               f"{' or '.join(release_bots(self.charter))} can be its own")
        made: list[str] = []
        for tag in tags:
            rel = self._bot_release(tag, part, granted)
            if rel is None:
                return UNGRANTED, (f"{shaped} tag {tag} on it has no release by "
                                   f"{' or '.join(release_bots(self.charter))}")
            made.append(f"{tag} by {rel.get('author')}")
        return RELEASE_PLEASE, (f"is release {', '.join(made)} (granted for "
                                f"{', '.join(granted)}); changes {changes}")

    def _bot_release(self, tag: str, part: Mapping[str, Any], granted: Sequence[str]
                     ) -> Mapping[str, Any] | None:
        """The published release of `tag` by a release bot in a granted repository, if any (a
        draft is no release yet)."""
        wanted = [g.lower() for g in granted]
        for rel in part.get("releases", []):
            rel_repo = self._release_repo(rel, part)
            if rel_repo is None or rel_repo.lower() not in wanted:
                continue
            if rel.get("tag_name") == tag and is_release_bot(self.charter, rel.get("author")) \
                    and rel.get("draft") is False:
                return rel  # type: ignore[no-any-return]
        return None

    def _tags_on(self, sha: str, gh_repos: Sequence[str] | None = None) -> set[str]:
        """The names of the tags on this commit in the after snapshot: on every remote, or on
        the remotes naming one of `gh_repos`."""
        wanted = None if gh_repos is None else {g.lower() for g in gh_repos}
        found: set[str] = set()
        for part in self.after.get("remotes", {}).values():
            if not part.get("available"):
                continue
            if wanted is not None and not wanted.intersection(
                    g.lower() for g in self._github_repos(part)):
                continue
            found.update(self._tag_index(part).get(sha, ()))
        return found

    def _tag_index(self, part: Mapping[str, Any]) -> dict[str, set[str]]:
        """A remote's tags by the commit each names (its peeled value where the remote gave
        one), worked out once per remote."""
        key = id(part)
        found = self.tag_indexes.get(key)
        if found is None:
            found = {}
            refs: Mapping[str, str] = part.get("refs", {})
            for ref, value in refs.items():
                if ref.startswith(TAGS) and not ref.endswith(PEELED):
                    target = refs.get(ref + PEELED, value)
                    found.setdefault(target, set()).add(ref.removeprefix(TAGS))
            self.tag_indexes[key] = found
        return found

    def _release_repo(self, rel: Mapping[str, Any], part: Mapping[str, Any]) -> str | None:
        value = rel.get("repo") or next(iter(self._release_repos(part)), None)
        return value if isinstance(value, str) else None

    def _release_repos(self, part: Mapping[str, Any]) -> list[str]:
        """The GitHub repositories a releases part is about, primary first: as the snapshot
        recorded them, else (a snapshot in the contract's bare form) the ones the remotes'
        configured URLs name, origin first, as the contract says."""
        named = part.get("github_repos") or [part.get("github_repo")]
        recorded = [g for g in named if isinstance(g, str) and g]
        if recorded:
            return recorded
        found: list[str] = []
        for snap in (self.after, self.before):
            remotes: Mapping[str, Any] = snap.get("remotes", {})
            for name in sorted(remotes, key=lambda n: (n != "origin", n)):
                for g in self._github_repos(remotes[name]):
                    if g.lower() not in [f.lower() for f in found]:
                        found.append(g)
        return found
