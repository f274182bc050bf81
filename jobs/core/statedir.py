"""Per-run recipe output under `state_dir/runs/<run_id>/`, pruned after `output_retention`."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from jobs.core.logs import get_logger

log = get_logger("loop-jobs.retention")

RUNS_DIR = "runs"


def prune_outputs(state_dir: Path, retention: float, now: datetime) -> list[Path]:
    """Remove run folders older than `retention` seconds; returns them.

    A folder is old when its newest entry's mtime is (so a run still writing is never taken) and
    when the time in its name, the run id, is too: the run id comes from the clock `now` comes
    from, mtimes from the file system's, and a folder must look old by both before it goes.
    Folders that cannot be removed are logged and left for the next run.
    """
    runs = state_dir / RUNS_DIR
    cutoff = now.timestamp() - retention
    removed: list[Path] = []
    try:
        folders = sorted(p for p in runs.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return removed
    for folder in folders:
        try:
            newest = max([folder.stat().st_mtime,
                          *(p.lstat().st_mtime for p in folder.rglob("*"))])
        except OSError:
            continue
        if newest >= cutoff or _named_time(folder.name, default=newest) >= cutoff:
            continue
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            log.warning("outputs.prune_failed", run_folder=folder.name, error=str(exc))
            continue
        removed.append(folder)
    if removed:
        log.info("outputs.pruned", folders=len(removed), retention_s=retention)
    return removed


def _named_time(name: str, default: float) -> float:
    """The start time in a run folder's name (`20261130T073012Z-1a2b3c4d`), else `default`."""
    try:
        return datetime.strptime(name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return default
