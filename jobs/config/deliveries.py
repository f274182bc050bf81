"""The configuration's delivery keys: `notify:` (Apprise URLs) and `heartbeat:` (a ping URL),
each checked when the configuration is read, so that a URL no message can go to stops the
configuration (exit 2) rather than the end of a run."""

from __future__ import annotations

import re
from typing import Any

_APPRISE_URL = r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s\x00-\x1f\x7f]+$"


def notify_urls(raw: object, fail: Any) -> tuple[str, ...]:
    """`notify:` — a list of Apprise URLs (one URL alone is taken as a list of one)."""
    items = [raw] if isinstance(raw, str) else raw
    if raw is None or not isinstance(items, list) or not items:
        raise fail("notify", raw, "expected a list of Apprise URLs such as "
                   "ntfy://ntfy.sh/my-topic")
    urls = []
    for i, item in enumerate(items):
        key = "notify" if isinstance(raw, str) else f"notify[{i}]"
        if not isinstance(item, str) or not _parses(item.strip()):
            raise fail(key, item, "expected an Apprise URL such as ntfy://ntfy.sh/my-topic "
                       "or mailto://user:password@example.com")
        urls.append(item.strip())
    return tuple(urls)


def _parses(url: str) -> bool:
    """Whether `url` has an Apprise URL's shape and a URL parser can read it (`json://[x/`
    cannot: it would stop the message being sent, and the run, at the end of the run)."""
    from urllib.parse import urlsplit

    if re.match(_APPRISE_URL, url) is None:
        return False
    try:
        urlsplit(url)
    except ValueError:
        return False
    return True


def heartbeat_url(raw: object, fail: Any) -> str:
    """`heartbeat:` — an http(s) ping URL such as https://hc-ping.com/<uuid>."""
    from urllib.parse import urlsplit

    ok = isinstance(raw, str) and re.match(_APPRISE_URL, raw.strip()) is not None
    if ok:
        assert isinstance(raw, str)
        try:
            parts = urlsplit(raw.strip())
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            ok = False
    if not ok:
        raise fail("heartbeat", raw, "expected an http(s) ping URL such as "
                   "https://hc-ping.com/<uuid>")
    assert isinstance(raw, str)
    return raw.strip()
