"""Which remotes live on GitHub, and reading a repository's releases through PyGithub."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from audit.evidence.git import seconds_from_env
from jobs.core.urls import (
    DEFAULT_API_URL,
    GITHUB_HOSTS,
    api_base_url,
    github_hosts,
    github_remote,
    on_github_host,
    redact_url,
)

if TYPE_CHECKING:
    from github import GithubException


def find_token(env: Mapping[str, str] = os.environ) -> str | None:
    """$GITHUB_TOKEN, $GH_TOKEN, else what `gh auth token` prints (if gh is installed)."""
    for key in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = env.get(key, "").strip()
        if value:
            return value
    gh = shutil.which("gh", path=env.get("PATH"))
    if gh is None:
        return None
    argv = [gh, "auth", "token"]
    api_host = (urlsplit(api_base_url(env)).hostname or "").lower()
    if api_host and api_host != "api.github.com":
        argv += ["--hostname", api_host]
    try:
        # A fixed argument vector, no shell.
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=10, env=dict(env),
            stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    token = done.stdout.strip()
    return token if done.returncode == 0 and token else None


DEFAULT_CAP = 60.0
CAP_ENV = "LOOP_PI_GITHUB_TIMEOUT"


def github_cap(env: Mapping[str, str] = os.environ) -> float:
    """Seconds one snapshot's GitHub calls may take together ($LOOP_PI_GITHUB_TIMEOUT, 60)."""
    return seconds_from_env(CAP_ENV, DEFAULT_CAP, env)


@dataclass
class Deadline:
    """The time one snapshot's GitHub calls share: a slow page, a trickling server, a retry or
    a rate limit all spend it, and nothing waits past it."""
    seconds: float
    ends: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())


def api_base_for(host: str, env: Mapping[str, str] = os.environ) -> str:
    """The REST API for a repository on `host`: github.com's own for github.com remotes, and
    $GITHUB_API_URL only for remotes on that Enterprise host."""
    if host.lower() in GITHUB_HOSTS:
        return DEFAULT_API_URL
    return api_base_url(env)


def unnamed_github_urls(urls: Sequence[str], env: Mapping[str, str] = os.environ) -> list[str]:
    """URLs that reach a GitHub host but name no repository as owner/name (`..` segments, a
    host spelled with its final dot, a path of three parts): redacted, for a reason."""
    hosts = github_hosts(env)
    return [redact_url(u) for u in urls
            if on_github_host(u, hosts) and github_remote(u, hosts) is None]


def unnamed_reason(urls: Sequence[str]) -> str:
    return (f"{', '.join(urls)} reaches a GitHub host but names no repository as owner/name; "
            "its releases and activity cannot be read")


def prepare() -> None:
    """Route library logs and import PyGithub before any deadline starts: the cap bounds the
    wait for GitHub, not our own start-up."""
    from audit.evidence.github_log import route_before_github
    route_before_github()
    import github  # noqa: F401


class UnusablePage(Exception):
    """A list page GitHub did not answer as one: a redirect, a body that is no JSON list, a
    `next` link outside the API or back to a page already read."""


_LINKS = {rel: re.compile(rf'<([^>]+)>\s*;\s*rel="{rel}"') for rel in ("next", "last")}


_PageKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass
class Pages:
    """What one list's pages have said so far: the pages read, and the last one announced."""
    seen: set[_PageKey] = field(default_factory=set)
    last: _PageKey | None = None


def get_page(requester: Any, url: str, params: Mapping[str, Any] | None, base: str,
             pages: Pages) -> tuple[dict[str, Any], list[Any], str | None]:
    """One page of a REST list through PyGithub's requester: (headers, items, next URL or None).

    Read raw, not through PyGithub's `PaginatedList`/`requestJsonAndCheck`: those take an empty
    body, `null`, a search-shaped object or a redirect's body for an empty page (a list cut
    short would then pass for the whole list), and follow a `next` link that loops until the
    deadline. Only a 200 whose body is a JSON list is a page; an error status raises PyGithub's
    own exception (rate limits, bad credentials, not found), anything else `UnusablePage`, and
    so does a list that ends (no `next` link) before the `last` page an earlier page named."""
    key = _page_key(url if "://" in url else base + url, params)
    if key in pages.seen:
        raise UnusablePage(f"a next page already read: {url[:200]}")
    pages.seen.add(key)
    status, headers, output = requester.requestJson(
        "GET", url, parameters=dict(params) if params else None)
    if status >= 400:
        try:
            data = json.loads(output) if output else None
        except ValueError:
            data = None
        raise requester.createException(status, headers, data if isinstance(data, dict) else {})
    if status != 200:
        where = next((v for k, v in (headers or {}).items() if k.lower() == "location"), "")
        raise UnusablePage(f"GitHub answered {status}, not a page"
                           + (f" (Location {str(where)[:200]})" if where else ""))
    if not output.strip():
        raise UnusablePage("the answer is not a list but an empty body")
    data = json.loads(output)  # a ValueError: malformed JSON
    if not isinstance(data, list):
        raise UnusablePage(f"the answer is not a list but {type(data).__name__}")
    following = _link(headers, base, "next")
    last = _link(headers, base, "last")
    if last is not None:
        pages.last = _page_key(last, None)
    if following is None and pages.last is not None and pages.last != key:
        raise UnusablePage(f"the list ended before the last page its Link header named "
                           f"({pages.last[0]}?{'&'.join('='.join(q) for q in pages.last[1])})")
    return headers, data, following


