"""Ledger writes kept on local disk while the ledger cannot be reached, written on a later run.

One JSON file per write in `<state_dir>/ledger-spool/`, named so that they sort in the order they
were made; each is written atomically and synced before the run goes on (a pending edit must
outlive a crash that follows it).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jobs.core.fs import atomic_write

SPOOL_DIR = "ledger-spool"


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, kind: str, payload: dict[str, Any], *, durable: bool = True) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        # Nanoseconds then a random tail: ordered within one run, unique across runs.
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        path = self.directory / name
        data = json.dumps({"kind": kind, "payload": payload}, sort_keys=True).encode("utf-8")
        atomic_write(path, data, mode=0o600)
        return path

    def entries(self) -> Iterator[tuple[Path, str, dict[str, Any]]]:
        """Spooled writes, oldest first; an unreadable entry is set aside, never dropped."""
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*.json")):
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                kind, payload = str(entry["kind"]), dict(entry["payload"])
            except (OSError, ValueError, KeyError, TypeError):
                self.set_aside(path)
                continue
            yield path, kind, payload

    def set_aside(self, path: Path) -> None:
        """Keep an entry that cannot be written out of the way, for a person to look at."""
        os.replace(path, path.with_suffix(".unreadable"))

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def count(self) -> int:
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob("*.json"))
