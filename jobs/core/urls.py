"""Credentials never reach evidence: user-info in URLs is redacted in snapshots, reports and logs.

Identity comparisons (which remote a push-log entry names, whether a remote moved) use the
redacted form on both sides, so a token that changes between the snapshots is not a "new" URL
and a token in the push log matches the remote it names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

GITHUB_HOSTS = ("github.com", "www.github.com", "ssh.github.com")
_SCP_LIKE = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^/:]+):(?P<path>(?!/).*)$")
_PART = re.compile(r"^[A-Za-z0-9._-]+$")
REDACTED = "***"
# scheme://user[:password]@host...; the user-info may hold anything but '/', '@' ends it.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s]*)@")


def redact_url(url: str) -> str:
    """`https://x-access-token:TOKEN@github.com/o/n` → `https://***@github.com/o/n`. A plain
    `ssh://git@host/...` user name is kept: it is no secret and names the account."""
    return _USERINFO.sub(_replace, url)


def redact_text(text: str) -> str:
    """Every URL's secret user-info in free text (git's error messages quote URLs)."""
    return _USERINFO.sub(_replace, text)


def _replace(match: re.Match[str]) -> str:
    info = match.group("info")
    if ":" not in info and not _looks_secret(info):
        return match.group(0)
    return f"{match.group('scheme')}{REDACTED}@"


def _looks_secret(user: str) -> bool:
    # A bare token as the user name (`https://ghp_xxx@github.com/...`) is still a token.
    return len(user) >= 20 or user.startswith(("ghp_", "gho_", "ghs_", "ghu_", "github_pat_"))


def github_repo_from_url(url: str, extra_hosts: Iterable[str] = ()) -> str | None:
    """`owner/name` when `url` names a repository on a GitHub host, else None."""
    found = github_remote(url, extra_hosts)
    return found[1] if found is not None else None


def github_remote(url: str, extra_hosts: Iterable[str] = ()) -> tuple[str, str] | None:
    """(host, `owner/name`) when `url` names a repository on a GitHub host, else None.

    Understands https/http/git URLs, `ssh://[user@]host[:port]/o/n(.git)` and scp-like
    `[user@]host:o/n(.git)`. Local paths and file:// URLs name no host and give None.
    """
    hosts = {h.lower() for h in (*GITHUB_HOSTS, *extra_hosts)}
    url = url.strip()
    host: str | None
    if "://" in url:
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            return None
        if parts.scheme.lower() not in ("https", "http", "ssh", "git", "git+ssh", "ssh+git"):
            return None
        path = parts.path
    else:
        match = _SCP_LIKE.match(url)
        if match is None:
            return None
        host, path = match.group("host"), match.group("path")
    if not host or host.lower() not in hosts:
        return None
    segments = [s for s in path.strip("/").split("/") if s]
    if len(segments) != 2:
        return None
    owner, name = segments[0], segments[1].removesuffix(".git")
    if not name or not _PART.match(owner) or not _PART.match(name):
        return None
    return host.lower(), f"{owner}/{name}"


def redacted_urls(value: Any) -> Any:
    """URLs as compared: redacted on both sides (a snapshot written before redaction, or a
    token rotated during the run, is not another remote). A string or a list of them."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, list):
        return [redact_url(v) if isinstance(v, str) else v for v in value]
    return value


DEFAULT_API_URL = "https://api.github.com"


def api_base_url(env: Mapping[str, str] = os.environ) -> str:
    """The REST API root: $GITHUB_API_URL (GitHub Enterprise, a test server), else github.com's."""
    return (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")


def github_hosts(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Hosts whose remotes are "on GitHub": github.com and the host of $GITHUB_API_URL."""
    hosts = list(GITHUB_HOSTS)
    api = env.get("GITHUB_API_URL")
    if api:
        host = (urlsplit(api).hostname or "").lower()
        if host and host not in ("api.github.com",):
            hosts.append(host)
            # GHE.com data residency serves the API from api.<subdomain>.ghe.com
            if host.startswith("api."):
                hosts.append(host[4:])
    return tuple(hosts)
