"""Which remotes live on GitHub, and reading a repository's releases through PyGithub."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from audit.urls import GITHUB_HOSTS

if TYPE_CHECKING:
    from github import GithubException

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


def read_releases(owner_name: str, *, token: str | None, base_url: str | None,
                  timeout: float = 10) -> dict[str, Any]:
    """Every release of `owner_name` (all pages), or why they could not be read.

    Any failure at all makes the part unavailable: a half-read list of releases must never pass
    for the whole list.
    """
    if not token:
        return {"available": False, "reason": "no GitHub token: set GITHUB_TOKEN or GH_TOKEN, "
                "or log in with `gh auth login`"}
    # Imported here: PyGithub costs a fifth of a second, and most audits of local remotes
    # never need it.
    import requests
    from github import Auth, Github, GithubException, GithubRetry
    from github.GithubException import (
        BadCredentialsException,
        IncompletableObject,
        RateLimitExceededException,
        UnknownObjectException,
    )

    base = (base_url or DEFAULT_API_URL).rstrip("/")
    # Bounded: a retry for a flaky gateway, never the hour-long sleep for a rate-limit reset.
    retry = GithubRetry(total=2, connect=2, read=False, backoff_factor=0.5,
                        status_forcelist=[502, 503, 504], secondary_rate_wait=5,
                        max_rate_limit_wait=5)
    client = Github(auth=Auth.Token(token), base_url=base, timeout=max(1, round(timeout)),
                    retry=retry, per_page=100, seconds_between_requests=None, lazy=True,
                    user_agent="loop-pi-audit")
    where = f"releases of {owner_name} from {base}"
    try:
        repo = client.get_repo(owner_name)
        releases = [_release_json(r) for r in repo.get_releases()]
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
        if exc.status == 403 and (exc.headers or {}).get("x-ratelimit-remaining") == "0":
            return _unavailable(f"GitHub rate limit exhausted ({exc.status}"
                                f"{_reset_note(exc)}) reading {where}")
        return _unavailable(f"GitHub answered {exc.status} {_message(exc)} reading {where}")
    except requests.exceptions.Timeout:
        return _unavailable(f"GitHub did not answer within {timeout:g}s reading {where}")
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
    }


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return exc.message or ""


def _reset_note(exc: GithubException) -> str:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    reset = headers.get("x-ratelimit-reset", "")
    if reset.isdigit():
        return f"; resets at {iso_z(datetime.fromtimestamp(int(reset), UTC))}"
    return ""