def _page_key(url: str, params: Mapping[str, Any] | None) -> _PageKey:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query), *((k, str(v)) for k, v in (params or {}).items())]
    return parts._replace(query="", fragment="").geturl(), tuple(sorted(query))


def _link(headers: Mapping[str, Any] | None, base: str, rel: str) -> str | None:
    link = next((v for k, v in dict(headers or {}).items() if k.lower() == "link"), "")
    found = _LINKS[rel].search(str(link or ""))
    if found is None:
        return None
    url = found.group(1)
    if not url.startswith(base + "/"):
        raise UnusablePage(f"a {rel} page outside {base}: {url[:200]}")
    return url


def read_releases(owner_name: str, *, token: str | None, base_url: str | None,
                  timeout: float = DEFAULT_CAP, deadline: Deadline | None = None
                  ) -> dict[str, Any]:
    """Every release of `owner_name` (all pages) with its assets, or why they could not be read.

    Any failure at all makes the part unavailable: a half-read list of releases must never pass
    for the whole list. The reading runs in a daemon thread that is abandoned when `deadline`
    (else `timeout` seconds from now) passes: a server that trickles a byte every few seconds
    never trips a per-read socket timeout, and must not hold the snapshot.
    """
    if not token:
        return {"available": False, "reason": "no GitHub token: set GITHUB_TOKEN or GH_TOKEN, "
                "or log in with `gh auth login`"}
    prepare()
    deadline = deadline or Deadline.after(timeout)
    base = (base_url or DEFAULT_API_URL).rstrip("/")
    where = f"releases of {owner_name} from {base}"
    late = _unavailable(f"GitHub did not answer within {deadline.seconds:g}s reading {where}")
    if deadline.remaining() <= 0:
        return late
    result: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: result.append(_read(owner_name, token, base, where, deadline)),
        name=f"github-releases-{owner_name}", daemon=True)
    worker.start()
    worker.join(deadline.remaining())
    return result[0] if result else late


def _read(owner_name: str, token: str, base: str, where: str,
          deadline: Deadline) -> dict[str, Any]:
    # Imported here: PyGithub costs a fifth of a second, and most audits of local remotes
    # never need it.
    import requests
    from github import Auth, Github, GithubException
    from github.GithubException import (
        BadCredentialsException,
        IncompletableObject,
        RateLimitExceededException,
        UnknownObjectException,
    )
    from github.GitRelease import GitRelease
    from urllib3.util.retry import Retry

    # A retry for a flaky gateway only, and never the hour a Retry-After asks for: a rate limit
    # is reported at once (the deadline would cut any wait short anyway).
    retry = Retry(total=2, connect=2, read=False, backoff_factor=0.5,
                  status_forcelist=[502, 503, 504], respect_retry_after_header=False,
                  allowed_methods=["GET"], raise_on_status=False)
    client = Github(auth=Auth.Token(token), base_url=base,
                    timeout=max(1, int(deadline.remaining())), retry=retry, per_page=100,
                    seconds_between_requests=None, lazy=True, user_agent="loop-pi-audit")
    try:
        releases: list[dict[str, Any]] = []
        pages = Pages()
        url: str | None = f"/repos/{owner_name}/releases"
        params: dict[str, Any] | None = {"per_page": 100}
        while url is not None:
            headers, page, url = get_page(client.requester, url, params, base, pages)
            params = None  # the next link carries them
            for item in page:
                if not isinstance(item, dict):
                    raise _BadRelease("an item is not an object")
                releases.append(_release_json(GitRelease(client.requester, headers, item)))
    except UnusablePage as exc:
        return _unavailable(f"GitHub sent an unusable page of releases ({exc}) reading {where}")
    except BadCredentialsException as exc:
        return _unavailable(f"GitHub refused the token ({exc.status} {_message(exc)}) "
                            f"reading {where}")
    except RateLimitExceededException as exc:
        return _unavailable(f"GitHub rate limit exhausted ({exc.status} {_message(exc)}"
                            f"{_reset_note(exc)}) reading {where}")
    except (_BadRelease, IncompletableObject) as exc:
        return _unavailable(f"GitHub sent an unusable release object ({exc}) reading {where}")
    except UnknownObjectException as exc:
        return _unavailable(f"GitHub says not found ({exc.status}): {owner_name} does not exist "
                            f"or the token cannot see it; reading {where}")
    except GithubException as exc:
        if rate_limited(exc):
            return _unavailable(f"GitHub rate limit exhausted ({exc.status}"
                                f"{_reset_note(exc)}) reading {where}")
        return _unavailable(f"GitHub answered {exc.status} {_message(exc)} reading {where}")
    except requests.exceptions.Timeout:
        return _unavailable(f"GitHub did not answer within {deadline.seconds:g}s reading {where}")
    except requests.exceptions.RetryError as exc:
        return _unavailable(f"GitHub kept failing after retries ({exc}) reading {where}")
    except requests.exceptions.RequestException as exc:
        return _unavailable(f"cannot reach GitHub ({type(exc).__name__}: {exc}) reading {where}")
    except ValueError as exc:
        return _unavailable(f"GitHub sent malformed JSON ({exc}) reading {where}")
    except Exception as exc:  # evidence fails closed on anything unexpected
        return _unavailable(f"cannot read {where}: {type(exc).__name__}: {exc}")
    finally:
        client.close()
    # Pages are cut by offset: a release made while they are read pushes one from the end of
    # a page onto the next, so the same release (same id, same fields) can come twice.
    releases = list({json.dumps(r, sort_keys=True): r for r in releases}.values())
    releases.sort(key=lambda r: (str(r["tag_name"]), str(r["created_at"] or ""), r["id"] or 0))
    return {"available": True, "releases": releases}


