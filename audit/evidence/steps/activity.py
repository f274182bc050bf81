"""Every step a GitHub repository recorded since the arm: `GET /repos/{owner}/{repo}/activity`
(pushes, force pushes, branch creations and deletions, merges; branches only, no tags), newest
first, paged through the `Link` header back to the arm time.

PyGithub has no wrapper for it: it is called through the client's own requester, so the token,
base URL, timeouts and retries are the ones the releases are read with. Any failure makes the
part unavailable (no permission, a server without the API, a page cut short): a half-read
history must never pass for the whole one.
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime
from typing import Any

from audit.evidence.github import (
    Deadline,
    Pages,
    UnusablePage,
    get_page,
    prepare,
    rate_limit_reason,
    rate_limited,
)
from jobs.core.urls import DEFAULT_API_URL

_SHA = re.compile(r"^[0-9a-f]{40}$")
PER_PAGE = 100
# Pages are read until the arm time is passed; a history longer than this many pages since the
# arm is not read to its end, and is reported unavailable rather than judged in part.
MAX_PAGES = 200


class _Unusable(Exception):
    """An activity object without what the audit judges by."""


def read_activity(owner_name: str, *, token: str | None, base_url: str | None, since: str,
                  deadline: Deadline) -> dict[str, Any]:
    """`{"available": true, "steps": [...]}` oldest first, each step `{ref, old, new, at, actor,
    kind}` at or after `since` (ISO, whole seconds); or `{"available": false, "reason"}`."""
    if not token:
        return {"available": False, "reason": "no GitHub token: set GITHUB_TOKEN or GH_TOKEN, "
                "or log in with `gh auth login`"}
    prepare()
    base = (base_url or DEFAULT_API_URL).rstrip("/")
    where = f"the activity of {owner_name} from {base}"
    late = {"available": False,
            "reason": f"GitHub did not answer within {deadline.seconds:g}s reading {where}"}
    if deadline.remaining() <= 0:
        return late
    result: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: result.append(_read(owner_name, token, base, since, where, deadline)),
        name=f"github-activity-{owner_name}", daemon=True)
    worker.start()
    worker.join(deadline.remaining())
    return result[0] if result else late


def _read(owner_name: str, token: str, base: str, since: str, where: str,
          deadline: Deadline) -> dict[str, Any]:
    import requests
    from github import Auth, Github, GithubException
    from urllib3.util.retry import Retry

    retry = Retry(total=2, connect=2, read=False, backoff_factor=0.5,
                  status_forcelist=[502, 503, 504], respect_retry_after_header=False,
                  allowed_methods=["GET"], raise_on_status=False)
    client = Github(auth=Auth.Token(token), base_url=base,
                    timeout=max(1, int(deadline.remaining())), retry=retry, per_page=PER_PAGE,
                    seconds_between_requests=None, lazy=True, user_agent="loop-pi-audit")
    try:
        steps = _pages(client, owner_name, base, since)
    except GithubException as exc:
        if rate_limited(exc):
            return {"available": False, "reason": f"{rate_limit_reason(exc)} reading {where}"}
        why = {404: "the server has no activity API or the token cannot see it",
               403: "the token may not read the repository's activity"}.get(exc.status, "")
        return {"available": False, "reason": f"GitHub answered {exc.status}"
                + (f" ({why})" if why else "") + f" reading {where}"}
    except UnusablePage as exc:
        return {"available": False,
                "reason": f"GitHub sent an unusable page of activity ({exc}) reading {where}"}
    except _Unusable as exc:
        return {"available": False,
                "reason": f"GitHub sent an unusable activity object ({exc}) reading {where}"}
    except requests.exceptions.RequestException as exc:
        return {"available": False, "reason": f"cannot reach GitHub ({type(exc).__name__}: "
                f"{exc}) reading {where}"}
    except Exception as exc:  # evidence fails closed on anything unexpected
        return {"available": False, "reason": f"cannot read {where}: {type(exc).__name__}: "
                f"{exc}"}
    finally:
        client.close()
    return {"available": True, "steps": steps}


def _pages(client: Any, owner_name: str, base: str, since: str) -> list[dict[str, Any]]:
    url: str | None = f"/repos/{owner_name}/activity"
    params: dict[str, Any] | None = {"per_page": PER_PAGE, "direction": "desc"}
    found: dict[Any, dict[str, Any]] = {}
    pages = Pages()
    for _page in range(MAX_PAGES):
        if url is None:
            return _oldest_first(found)
        _headers, data, next_url = get_page(client.requester, url, params, base, pages)
        older = False
        for item in data:
            step = _step(item)
            if step["at"] < since:
                older = True
                continue
            if older:
                # Paging stops at the arm time only because the list is newest first; a page
                # out of that order says nothing about what the next page holds.
                raise _Unusable(f"the list is not newest first: item {item.get('id')!r} at "
                                f"{step['at']} follows one older than the arm")
            ident = item.get("id")
            if not isinstance(ident, int) or isinstance(ident, bool):
                # Entries repeated across shifting pages are told apart by id only.
                raise _Unusable(f"an item at {step['at']} has no id")
            found.setdefault(ident, step)
        if older:  # an empty page says nothing of its next one: the loop ends at no next link
            return _oldest_first(found)
        url = next_url
        params = None  # the next link carries them
    raise _Unusable(f"more than {MAX_PAGES} pages since the arm")


def _step(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise _Unusable("an item is not an object")
    ref, old, new = item.get("ref"), item.get("before"), item.get("after")
    kind, stamp = item.get("activity_type"), item.get("timestamp")
    if not (isinstance(ref, str) and ref.startswith("refs/") and isinstance(old, str)
            and _SHA.match(old) and isinstance(new, str) and _SHA.match(new)
            and isinstance(kind, str) and isinstance(stamp, str)):
        raise _Unusable(f"item {item.get('id')!r} lacks ref, before, after, activity_type or "
                        "timestamp")
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        raise _Unusable(f"item {item.get('id')!r} has timestamp {stamp[:40]!r}") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    actor = item.get("actor")
    login = actor.get("login") if isinstance(actor, dict) else None
    return {"ref": ref, "old": old, "new": new,
            "at": at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "actor": login if isinstance(login, str) else None, "kind": kind}


def _oldest_first(found: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
    # The API lists newest first; a stable sort keeps the order of steps in one second.
    return sorted(reversed(list(found.values())), key=lambda s: s["at"])
