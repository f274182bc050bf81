"""What became of the last delivery to each `notify:` URL and to the `heartbeat:` URL, kept in
`state_dir/deliveries.json`: a failure stays a `doctor` failure until a later delivery to the
same place succeeds.

Keyed by a hash of the URL (which may hold a token), shown by `shown_target`, which keeps only
its scheme and host.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from jobs.core.fs import atomic_write

STATE_FILE = "deliveries.json"
HEARTBEAT = "heartbeat"
NOTIFY = "notify"


@dataclass(frozen=True)
class Delivery:
    kind: str            # HEARTBEAT or NOTIFY
    shown: str           # the target without its secrets
    at: str              # when it was tried, ISO UTC
    ok: bool
    error: str | None = None
    what: str = ""       # `start`, an exit code, or the message's title


def shown_target(url: str, kind: str) -> str:
    """Where a delivery went, with nothing that may be a secret: Apprise URLs often hold a token
    in their host part (`tgram://<bot token>/…`), so of those only the scheme is shown."""
    parts = urlsplit(url)
    if kind == HEARTBEAT and parts.hostname:
        return f"{parts.scheme}://{parts.hostname}/…"
    return f"{parts.scheme}://…" if parts.scheme else "…"


def key_of(kind: str, url: str) -> str:
    return f"{kind}:{hashlib.sha256(url.encode('utf-8')).hexdigest()[:16]}"


def _read(state_dir: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(state_dir: Path, url: str, delivery: Delivery) -> None:
    """Keep `delivery` as the last one to `url` (OSError when state_dir cannot be written)."""
    data = _read(state_dir)
    data[key_of(delivery.kind, url)] = asdict(delivery)
    state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(state_dir / STATE_FILE,
                 json.dumps(data, sort_keys=True, indent=1).encode("utf-8"), mode=0o600)


def last(state_dir: Path, kind: str, url: str) -> Delivery | None:
    entry = _read(state_dir).get(key_of(kind, url))
    if not isinstance(entry, dict):
        return None
    try:
        return Delivery(**{k: entry[k] for k in ("kind", "shown", "at", "ok", "error", "what")
                           if k in entry})  # type: ignore[arg-type]
    except TypeError:
        return None


def now_text(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
