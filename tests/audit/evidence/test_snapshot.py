"""Snapshots of real repositories with real bare remotes; begin and add on top of them."""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from audit_helpers import (
    commit,
    env_with,
    git,
    isolate_git,
    make_bare,
    make_repo_with_remote,
    rev,
    run_cli,
)

from audit.evidence.rundir import BEFORE
from audit.evidence.snapshot import snapshot_complete, take_snapshot
from audit.evidence.snapshot_file import load_snapshot
from audit.main import main as audit_main

NOT_APPLICABLE = {"available": True, "releases": [], "note": "no remote on a GitHub host",
                  "github_repo": None, "github_repos": []}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_snapshot_of_several_remotes_tags_and_symref(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    main1 = rev(clone, "HEAD")
    git(clone, "tag", "-a", "v1", "-m", "annotated v1")
    git(clone, "tag", "light")
    git(clone, "push", "-q", "origin", "--tags")
    feature = commit(clone, "f.txt", "f\n", "feature")
    backup = make_bare(tmp_path / "backup.git")
    git(clone, "remote", "add", "backup", str(backup))
    git(clone, "push", "-q", "backup", f"{feature}:refs/heads/feature")
    taken = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)

    snap = take_snapshot([clone], charter_sha256="c" * 64, taken_at=taken)

    v1_obj = rev(clone, "refs/tags/v1")
    assert v1_obj != main1  # the annotated tag's ref names the tag object
    repo = snap["repos"][str(clone.resolve())]
    assert snap["taken_at"] == "2026-11-30T07:00:00Z" and snap["charter_sha256"] == "c" * 64
    assert repo["remotes"]["origin"] == {
        "available": True, "url": str(bare),
        "refs": {"HEAD": main1, "refs/heads/main": main1, "refs/tags/light": main1,
                 "refs/tags/v1": v1_obj, "refs/tags/v1^{}": main1},
        "symrefs": {"HEAD": "refs/heads/main"}}
    # backup's HEAD names a branch that does not exist there: no HEAD line, no symref.
    assert repo["remotes"]["backup"] == {"available": True, "url": str(backup),
                                         "refs": {"refs/heads/feature": feature}, "symrefs": {}}
    assert repo["tags"] == {"available": True, "tags": {
        "refs/tags/light": main1, "refs/tags/v1": v1_obj, "refs/tags/v1^{}": main1}}
    assert repo["releases"] == NOT_APPLICABLE
    assert snapshot_complete(snap) == []
    # What take_snapshot returns is what load_snapshot accepts.
    (tmp_path / "s.json").write_text(json.dumps(snap))
    assert load_snapshot(tmp_path / "s.json") == snap


def test_repository_without_remotes_or_tags(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    git(tmp_path, "init", "-q", "-b", "main", str(lonely))
    commit(lonely, "a.txt", "a\n", "only")
    snap = take_snapshot([lonely], charter_sha256=None)
    assert snap["repos"][str(lonely.resolve())] == {
        "taken_at": snap["taken_at"], "remotes": {},
        "tags": {"available": True, "tags": {}}, "releases": NOT_APPLICABLE}
    assert snapshot_complete(snap) == []


def test_unreachable_and_hanging_remotes_are_unavailable_with_reasons(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "remote", "add", "gone", str(tmp_path / "no-such-remote.git"))
    # An ssh transport that never answers (the closeout environment's own ssh command; one set
    # in the clone's config is never used).
    sleeper = tmp_path / "slow-ssh"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    stuck_url = "ssh://stuck.invalid/repo.git"
    git(clone, "remote", "add", "stuck", stuck_url)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(sleeper))
    monkeypatch.setenv("LOOP_PI_GIT_TIMEOUT", "2")

    started = time.monotonic()
    snap = take_snapshot([clone], charter_sha256=None)
    elapsed = time.monotonic() - started

    remotes = snap["repos"][str(clone.resolve())]["remotes"]
    assert remotes["origin"]["available"] is True
    assert remotes["gone"]["available"] is False and "refs" not in remotes["gone"]
    assert "git ls-remote --symref gone failed" in remotes["gone"]["reason"]
    assert "no-such-remote.git" in remotes["gone"]["reason"]
    assert remotes["stuck"] == {"available": False, "url": stuck_url, "reason":
                                "git ls-remote --symref stuck failed: timed out after 2s (killed)"}
    assert elapsed < 10  # both remotes asked at once, the hung one cut off at 2 s
    reasons = snapshot_complete(snap)
    assert len(reasons) == 2 and all(r.startswith(str(clone.resolve())) for r in reasons)


