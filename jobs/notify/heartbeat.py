"""`heartbeat:` pings in Healthchecks.io's protocol: `<url>/start` when a run starts and
`<url>/<exit code>` when it ends, so an outside service raises the alarm when the morning run
never happens (a dead man's switch)."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
from urllib.parse import unquote, urlsplit, urlunsplit

from jobs.notify.bounded import CALL_LIMIT, within

# A POST body is stored with the ping and shown in the check's log (Healthchecks keeps 100 KB).
BODY_LIMIT = 100_000


def ping_url(url: str, what: str) -> str:
    """`url` with `/<what>` appended to its path (a query string stays at the end)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + what))


def _credentials(url: str) -> tuple[str, dict[str, str]]:
    """`url` without its `user:password@`, and the Basic authorization header they make: urllib
    would take them for part of the host name."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=hostport)), {"Authorization": f"Basic {token}"}


def ping(url: str, what: str, *, body: str = "", limit: float = CALL_LIMIT) -> str | None:
    """POST `body` to `<url>/<what>`; None when it was taken (2xx), else why not."""
    target, auth = _credentials(ping_url(url, what))
    data = body.encode("utf-8")[:BODY_LIMIT]

    def call() -> str | None:
        request = urllib.request.Request(target, data=data, method="POST",
                                         headers={"Content-Type": "text/plain; charset=utf-8",
                                                  "User-Agent": "loop-jobs"})
        for name, value in auth.items():
            # Not sent again to wherever a redirect points.
            request.add_unredirected_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=limit) as answer:
                answer.read(1024)
                return None
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            return f"cannot reach it: {reason}"

    return within(limit, call)
