"""Verdicts whose commit was refused, kept in `state_dir` so a later run commits them without
running the recipe again. Named by the sha256 the ledger records as the edit's `after`."""

from __future__ import annotations

from pathlib import Path

from jobs.core.fs import atomic_write
from jobs.verify.rules.edit_plan import sha256


def _path(state_dir: Path, digest: str) -> Path:
    return state_dir / "kept" / f"{digest}.md"


def save(state_dir: Path, data: bytes) -> None:
    path = _path(state_dir, sha256(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


def load(state_dir: Path, digest: str | None) -> bytes | None:
    """The kept bytes, or None when missing or not what the ledger says they were."""
    if digest is None:
        return None
    try:
        data = _path(state_dir, digest).read_bytes()
    except OSError:
        return None
    return data if sha256(data) == digest else None


def drop(state_dir: Path, digest: str | None) -> None:
    if digest is not None:
        _path(state_dir, digest).unlink(missing_ok=True)
