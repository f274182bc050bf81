"""Remote URLs as both programs read them: which are scp-like, which name a GitHub repository,
what identity a repository has across clones, and credentials never reaching evidence (user-info
is redacted in snapshots, reports, ledger URLs and logs).

Identity comparisons (which remote a push-log entry names, whether a remote moved) use the
redacted form on both sides, so a token that changes between the snapshots is not a "new" URL
and a token in the push log matches the remote it names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

GITHUB_HOSTS = ("github.com", "www.github.com", "ssh.github.com")
_PART = re.compile(r"^[A-Za-z0-9._-]+$")
REDACTED = "***"
# scheme://user[:password]@host...; '@' ends the user-info. A password may hold a '/' its owner
# did not percent-encode (SQLAlchemy then cannot parse the URL at all), but `host:8080/@x` is a
# port and a path: a colon followed by digits and a slash is never a password.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)"
                       r"(?P<info>[^/@\s:]+:(?!\d*/)[^@\s]*|[^/@\s]*)@")


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
    found = _github_host_and_path(url, extra_hosts)
    if found is None:
        return None
    host, path = found
    segments = [s for s in path.strip("/").split("/") if s]
    if len(segments) != 2:
        return None
    owner, name = segments[0], segments[1].removesuffix(".git")
    if not name or not _PART.match(owner) or not _PART.match(name) \
            or {owner, name} & {".", ".."}:
        return None
    return host.lower(), f"{owner}/{name}"


def on_github_host(url: str, extra_hosts: Iterable[str] = ()) -> bool:
    """Whether `url` reaches a GitHub host at all, whether or not it names a repository as
    `github_remote` reads one (`https://github.com/x/../o/n`, `https://github.com./o/n` do):
    such a URL must never count as "not on GitHub"."""
    return _github_host_and_path(url, extra_hosts, trailing_dot=True) is not None


def _github_host_and_path(url: str, extra_hosts: Iterable[str], *,
                          trailing_dot: bool = False) -> tuple[str, str] | None:
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
        scp = scp_parts(url)
        if scp is None:
            return None
        _, host, path = scp
    host = (host or "").lower()
    if trailing_dot:
        host = host.rstrip(".")
    if not host or host not in hosts:
        return None
    return host, path


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


def scp_parts(url: str) -> tuple[str | None, str, str] | None:
    """(user, host, path) of an scp-like `[user@]host:path`, as git tells one from a local path:
    a colon with no slash before it (`host:/srv/x` is ssh too; `./a:b` and `/a:b` are paths). A
    host in brackets (`[::1]:path`) loses them. None for a URL with a scheme or a local path."""
    if "://" in url:
        return None
    if url.startswith("["):
        close = url.find("]:")
        if close < 0:
            return None
        user, host, path = None, url[1:close], url[close + 2:]
    else:
        colon = url.find(":")
        if colon <= 0 or 0 <= url.find("/") < colon:
            return None
        userhost, path = url[:colon], url[colon + 1:]
        user, _, host = userhost.rpartition("@")
        user = user or None
    return (user, host, path) if host else None


_LEGACY_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
_DEFAULT_PORTS = {**_LEGACY_PORTS, "git+ssh": 22, "ssh+git": 22}


def normalise_remote(url: str, base: Path) -> str:
    """A repository's identity across clones: one spelling for every way of naming it, without
    credentials.

    `git@github.com:Owner/App.git`, `ssh://git@ssh.github.com:443/owner/app` and
    `https://user:token@GitHub.com/owner/app.git/` all become `github.com/owner/app` (GitHub's
    owner and name are case-insensitive); a local path or `file://` URL (percent-decoded, as git
    reads it) becomes the absolute path (relative ones are relative to `base`).
    """
    return canonical_identity(_identity(url, base, _DEFAULT_PORTS, unquote))


def canonical_identity(identity: str) -> str:
    """An identity as this version spells it, from one an earlier version recorded: a GitHub
    repository is `github.com/<owner>/<name>` in lower case, whichever GitHub host and port named
    it (www., ssh.github.com:443). Anything else is returned as it is."""
    host, sep, path = identity.partition("/")
    if not sep or not host:
        return identity
    name = host.rsplit(":", 1)[0] if ":" in host and not host.endswith("]") else host
    if name.lower() in GITHUB_HOSTS:
        return "github.com/" + path.lower()
    return identity


def legacy_identity(url: str, base: Path) -> str:
    """The identity versions before 2026-12 gave the remote (GitHub's case kept, every GitHub host
    its own, `git+ssh://host:22` not `host`, `file://` paths not percent-decoded): claims those
    versions took are keyed by it (docs/ledger.md, "Upgrading")."""
    return _identity(url, base, _LEGACY_PORTS, lambda path: path)


def _identity(url: str, base: Path, default_ports: Mapping[str, int],
              file_path: Callable[[str], str]) -> str:
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file":
            # git reads `file:///a%20b` as the folder `/a b`.
            return _local(Path(file_path(parts.path)), base)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is not None and port != default_ports.get(parts.scheme):
            host = f"{host}:{port}"
        return host + "/" + _path_part(parts.path)
    scp = scp_parts(url)
    if scp is not None:
        return scp[1].lower() + "/" + _path_part(scp[2])
    return _local(Path(url), base)


def _path_part(path: str) -> str:
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return re.sub(r"/+", "/", path)


def _local(path: Path, base: Path) -> str:
    full = path if path.is_absolute() else base / path
    return str(full.resolve()).removesuffix("/.git").removesuffix(".git")
