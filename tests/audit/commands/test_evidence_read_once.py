"""Each piece of evidence is read once: what is checked against its seal is what is judged. The
run can replace a file in the run directory at any moment, so a file read twice (once to check
its seal, once to judge it) can be the sealed one the first time and a forged one the next."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import commit, git, isolate_git, make_repo_with_remote, rev
from inprocess import loop_pi_audit

import audit.commands.begin
import audit.evidence.pushlog
import audit.evidence.seal.arm
import audit.evidence.snapshot_file
from audit.evidence.rundir import BEFORE, PUSH_LOG
from jobs.core.fs import read_regular


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def swap_after_first_read(monkeypatch: pytest.MonkeyPatch, path: Path, forged: bytes,
                          modules: tuple[Any, ...]) -> None:
    """Replace `path` with `forged` right after its first read (the run racing closeout)."""
    done: list[bool] = []

    def reading(target: Path | str, limit: int | None = None) -> bytes:
        data = read_regular(target, limit)
        if Path(target) == path and not done:
            done.append(True)
            path.write_bytes(forged)
        return data

    for module in modules:
        monkeypatch.setattr(module, "read_regular", reading)


def armed_with_unlogged_push(tmp_path: Path) -> tuple[Path, Path, str, str]:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    done = loop_pi_audit(["begin", str(clone), "--run-dir", str(run_dir)])
    assert done.returncode == 0, done.stderr
    old = rev(clone, "HEAD")
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    return clone, run_dir, old, rev(clone, "HEAD")


def closeout_json(run_dir: Path) -> tuple[int, dict[str, Any]]:
    done = loop_pi_audit(["closeout", "--run-dir", str(run_dir), "--json"])
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_push_log_swapped_between_its_reads_covers_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: a hand-written line covering the unlogged push is in the file when closeout
    parses the entries, and gone (an empty log, nothing to cross-check) when it reads the
    lines to check them against the ledger."""
    clone, run_dir, old, new = armed_with_unlogged_push(tmp_path)
    line = {"repo": str(clone.resolve()), "remote": "origin", "ref": "refs/heads/main",
            "old": old, "new": new, "at": "2026-11-30T07:00:00Z", "source": "record-push"}
    log = run_dir / PUSH_LOG
    log.write_text(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
    swap_after_first_read(monkeypatch, log, b"", (audit.evidence.pushlog,))
    code, report = closeout_json(run_dir)
    assert code == 1
    assert [f["verdict"] for f in report["findings"] if f["kind"] == "commit"] == ["UNGRANTED"]


def forge_before(run_dir: Path, clone: Path, tip: str) -> bytes:
    before = json.loads((run_dir / BEFORE).read_text())
    refs = before["repos"][str(clone.resolve())]["remotes"]["origin"]["refs"]
    refs["refs/heads/main"] = refs["HEAD"] = tip
    return (json.dumps(before, indent=2, sort_keys=True) + "\n").encode()


def test_a_before_snapshot_swapped_after_its_seal_is_checked_is_not_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: the sealed before-snapshot is in place when closeout hashes it, and one holding
    the unlogged push's tip when it reads the snapshot to judge."""
    clone, run_dir, _, new = armed_with_unlogged_push(tmp_path)
    swap_after_first_read(monkeypatch, run_dir / BEFORE, forge_before(run_dir, clone, new),
                          (audit.evidence.seal.arm, audit.evidence.snapshot_file))
    code, report = closeout_json(run_dir)
    assert code == 1
    assert [f["verdict"] for f in report["findings"] if f["kind"] == "commit"] == ["UNGRANTED"]


def test_add_never_extends_a_before_snapshot_swapped_after_its_seal_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: the forged before-snapshot appears, under the run lock, between `add`'s check of
    the seal and its read of the snapshot it extends: `add` would seal the forgery afresh."""
    clone, run_dir, _, new = armed_with_unlogged_push(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    forged = forge_before(run_dir, clone, new)
    locked: list[bool] = []
    real_lock = audit.commands.begin.run_lock

    @contextmanager
    def lock(directory: Path) -> Iterator[None]:
        with real_lock(directory):
            locked.append(True)
            yield

    def reading(target: Path | str, limit: int | None = None) -> bytes:
        data = read_regular(target, limit)
        if Path(target) == run_dir / BEFORE and locked == [True]:
            locked.append(False)
            (run_dir / BEFORE).write_bytes(forged)
        return data

    with monkeypatch.context() as patch:
        patch.setattr(audit.commands.begin, "run_lock", lock)
        for module in (audit.evidence.seal.arm, audit.evidence.snapshot_file):
            patch.setattr(module, "read_regular", reading)
        added = loop_pi_audit(["add", str(other), "--run-dir", str(run_dir)])
    assert added.returncode == 0, added.stderr
    assert locked == [True, False]
    code, report = closeout_json(run_dir)
    assert code == 1
    assert [f["verdict"] for f in report["findings"] if f["kind"] == "commit"] == ["UNGRANTED"]


def test_begin_seals_the_bytes_it_wrote_not_what_is_there_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: a commit made but not pushed; the before-snapshot replaced, the moment `begin`
    has written it, by one saying main is already there; then the commit pushed unlogged."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    tip = rev(clone, "HEAD")
    real_write = audit.commands.begin.write_json

    def writing(path: Path, obj: object) -> Any:
        written = real_write(path, obj)
        if path == run_dir / BEFORE:
            path.write_bytes(forge_before(run_dir, clone, tip))
        return written

    with monkeypatch.context() as patch:
        patch.setattr(audit.commands.begin, "write_json", writing)
        done = loop_pi_audit(["begin", str(clone), "--run-dir", str(run_dir)])
    assert done.returncode == 0, done.stderr
    git(clone, "push", "-q", "origin", "main")
    code, report = closeout_json(run_dir)
    assert code == 1
    assert "before-changed" in {f["kind"] for f in report["findings"]}
