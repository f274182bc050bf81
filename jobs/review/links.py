"""Where a commit, tag or release of a repository can be seen: its page on GitHub (or GitHub
Enterprise, the host of $GITHUB_API_URL) when the remote is there, else nowhere (the sha alone)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from jobs.core.urls import github_hosts, github_remote

_WEB_ALIASES = {"www.github.com": "github.com", "ssh.github.com": "github.com"}


@dataclass(frozen=True)
class Site:
    """A repository's home on a GitHub host: https://<host>/<owner>/<name>."""

    base: str

    def commit(self, sha: str) -> str:
        return f"{self.base}/commit/{quote(sha)}"

    def tree(self, ref: str) -> str:
        return f"{self.base}/tree/{quote(ref, safe='/')}"

    def release(self, tag: str) -> str:
        return f"{self.base}/releases/tag/{quote(tag, safe='/')}"

    def ref(self, ref: str) -> str:
        """A branch or tag page for a full ref name; anything else (refs/pull/…) is the repo."""
        for prefix in ("refs/heads/", "refs/tags/"):
            if ref.startswith(prefix):
                return self.tree(ref.removeprefix(prefix))
        if ref.startswith("releases/"):
            return self.release(ref.removeprefix("releases/"))
        return self.base


def site_for_url(url: str, env: Mapping[str, str] = os.environ) -> Site | None:
    hosts = github_hosts(env)
    found = github_remote(url, hosts)
    if found is None:
        return None
    host, owner_name = found
    host = _WEB_ALIASES.get(host.lower(), host.lower())
    if host.startswith("api.") and host[4:] in hosts:
        host = host[4:]
    return Site(f"https://{host}/{owner_name}")


def site_for_github_remote(remote: str, urls: Mapping[str, str],
                           env: Mapping[str, str] = os.environ) -> Site | None:
    """A release finding names its remote `github:<owner>/<name>`: the host is the one of the
    repository's remotes on GitHub, else github.com."""
    owner_name = remote.removeprefix("github:")
    if "/" not in owner_name:
        return None
    for url in urls.values():
        site = site_for_url(url, env)
        if site is not None:
            return Site(site.base.rsplit("/", 2)[0] + "/" + owner_name)
    return Site(f"https://github.com/{owner_name}")


class LocalSites:
    """The site of each verified repository, from its clone on this machine (one git process per
    repository, asked once); a clone that is not here has none."""

    def __init__(self, env: Mapping[str, str] = os.environ) -> None:
        self.env = env
        self._cache: dict[str, Site | None] = {}
        self._isolated = False

    def __call__(self, repo: str) -> Site | None:
        if repo not in self._cache:
            self._cache[repo] = self._look_up(repo)
        return self._cache[repo]

    def _look_up(self, repo: str) -> Site | None:
        root = Path(repo)
        if not (root / ".git").exists():
            return None
        from jobs.git import repo as git
        from jobs.process import exe

        if not self._isolated:
            exe.isolate_environment(os.environ)
            self._isolated = True
        urls = git.remote_urls(root)
        url = urls.get("origin") or next((urls[name] for name in sorted(urls)), None)
        return site_for_url(url, self.env) if url else None