class _BadRelease(Exception):
    """A release object without the fields the audit judges by."""


def iso_z(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _release_json(release: Any) -> dict[str, Any]:
    author = release.author
    tag_name, draft, prerelease = release.tag_name, release.draft, release.prerelease
    if not isinstance(tag_name, str) or not isinstance(draft, bool) \
            or not isinstance(prerelease, bool):
        raise _BadRelease(f"release {release.id!r} lacks tag_name, draft or prerelease")
    return {
        "id": release.id,
        "tag_name": tag_name,
        "name": release.name,
        "draft": draft,
        "prerelease": prerelease,
        "author": author.login if author is not None else None,
        "target_commitish": release.target_commitish,
        "created_at": iso_z(release.created_at),
        "published_at": iso_z(release.published_at),
        "assets": _assets_json(release),
        # The notes, as a digest: notes rewritten during the run make a changed release.
        "body_sha256": _body_sha256(release),
    }


def _body_sha256(release: Any) -> str:
    """The sha256 of the release's notes as the list page sent them (read from the page's data:
    PyGithub would fetch the release again for a missing attribute). No notes hash as empty."""
    raw = getattr(release, "_rawData", None)
    body = raw.get("body") if isinstance(raw, dict) else None
    if body is not None and not isinstance(body, str):
        raise _BadRelease(f"release {release.id!r} has notes that are not text")
    return hashlib.sha256((body or "").encode("utf-8", "surrogatepass")).hexdigest()


def _assets_json(release: Any) -> list[dict[str, Any]]:
    """A release's assets as the list page sent them: name, size, digest (sha256, where GitHub
    records one), updated time and uploader. Read from the page's own data: touching a missing
    attribute through PyGithub would cost a request per asset."""
    raw = getattr(release, "_rawData", None)
    assets = raw.get("assets") if isinstance(raw, dict) else None
    if not isinstance(assets, list):
        raise _BadRelease(f"release {release.id!r} lacks its assets list")
    out: list[dict[str, Any]] = []
    for asset in assets:
        if not isinstance(asset, dict) or not isinstance(asset.get("name"), str):
            raise _BadRelease(f"release {release.id!r} has an asset without a name")
        uploader = asset.get("uploader")
        out.append({
            "id": asset.get("id"),
            "name": asset["name"],
            "size": asset.get("size"),
            "digest": asset.get("digest"),
            "updated_at": asset.get("updated_at"),
            "uploader": uploader.get("login") if isinstance(uploader, dict) else None,
        })
    return sorted(out, key=lambda a: (a["name"], str(a["id"])))


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return exc.message or ""


def rate_limited(exc: GithubException) -> bool:
    """A rate limit, primary or secondary, however GitHub words it."""
    from github.GithubException import RateLimitExceededException
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    return isinstance(exc, RateLimitExceededException) or exc.status == 429 or (
        exc.status == 403 and (headers.get("x-ratelimit-remaining") == "0"
                               or "retry-after" in headers))


def rate_limit_reason(exc: GithubException) -> str:
    return f"GitHub rate limit exhausted ({exc.status}{_reset_note(exc)})"


def _reset_note(exc: GithubException) -> str:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    notes = []
    reset = headers.get("x-ratelimit-reset", "")
    if reset.isdigit():
        notes.append(f"resets at {iso_z(datetime.fromtimestamp(int(reset), UTC))}")
    retry_after = headers.get("retry-after", "")
    if retry_after:
        notes.append(f"Retry-After {retry_after[:20]}, not waited")
    return "".join(f"; {n}" for n in notes)