def test_remote_with_dots_in_its_name_and_pushurl(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "remote", "add", "my.fork", str(bare))
    # The push URL must list the same refs as the fetch URL (tests/audit/judge/test_remotes.py).
    git(clone, "push", "-q", str(make_bare(tmp_path / "push-here.git")), "main")
    git(clone, "remote", "set-url", "--push", "my.fork", str(tmp_path / "push-here.git"))
    snap = take_snapshot([clone], charter_sha256=None)
    fork = snap["repos"][str(clone.resolve())]["remotes"]["my.fork"]
    assert fork["available"] and fork["url"] == str(bare)
    assert fork["pushurls"] == [str(tmp_path / "push-here.git")]


def test_snapshot_command_writes_whatever_is_available(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    git(clone, "remote", "add", "gone", str(tmp_path / "missing.git"))
    out = tmp_path / "snap.json"
    assert audit_main(["snapshot", "--out", str(out), str(clone), str(other)]) == 0
    snap = load_snapshot(out)
    assert sorted(snap["repos"]) == sorted([str(clone.resolve()), str(other.resolve())])
    assert snap["charter_sha256"] is None
    assert "unavailable: " in capsys.readouterr().err
    assert out.read_text().endswith("}\n")


def test_an_unavailable_remote_named_to_move_the_cursor_is_said_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The clone's configuration is the run's to write: a remote name (which git config lets
    hold a carriage return or an escape) must not rewrite the terminal `begin` reports to."""
    clone, _ = make_repo_with_remote(tmp_path)
    name = "x\x1b[2K\rarmed \u202e"
    git(clone, "config", f"remote.{name}.url", str(tmp_path / "missing.git"))
    out = tmp_path / "snap.json"
    assert audit_main(["snapshot", "--out", str(out), str(clone)]) == 0
    assert audit_main(["begin", str(clone), "--run-dir", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.count("unavailable: ") == 2 and "x\\x1b[2K\\rarmed \\u202e" in err
    assert all(line.isprintable() for line in err.splitlines())


def test_snapshot_of_a_path_that_is_no_repository_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    out = tmp_path / "snap.json"
    assert audit_main(["snapshot", "--out", str(out), str(tmp_path / "plain")]) == 2
    assert "not a git repository" in capsys.readouterr().err
    assert audit_main(["snapshot", "--out", str(out), str(tmp_path / "absent")]) == 2
    assert not out.exists()


# --- begin / add -------------------------------------------------------------------------------

def test_begin_records_the_charter_hash_and_a_complete_snapshot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: work loop1\nauthority: release-please o/n\n")
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--charter", str(charter),
                       "--run-dir", str(run_dir)]) == 0
    before = load_snapshot(run_dir / BEFORE)
    assert before["charter_sha256"] == hashlib.sha256(charter.read_bytes()).hexdigest()
    assert list(before["repos"]) == [str(clone.resolve())]
    assert "armed" in capsys.readouterr().out


def test_begin_uses_the_run_dir_from_the_environment_and_no_charter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    monkeypatch.setenv("LOOP_PI_RUN_DIR", str(tmp_path / "env-run"))
    assert audit_main(["begin", str(clone)]) == 0
    assert load_snapshot(tmp_path / "env-run" / BEFORE)["charter_sha256"] is None


def test_begin_refuses_and_writes_nothing_when_a_part_is_unavailable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    git(clone, "remote", "add", "gone", str(tmp_path / "missing.git"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert "unavailable: " in err and "remote gone" in err and "begin refused" in err
    assert not (run_dir / BEFORE).exists()
    # An earlier before-snapshot is left exactly as it was: that run directory is armed.
    (run_dir / BEFORE).write_text("previous\n")
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 2
    assert "already armed at " in capsys.readouterr().err
    assert (run_dir / BEFORE).read_text() == "previous\n"


def test_a_refused_begin_leaves_no_file_behind_even_after_reading_github(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SPEC: `begin` refuses with "nothing written": the releases of a GitHub remote that cannot
    be read (no token) leave no run directory, and no log file in one, behind."""
    clone, bare = make_repo_with_remote(tmp_path)
    url = "https://github.com/acme/widgets.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 1
    assert "begin refused" in capsys.readouterr().err
    assert not run_dir.exists() or not any(run_dir.iterdir())


def test_add_keeps_the_first_snapshot_of_a_repository(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    run_dir = str(tmp_path / "run")
    assert audit_main(["begin", str(clone), "--run-dir", run_dir]) == 0
    assert audit_main(["add", str(other), "--run-dir", run_dir]) == 0
    first = load_snapshot(Path(run_dir) / BEFORE)
    commit(other, "b.txt", "b\n", "moved on")
    git(other, "push", "-q", "origin", "main")
    commit(clone, "c.txt", "c\n", "moved on too")
    git(clone, "push", "-q", "origin", "main")
    assert audit_main(["add", str(other), "--run-dir", run_dir]) == 0
    assert audit_main(["add", str(clone), "--run-dir", run_dir]) == 0
    assert "keeping its first snapshot" in capsys.readouterr().out
    assert load_snapshot(Path(run_dir) / BEFORE) == first
    assert sorted(first["repos"]) == sorted([str(clone.resolve()), str(other.resolve())])


def test_add_refuses_an_incomplete_snapshot_and_needs_begin_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    run_dir = tmp_path / "run"
    assert audit_main(["add", str(other), "--run-dir", str(run_dir)]) == 2
    assert "run `loop-pi-audit begin` first" in capsys.readouterr().err
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 0
    before = (run_dir / BEFORE).read_bytes()
    git(other, "remote", "add", "gone", str(tmp_path / "missing.git"))
    assert audit_main(["add", str(other), "--run-dir", str(run_dir)]) == 1
    assert "add refused" in capsys.readouterr().err
    assert (run_dir / BEFORE).read_bytes() == before
    assert not [p for p in os.listdir(run_dir) if p.endswith(".tmp")]


def test_a_vanished_repository_is_unavailable_not_empty(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    gone = tmp_path / "gone"
    clone.rename(gone)
    snap = take_snapshot([clone], charter_sha256=None)
    entry = snap["repos"][str(clone)]
    assert entry["available"] is False and entry["remotes"] == {}
    assert entry["tags"]["available"] is False and entry["releases"]["available"] is False
    assert snapshot_complete(snap) == [f"{clone}: {entry['reason']}"]
    (tmp_path / "s.json").write_text(json.dumps(snap))
    assert load_snapshot(tmp_path / "s.json") == snap


def test_git_dir_in_the_environment_does_not_redirect_a_snapshot(tmp_path: Path) -> None:
    a, a_bare = make_repo_with_remote(tmp_path, "a")
    b, b_bare = make_repo_with_remote(tmp_path, "b")
    out = tmp_path / "snap.json"
    done = run_cli("snapshot", "--out", str(out), str(a),
                   env=env_with(GIT_DIR=str(b / ".git"), GIT_WORK_TREE=str(b)))
    assert done.returncode == 0, done.stderr
    snap = json.loads(out.read_text())
    origin = snap["repos"][str(a.resolve())]["remotes"]["origin"]
    assert origin["url"] == str(a_bare)
    assert origin["refs"]["refs/heads/main"] == rev(a, "HEAD")
