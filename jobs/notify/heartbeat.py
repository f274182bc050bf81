"""`heartbeat:` pings in Healthchecks.io's protocol: `<url>/start` when a run starts and
`<url>/<exit code>` when it ends, so an outside service raises the alarm when the morning run
never happens (a dead man's switch)."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

from jobs.notify.bounded import CALL_LIMIT, within

# A POST body is stored with the ping and shown in the check's log (Healthchecks keeps 100 KB).
BODY_LIMIT = 100_000


def ping_url(url: str, what: str) -> str:
    """`url` with `/<what>` appended to its path (a query string stays at the end)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + what))


def ping(url: str, what: str, *, body: str = "", limit: float = CALL_LIMIT) -> str | None:
    """POST `body` to `<url>/<what>`; None when it was taken (2xx), else why not."""
    target = ping_url(url, what)
    data = body.encode("utf-8")[:BODY_LIMIT]

    def call() -> str | None:
        request = urllib.request.Request(target, data=data, method="POST",
                                         headers={"Content-Type": "text/plain; charset=utf-8",
                                                  "User-Agent": "loop-jobs"})
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
