"""The arm record: `begin` seals the before-snapshot (the sha256 of its bytes), the charter's hash
and the transport fingerprint, prints them as its last line, writes them to `DIR/audit-arm.json`
and inserts them into the ledger (`audit_arms`, insert only; `add` inserts a row naming the one
it extends). Closeout reads the rows back (`audit.judge.seal` judges them).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.evidence.rundir import BEFORE, write_json
from audit.evidence.seal.ledger import AuditLedger, run_dir_key
from audit.evidence.seal.transport import fingerprint_sha256, parse_fingerprint
from audit.model import Arm
from jobs.core.errors import InputError, UsageError
from jobs.core.fs import read_regular

ARM_FILE = "audit-arm.json"


def read_evidence(path: Path) -> bytes | None:
    """A file's bytes, read once so that what is checked against its seal is what is used; None
    when there is no such file. Anything but a regular file is refused: InputError, exit 2."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def armed_in(run_dir: Path) -> str | None:
    """The ledger `audit-arm.json` says the run was armed in, or None (no file, unreadable,
    malformed). The run can write this file: it only words a reason, never where seals are
    looked up."""
    try:
        data = json.loads(read_regular(run_dir / ARM_FILE))
    except (OSError, ValueError):
        return None
    ledger = data.get("ledger") if isinstance(data, dict) else None
    return ledger if isinstance(ledger, str) and ledger else None


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def arms(ledger: AuditLedger, run_dir: Path, key: str | None = None) -> tuple[Arm, ...]:
    """Every arm row of the run directory (of the ledger's name `key` when given), oldest
    first."""
    from jobs.ledger.seals import arms_of

    name = run_dir_key(run_dir) if key is None else key
    rows = ledger.read("read the arm record", lambda conn: arms_of(conn, name))
    return tuple(Arm(id=r.id, kind=r.kind, extends=r.extends, armed_at=iso(r.armed_at),
                     before_sha256=r.before_sha256, charter_sha256=r.charter_sha256,
                     transport_sha256=r.transport_sha256,
                     transport=parse_fingerprint(r.transport))
                 for r in rows)


def armed_elsewhere(ledger: AuditLedger, run_dir: Path) -> tuple[tuple[str, Arm], ...]:
    """The arm rows of the other directories the run directory's name led to before a link on
    its way could have changed: for each leading part of the path, that part resolved and the
    rest as written. The ledger names a run directory by its real path, so a run that moved the
    armed directory aside and linked its name to one it armed afresh would otherwise be judged
    by that second arm."""
    parts = run_dir.absolute().parts
    now = run_dir_key(run_dir)
    spellings = dict.fromkeys(
        os.path.normpath(os.path.join(os.path.realpath(os.path.join(*parts[:i])), *parts[i:]))
        for i in range(1, len(parts)))
    return tuple((spelling, arm) for spelling in spellings if spelling != now
                 for arm in arms(ledger, run_dir, spelling) if arm.kind == "begin")


def refuse_rearm(run_dir: Path, found: tuple[Arm, ...]) -> None:
    """`begin` arms a run directory once: a before-snapshot there, or any arm row for it in the
    ledger (deleting the files does not re-arm it), is a usage error."""
    if found:
        raise UsageError(f"{run_dir}: already armed at {found[0].armed_at}; use a new run "
                         "directory")
    before = run_dir / BEFORE
    if before.exists():
        when = datetime.fromtimestamp(before.stat().st_mtime, UTC)
        raise UsageError(f"{run_dir}: already armed at {iso(when)}; use a new run directory "
                         f"({BEFORE} is there)")


def seal(ledger: AuditLedger, run_dir: Path, *, kind: str, extends: int | None,
         before_sha256: str, charter_sha256: str | None,
         transport: Mapping[str, Any]) -> Arm:
    """Insert the arm row and write `audit-arm.json`; the row as a plain Arm."""
    from jobs.ledger.seals import insert_arm

    now = datetime.now(UTC)
    text = json.dumps(transport, sort_keys=True, separators=(",", ":"))
    digest = fingerprint_sha256(transport)
    row_id = ledger.write("seal the arm", lambda conn: insert_arm(
        conn, run_dir=run_dir_key(run_dir), kind=kind, extends=extends, armed_at=now,
        machine=ledger.machine, before_sha256=before_sha256, charter_sha256=charter_sha256,
        transport_sha256=digest, transport=text))
    arm = Arm(id=row_id, kind=kind, extends=extends, armed_at=iso(now),
              before_sha256=before_sha256, charter_sha256=charter_sha256,
              transport_sha256=digest, transport=dict(transport))
    write_json(run_dir / ARM_FILE, {
        "run_dir": run_dir_key(run_dir), "ledger": ledger.shown, "ledger_row": arm.id,
        "kind": kind, "extends": extends, "armed_at": arm.armed_at,
        "before_sha256": before_sha256, "charter_sha256": charter_sha256,
        "transport_sha256": digest, "transport": dict(transport)})
    return arm


def armed_line(run_dir: Path, arm: Arm) -> str:
    """`armed <run-dir> before=<hex> charter=<hex|none> transport=<hex>`: begin's last line."""
    return (f"armed {run_dir} before={arm.before_sha256} charter={arm.charter_sha256 or 'none'} "
            f"transport={arm.transport_sha256}")
