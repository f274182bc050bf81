"""Release commits read from real repositories: each fixture (tests/audit/judge/release_please/)
is built as a real commit on main with its tags, its bot releases in the after snapshot and a
charter granting release-please, then gathered (`gather_history`: the blobs read in one
`cat-file --batch` and checked against their names) and judged end to end."""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

import pytest
from audit_data import GH_URL, MAIN, charter, release, remote, repo_part, snapshot
from audit_helpers import git, isolate_git
from release_fixtures import Fixture, build, load

from audit.evidence.history import gather_history
from audit.judge.compare import judge
from audit.model import RELEASE_BOTS, RELEASE_PLEASE, UNGRANTED, Finding


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def released(fx: Fixture, repo: Path, before: str, after: str,
             authority: bool = True) -> list[Finding]:
    """Judge main moving onto the fixture's commit, with a release by its bot for every tag."""
    key = str(repo)
    tags = {f"refs/tags/{t}": after for t in fx.tags}
    b = snapshot(repo_part({"origin": remote({MAIN: before}, url=GH_URL)}, releases=[]), key)
    a = snapshot(repo_part({"origin": remote({MAIN: after, **tags}, url=GH_URL)},
                           releases=[release(t, author=fx.author) for t in fx.tags]), key)
    bots = () if fx.author in RELEASE_BOTS else (fx.author,)
    grant = charter(grants=["acme/widgets"] if authority else [], release_bots=bots)
    return judge(b, a, grant, gather_history(b, a, [], fetch=False), ())


def commit_finding(findings: list[Finding], sha: str) -> Finding:
    return next(f for f in findings if f.commit == sha)


@pytest.mark.parametrize("fx", load("genuine"), ids=lambda f: f.name)
def test_a_genuine_release_commit_passes_with_its_tags_and_releases(
        fx: Fixture, tmp_path: Path) -> None:
    before, after = build(fx, tmp_path / "repo")
    findings = released(fx, tmp_path / "repo", before, after)
    got = commit_finding(findings, after)
    assert got.verdict == RELEASE_PLEASE, got.reason
    assert all(f.verdict == RELEASE_PLEASE for f in findings if f.kind != "commit"), [
        (f.kind, f.ref, f.verdict, f.reason) for f in findings]


@pytest.mark.parametrize("fx", load("probes"), ids=lambda f: f.name)
def test_code_dressed_as_a_release_fails_naming_the_path(fx: Fixture, tmp_path: Path) -> None:
    before, after = build(fx, tmp_path / "repo")
    got = commit_finding(released(fx, tmp_path / "repo", before, after), after)
    assert got.verdict == UNGRANTED
    assert "shaped like a release-please release, but" in got.reason
    assert any(f"but {f['path']}" in got.reason for f in fx.files), got.reason


def test_a_grouped_release_needs_a_release_for_every_tag(tmp_path: Path) -> None:
    fx = next(f for f in load("genuine") if f.name == "node-monorepo-grouped-root-manifest")
    before, after = build(fx, tmp_path / "repo")
    key = str(tmp_path / "repo")
    tags = {f"refs/tags/{t}": after for t in fx.tags}
    b = snapshot(repo_part({"origin": remote({MAIN: before}, url=GH_URL)}, releases=[]), key)
    a = snapshot(repo_part({"origin": remote({MAIN: after, **tags}, url=GH_URL)},
                           releases=[release(t) for t in fx.tags[1:]]), key)
    findings = judge(b, a, charter(grants=["acme/widgets"]),
                     gather_history(b, a, [], fetch=False), ())
    got = commit_finding(findings, after)
    assert got.verdict == UNGRANTED and f"tag {fx.tags[0]} on it has no release" in got.reason


def test_a_release_by_a_machine_user_needs_the_charters_release_bots(tmp_path: Path) -> None:
    fx = next(f for f in load("genuine") if f.name == "node-legacy-no-manifest-machine-user")
    before, after = build(fx, tmp_path / "repo")
    key = str(tmp_path / "repo")
    b = snapshot(repo_part({"origin": remote({MAIN: before}, url=GH_URL)}, releases=[]), key)
    a = snapshot(repo_part({"origin": remote({MAIN: after, "refs/tags/v2.7.1": after},
                                             url=GH_URL)},
                           releases=[release("v2.7.1", author=fx.author)]), key)
    history = gather_history(b, a, [], fetch=False)
    without = judge(b, a, charter(grants=["acme/widgets"]), history, ())
    assert commit_finding(without, after).verdict == UNGRANTED
    with_bot = judge(b, a, charter(grants=["acme/widgets"], release_bots=[fx.author]),
                     history, ())
    assert commit_finding(with_bot, after).verdict == RELEASE_PLEASE


def test_an_edited_blob_cannot_make_code_read_as_a_version_bump(tmp_path: Path) -> None:
    """The run controls its object store: a blob file rewritten in the clone so that the new
    setup.py reads as the old one with its version bumped would pass, if blobs were read as
    git serves them. Each is hashed against the name its checked tree gives it."""
    fx = next(f for f in load("probes") if f.name == "probe-setup-py-os-system")
    repo = tmp_path / "repo"
    before, after = build(fx, repo, loose=True)
    honest = next(f for f in load("genuine") if f.name == "python-setup-py-version-var")
    new = next(f["after"] for f in honest.files if f["path"] == "setup.py").encode()
    blob = git(repo, "rev-parse", f"{after}:setup.py").strip()
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(new) + new))
    assert git(repo, "cat-file", "blob", blob).encode() == new  # git serves the forgery
    got = commit_finding(released(fx, repo, before, after), after)
    assert got.verdict == UNGRANTED and "setup.py" in got.reason
    assert "could not be read" in got.reason


def _calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> list[str]:
    """The git commands gathering and judging `n` release-shaped commits start."""
    fx = next(f for f in load("genuine") if f.name == "python-version-py-minor")
    repo = tmp_path / f"repo{n}"
    before, tip = build(fx, repo)
    for i in range(n - 1):
        (repo / "CHANGELOG.md").write_text(f"# Changelog\n\n## {i}\n")
        git(repo, "add", "CHANGELOG.md")
        git(repo, "commit", "-q", "-m", f"chore(main): release 3.7.{i + 1}")
    after = git(repo, "rev-parse", "HEAD").strip()
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / f"shim{n}"
    shim.mkdir()
    log = tmp_path / f"calls{n}"
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (shim / "git").chmod(0o755)
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{path}")
    findings = released(fx, repo, before, after)
    monkeypatch.setenv("PATH", path)
    assert len([f for f in findings if f.kind == "commit"]) == n
    return [line.split()[-1] if "cat-file" in line else line.split(" ")[0]
            for line in log.read_text().splitlines()]


def test_git_processes_do_not_grow_with_release_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _calls(tmp_path, monkeypatch, 2) == _calls(tmp_path, monkeypatch, 20)
