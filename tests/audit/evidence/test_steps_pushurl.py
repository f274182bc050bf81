"""A remote whose push URL (`remote.<name>.pushurl`, or a `pushInsteadOf` rule) is another
repository on this machine than its fetch URL: `git push <name>` goes there, so its journal is
read as well as the fetch repository's, with the same checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    force_push_and_put_back,
    git,
    isolate_git,
    make_repo_with_remote,
    run_cli,
)

from audit.evidence.steps.journal import JOURNAL


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def closeout(run_dir: Path) -> tuple[int, dict[str, Any], str]:
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads((run_dir / "audit-report.json").read_text()), done.stdout


def kinds(report: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for f in report["findings"]:
        out.setdefault(f["kind"], []).append((f["verdict"], f["reason"]))
    return out


def two_repositories(tmp_path: Path, how: str, *, journal_in_push: bool = True
                     ) -> tuple[Path, Path, Path]:
    """A clone whose origin fetches from one bare repository and pushes to another (a copy,
    listing the same refs), both keeping a journal (unless told otherwise); armed."""
    clone, fetch_bare = make_repo_with_remote(tmp_path)
    push_bare = tmp_path / "push-remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(fetch_bare), str(push_bare))
    for bare in (fetch_bare, push_bare)[:2 if journal_in_push else 1]:
        done = run_cli("journal", "install", str(bare))
        assert done.returncode == 0, done.stderr
    if how == "pushurl":
        git(clone, "remote", "set-url", "--push", "origin", str(push_bare))
    else:
        git(clone, "config", f"url.{push_bare}.pushInsteadOf", str(fetch_bare))
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    return clone, push_bare, run_dir


@pytest.mark.parametrize("how", ["pushurl", "pushInsteadOf"])
def test_a_force_push_to_the_push_url_put_back_is_non_fast_forward(
        tmp_path: Path, how: str) -> None:
    """Attack: main force-pushed, through `git push origin`, to the repository origin pushes to
    (not the one it fetches from), then put back: both list the same refs at closeout, and the
    fetch repository's journal holds nothing."""
    clone, push_bare, run_dir = two_repositories(tmp_path, how)
    force_push_and_put_back(clone, push_bare)
    code, report, text = closeout(run_dir)
    assert code == 1, text
    forced = kinds(report)["step-force-push"]
    assert forced[0][0] == "NON_FAST_FORWARD"
    assert "net change only" not in text


def test_a_push_repository_without_a_journal_is_net_change_only(tmp_path: Path) -> None:
    clone, push_bare, run_dir = two_repositories(tmp_path, "pushurl", journal_in_push=False)
    force_push_and_put_back(clone, push_bare)
    code, report, text = closeout(run_dir)
    assert code == 0 and report["findings"] == []
    assert f"origin: net change only (no journal at {push_bare / JOURNAL} " in text


def test_a_push_repository_journal_begin_saw_that_is_gone_is_unverified(tmp_path: Path) -> None:
    clone, push_bare, run_dir = two_repositories(tmp_path, "pushurl")
    force_push_and_put_back(clone, push_bare)
    os.unlink(push_bare / JOURNAL)
    code, report, _ = closeout(run_dir)
    assert code == 3
    assert f"the journal {push_bare / JOURNAL} that begin saw is gone" in kinds(
        report)["steps-unavailable"][0][1]


def test_a_push_repository_whose_hook_is_removed_is_unverified(tmp_path: Path) -> None:
    clone, push_bare, run_dir = two_repositories(tmp_path, "pushInsteadOf")
    (push_bare / "hooks" / "reference-transaction").unlink()
    force_push_and_put_back(clone, push_bare)
    code, report, _ = closeout(run_dir)
    assert code == 3
    assert "the journal hook is no longer in effect" in kinds(report)["steps-unavailable"][0][1]


def test_a_push_url_naming_the_fetch_repository_records_one_journal(tmp_path: Path) -> None:
    """`pushurl` spelled differently (`file://`, the `.git` left off) but reaching the same
    repository: one journal, recorded and read as for a remote with one URL."""
    clone, bare = make_repo_with_remote(tmp_path)
    assert run_cli("journal", "install", str(bare)).returncode == 0
    git(clone, "remote", "set-url", "--push", "origin", f"file://{str(bare).removesuffix('.git')}")
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    before = json.loads((run_dir / "audit-before.json").read_text())
    part = next(iter(before["repos"].values()))["remotes"]["origin"]
    assert part["journal"]["path"] == str(bare / JOURNAL) and "push_journals" not in part
    force_push_and_put_back(clone, bare)
    code, report, _ = closeout(run_dir)
    assert code == 1 and kinds(report)["step-force-push"][0][0] == "NON_FAST_FORWARD"
