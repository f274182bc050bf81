"""Release changes as the judge sees them: assets added, replaced or deleted (covered only on a
granted release-please release by a bot), releases read from other repositories than at the
start, and a release-please release in the SPEC's own snapshot form."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    GH,
    Run,
    commit,
    enterprise_remote,
    gh_asset,
    gh_release,
    git,
    isolate_git,
    make_repo_with_remote,
    run_cli,
    verdicts,
)
from pytest_httpserver import HTTPServer
from werkzeug import Response

from audit.evidence.history import gather_history
from audit.evidence.snapshot import take_snapshot
from audit.judge.compare import judge
from audit.main import main as audit_main
from audit.model import RELEASE_PLEASE, UNGRANTED, UNVERIFIED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def asset(name: str, uploader: str = "github-actions[bot]", digest: str = "a") -> dict[str, Any]:
    return {"id": 1, "name": name, "size": 10, "digest": "sha256:" + digest * 64,
            "updated_at": "2026-11-30T07:20:00Z", "uploader": uploader}


def rp_release(tag: str, assets: list[dict[str, Any]], author: str = "release-please[bot]"
               ) -> dict[str, Any]:
    return {"id": 11, "tag_name": tag, "name": tag, "draft": False, "prerelease": False,
            "author": author, "target_commitish": "main", "created_at": "2026-11-30T07:10:00Z",
            "published_at": "2026-11-30T07:10:00Z", "repo": GH, "assets": assets}


def _contract_form(snapshot: Path, out: Path, charter_sha: str,
                   releases: list[dict[str, Any]]) -> Path:
    """The snapshot in SPEC Part 2's own JSON form: origin on GitHub, releases with exactly the
    fields the contract lists and no `github_repo`/`repo` extras."""
    snap = json.loads(snapshot.read_text())
    snap["charter_sha256"] = charter_sha
    for entry in snap["repos"].values():
        entry.pop("taken_at", None)
        entry["remotes"]["origin"]["url"] = "https://github.com/acme/widgets.git"
        entry["releases"] = {"available": True, "releases": releases}
    out.write_text(json.dumps(snap))
    return out


def test_a_replaced_release_asset_fails_closeout(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    owner_name = "octo/widgets"
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, owner_name)
    asset = gh_asset(api, owner_name, 5, "widgets.tar.gz")
    served = [gh_release(api, owner_name, 1, "v1.0.0", assets=[asset])]
    httpserver.expect_request(f"/api/v3/repos/{owner_name}/releases").respond_with_handler(
        lambda request: Response(json.dumps(served), content_type="application/json"))
    # No branch moved: the repository's activity since the arm is empty.
    httpserver.expect_request(f"/api/v3/repos/{owner_name}/activity").respond_with_json([])
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 0
    recorded = json.loads((run_dir / "audit-before.json").read_text())
    assets = recorded["repos"][str(clone.resolve())]["releases"]["releases"][0]["assets"]
    assert assets == [{"id": 5, "name": "widgets.tar.gz", "size": 1024,
                       "digest": "sha256:" + "a" * 64, "updated_at": "2026-11-29T10:06:00Z",
                       "uploader": "github-actions[bot]"}]
    # The run swaps the binary for its own: same name, same release, another digest.
    served[0] = gh_release(api, owner_name, 1, "v1.0.0", assets=[
        gh_asset(api, owner_name, 6, "widgets.tar.gz", digest="sha256:" + "b" * 64,
                 uploader="octocat", updated_at="2026-11-30T07:30:00Z")])
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["ref"], f["kind"], f["verdict"]) for f in found] == [
        ("releases/v1.0.0/assets/widgets.tar.gz", "asset-replaced", UNGRANTED)]


def test_assets_are_covered_only_on_a_granted_release_please_release_by_a_bot(
        tmp_path: Path) -> None:
    run = Run(tmp_path, github=True, authority=f"release-please {GH}")
    run.before["repos"][run.key]["releases"]["releases"] = [
        rp_release("v0.9.0", [asset("old.tar.gz"), asset("gone.zip")]),
        rp_release("v0.8.0", [], author="octocat")]
    after = run.snapshot()
    after["repos"][run.key]["releases"]["releases"] = [
        rp_release("v0.9.0", [asset("old.tar.gz"), asset("extra.whl"),
                              asset("sneak.sh", uploader="octocat")]),
        rp_release("v0.8.0", [asset("bot-on-a-person's.tar.gz")], author="octocat")]
    got = verdicts(run.judge(after))
    assert got == {
        ("releases/v0.9.0/assets/extra.whl", "asset-added"): RELEASE_PLEASE,
        ("releases/v0.9.0/assets/sneak.sh", "asset-added"): UNGRANTED,
        ("releases/v0.9.0/assets/gone.zip", "asset-deleted"): UNGRANTED,
        ("releases/v0.8.0/assets/bot-on-a-person's.tar.gz", "asset-added"): UNGRANTED,
    }
    # Without the grant, even a bot's upload to a bot's release is not covered.
    run.charter = None
    assert verdicts(run.judge(after))[
        ("releases/v0.9.0/assets/extra.whl", "asset-added")] == UNGRANTED


def test_releases_read_from_no_repository_at_closeout_are_not_no_releases(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """origin is on a GitHub Enterprise host, known by $GITHUB_API_URL. Without that variable at
    closeout (the run's environment) the after-snapshot found no GitHub remote and recorded
    releases as "not applicable": the release the run made was never read and the audit
    passed. Releases read from other repositories than at the start cannot be compared."""
    clone, bare = make_repo_with_remote(tmp_path)
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, "octo/widgets")
    httpserver.expect_request("/api/v3/repos/octo/widgets/releases").respond_with_json([])
    before = take_snapshot([clone], charter_sha256=None)
    key = str(clone.resolve())
    assert before["repos"][key]["releases"]["github_repos"] == ["octo/widgets"]
    monkeypatch.delenv("GITHUB_API_URL")
    httpserver.clear()
    httpserver.expect_request("/api/v3/repos/octo/widgets/releases").respond_with_json(
        [gh_release(api, "octo/widgets", 1, "v9", author="octocat")])
    after = take_snapshot([clone], charter_sha256=None)
    assert after["repos"][key]["releases"]["github_repos"] == []
    found = judge(before, after, None, gather_history(before, after, []), ())
    assert [(f.ref, f.kind, f.verdict) for f in found] == [
        ("releases", "releases-unavailable", UNVERIFIED)]
    assert "octo/widgets" in found[0].reason


def test_compare_reads_a_release_please_release_from_a_snapshot_in_the_contract_form(
        tmp_path: Path) -> None:
    """A snapshot written in the SPEC's form names the GitHub repository only through the
    remote's URL; a granted release-please release in it must still pass."""
    clone, _ = make_repo_with_remote(tmp_path)
    assert run_cli("snapshot", "--out", str(tmp_path / "b.json"), str(clone)).returncode == 0
    commit(clone, "CHANGELOG.md", "## 1.2.0\n", "chore(main): release 1.2.0")
    git(clone, "push", "-q", "origin", "main", "HEAD:refs/tags/v1.2.0")
    assert run_cli("snapshot", "--out", str(tmp_path / "a.json"), str(clone)).returncode == 0
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: acme/widgets loop3\nauthority: release-please acme/widgets\n")
    sha = hashlib.sha256(charter.read_bytes()).hexdigest()
    release = {"tag_name": "v1.2.0", "author": "release-please[bot]", "draft": False,
               "prerelease": False, "target_commitish": "main", "name": "v1.2.0",
               "created_at": "2026-11-30T07:00:00Z", "published_at": "2026-11-30T07:00:00Z"}
    before = _contract_form(tmp_path / "b.json", tmp_path / "before.json", sha, [])
    after = _contract_form(tmp_path / "a.json", tmp_path / "after.json", sha, [release])
    done = run_cli("compare", str(before), str(after), "--charter", str(charter), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = {(f["kind"], f["ref"]): f["verdict"] for f in json.loads(done.stdout)["findings"]}
    assert verdicts[("release-added", "releases/v1.2.0")] == "RELEASE_PLEASE"
    assert verdicts[("tag-added", "refs/tags/v1.2.0")] == "RELEASE_PLEASE"
    assert verdicts[("branch-moved", "refs/heads/main")] == "RELEASE_PLEASE"
