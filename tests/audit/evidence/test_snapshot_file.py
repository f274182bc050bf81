"""A snapshot file is input the run could have written: a value `snapshot` would not write (a ref
value that is no object name, a repository key git cannot run in, malformed assets or URLs)
makes it a malformed snapshot, exit 2 naming the file, and nothing in it reaches git."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    Run,
    compare_files,
    isolate_git,
    make_repo_with_remote,
    moved_snapshots,
    run_cli,
    write_snapshot,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def _malformed(tmp_path: Path, before: dict[str, Any], after: dict[str, Any], bad: str) -> str:
    """`compare` of the two snapshots must refuse the `bad` one ("before" or "after") as
    malformed, exit 2 naming its file; its stderr."""
    paths = {name: write_snapshot(tmp_path / f"{name}.json", snap)
             for name, snap in (("before", before), ("after", after))}
    done = run_cli("compare", str(paths["before"]), str(paths["after"]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"loop-pi-audit: {paths[bad]}: not a loop-pi-audit snapshot")
    return done.stderr


def test_a_ref_value_in_a_snapshot_file_is_an_object_name_never_a_git_option(
        tmp_path: Path) -> None:
    """The run directory is the run's to write (its push log lives there). A before-snapshot
    whose tip is `--upload-pack=CMD` was accepted and handed to `git fetch` as an option: the
    command ran. It is a malformed snapshot: exit 2, the file named, nothing run."""
    _, before, after, key = moved_snapshots(tmp_path)
    marker = tmp_path / "ran"
    before["repos"][key]["remotes"]["origin"]["refs"]["refs/heads/main"] = (
        f"--upload-pack=touch {marker}; git-upload-pack")
    stderr = _malformed(tmp_path, before, after, bad="before")
    assert not marker.exists()
    assert "refs/heads/main" in stderr


@pytest.mark.parametrize("part", ["tags", "symref-target"])
def test_local_tag_values_and_symref_targets_must_be_well_formed_too(
        tmp_path: Path, part: str) -> None:
    _, before, after, key = moved_snapshots(tmp_path)
    if part == "tags":
        before["repos"][key]["tags"]["tags"]["refs/tags/v1"] = "v1"
    else:
        before["repos"][key]["remotes"]["origin"]["symrefs"]["HEAD"] = "main"
    _malformed(tmp_path, before, after, bad="before")


@pytest.mark.parametrize("assets", [True, 1.5, {"a.tgz": {"name": "a.tgz"}}, ["a.tgz"],
                                    [{"size": 1}]])
def test_a_release_with_malformed_assets_is_a_malformed_snapshot(
        tmp_path: Path, assets: object) -> None:
    """`assets: true` crashed the judgement (exit 3, "unexpected error"); an object or a list of
    names was read as no assets at all, so a snapshot could silently hold fewer of them."""
    _, before, after, key = moved_snapshots(tmp_path)
    for snap in (before, after):
        snap["repos"][key]["releases"] = {
            "available": True, "github_repo": "acme/widgets", "github_repos": ["acme/widgets"],
            "releases": [{"tag_name": "v1", "draft": False, "prerelease": False,
                          "author": "release-please[bot]", "repo": "acme/widgets",
                          "assets": []}]}
    after["repos"][key]["releases"]["releases"][0]["assets"] = assets
    assert "assets" in _malformed(tmp_path, before, after, bad="after")


def test_a_snapshot_keyed_by_a_path_git_cannot_run_in_is_malformed(tmp_path: Path) -> None:
    """A snapshot's repository key is the path closeout runs git in: one holding a NUL was a
    traceback (exit 3), a relative one would be read from wherever compare runs. Both are a
    malformed snapshot: exit 2, the file named."""
    run = Run(tmp_path)
    after = run.snapshot()
    for bad in ("/tmp/x\u0000y", "relative/clone"):
        before = json.loads(json.dumps(run.before))
        before["repos"][bad] = before["repos"].pop(run.key)
        code, _, err, b, _ = compare_files(tmp_path, before, after, run.log)
        assert code == 2, err
        assert err.startswith(f"loop-pi-audit: {b}: not a loop-pi-audit snapshot: repository "
                              f"key {bad!r} is not an absolute path"), err


def test_a_snapshot_with_mistyped_remote_urls_is_refused_not_a_traceback(tmp_path: Path) -> None:
    """A malformed snapshot exits 2 with the file named; a traceback would exit 1, which reads
    as "a violation was found"."""
    clone, _ = make_repo_with_remote(tmp_path)
    good = tmp_path / "good.json"
    assert run_cli("snapshot", "--out", str(good), str(clone)).returncode == 0
    for field, value in (("pushurls", None), ("url", ["x"])):
        snap = json.loads(good.read_text())
        for entry in snap["repos"].values():
            entry["remotes"]["origin"][field] = value
        bad = tmp_path / f"bad-{field}.json"
        bad.write_text(json.dumps(snap))
        done = run_cli("compare", str(bad), str(good))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"loop-pi-audit: {bad}: not a loop-pi-audit snapshot")
        assert "Traceback" not in done.stderr
