"""A run that controls its own clone must not be able to make its own evidence (issue 10).

Each test builds the attack for real: a clone, a bare remote, pushes, and whatever the run could
edit in its clone (its config, `.gitmodules`, `.git/info/grafts`, hooks). Each was a false pass,
or a wrong verdict, before the hardened git layer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    GH,
    ZERO,
    Run,
    commit,
    commit_verdicts,
    enterprise_remote,
    env_with,
    gh_asset,
    gh_release,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
    verdicts,
)
from pytest_httpserver import HTTPServer
from werkzeug import Response

from audit.main import main as audit_main
from audit.model import (
    BACKLOG_ONLY,
    NON_FAST_FORWARD,
    PUSH_LOGGED,
    RELEASE_PLEASE,
    UNGRANTED,
    UNVERIFIED,
    exit_code,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def branch_verdict(findings: list, ref: str = "refs/heads/main") -> str:  # type: ignore[type-arg]
    return next(f.verdict for f in findings if f.ref == ref and f.kind.startswith("branch-"))


# --- one git layer, one behaviour: the repository is the one named ---------------------------

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


# --- history that depends on nothing the run could edit ---------------------------------------

def test_grafts_cannot_turn_a_rewrite_into_a_fast_forward(tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    kept = commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    # Rewrite: a new commit on the old base with the same tree plus a backlog change, so that
    # with a graft naming `kept` as its parent it reads as a backlog-only fast-forward.
    git(run.clone, "checkout", "-q", "-b", "rewrite", base)
    git(run.clone, "checkout", "-q", kept, "--", ".")
    commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    forged = rev(run.clone, "HEAD")
    run.push("rewrite", force=True, logged=False)
    grafts = run.clone / ".git" / "info" / "grafts"
    grafts.parent.mkdir(exist_ok=True)
    grafts.write_text(f"{forged} {kept}\n")
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_an_ignored_submodule_gitlink_is_not_backlog_only(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sub_a, sub_b = "1" * 40, "2" * 40
    (run.clone / ".gitmodules").write_text(
        '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\tignore = all\n')
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{sub_a},vendor/lib")
    git(run.clone, "add", ".gitmodules")
    git(run.clone, "commit", "-q", "-m", "vendor lib")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "update-index", "--cacheinfo", f"160000,{sub_b},vendor/lib")
    moved = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task (and a gitlink)")
    git(run.clone, "config", "diff.ignoreSubmodules", "all")
    git(run.clone, "config", "submodule.lib.ignore", "all")
    run.push(logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {moved: UNGRANTED}
    assert "vendor/lib" in next(f for f in findings if f.commit == moved).reason


def test_a_utf16_log_encoding_does_not_blur_ungranted_into_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    git(run.clone, "config", "i18n.logOutputEncoding", "UTF-16")
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}
    assert exit_code(findings) == 1


def test_a_configured_upload_pack_cannot_serve_an_untouched_mirror(tmp_path: Path) -> None:
    run = Run(tmp_path)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(run.bare), str(mirror))
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    script = tmp_path / "fake-upload-pack"
    script.write_text(f'#!/bin/sh\nexec git-upload-pack "{mirror}"\n')
    script.chmod(0o755)
    git(run.clone, "config", "remote.origin.uploadpack", str(script))
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}


def test_a_trailer_separator_setting_cannot_forge_another_session(tmp_path: Path) -> None:
    run = Run(tmp_path, session="mine")
    # "Claude-Session= other" is no trailer under git's default separator (":").
    forged = commit(run.clone, "src/x.py", "x\n", "forged", trailers=())
    git(run.clone, "commit", "-q", "--amend", "-m", "forged\n\nClaude-Session= other")
    forged = rev(run.clone, "HEAD")
    run.push(logged=False)
    commit(run.clone, "src/y.py", "y\n", "mine on top", trailers=[("Claude-Session", "mine")])
    run.push()
    git(run.clone, "config", "trailer.separators", ":=")
    findings = run.judge()
    assert commit_verdicts(findings)[forged] == UNGRANTED


def test_closeout_runs_none_of_the_clones_hooks_when_it_fetches(tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(run.bare), str(other))
    commit(other, "backlog/tasks/task-1.md", "x\n", "from elsewhere")
    git(other, "push", "-q", "origin", "main")
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    for name in ("reference-transaction", "post-checkout", "post-merge"):
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
        hook.chmod(0o755)
    git(run.clone, "config", "core.hooksPath", str(hooks))
    findings = run.judge()
    assert verdicts(findings)[("refs/heads/main", "branch-moved")] == BACKLOG_ONLY
    assert not marker.exists()


def test_a_replaced_commit_is_judged_as_itself(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    git(run.clone, "checkout", "-q", "-b", "decoy", "HEAD~1")
    decoy = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "decoy")
    git(run.clone, "replace", sneaky, decoy)
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}


def test_hardened_reads_carry_every_neutralising_option() -> None:
    from jobs.git.hardened import HARDENED_CONFIG, hardened_argv
    argv = hardened_argv("log")
    assert "--no-replace-objects" in argv
    pairs = dict(HARDENED_CONFIG)
    for key, value in (("core.commitGraph", "false"), ("diff.ignoreSubmodules", "none"),
                       ("i18n.logOutputEncoding", "UTF-8"), ("log.showSignature", "false"),
                       ("trailer.separators", ":"), ("diff.relative", "false"),
                       ("core.hooksPath", "/dev/null")):
        assert pairs[key] == value
        assert f"{key}={value}" in argv


# --- merges against every parent --------------------------------------------------------------

def test_a_merge_is_judged_against_every_parent(tmp_path: Path) -> None:
    run = Run(tmp_path)
    old = rev(run.clone, "HEAD")
    commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "checkout", "-q", "-b", "side", old)
    side = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    # A merge that keeps only the old side: auth.py silently leaves main.
    git(run.clone, "merge", "-q", "-s", "ours", "--no-commit", "main")
    (run.clone / "backlog" / "tasks" / "task-2.md").write_text("y\n")
    git(run.clone, "add", ".")
    git(run.clone, "commit", "-q", "-m", "merge")
    merge = rev(run.clone, "HEAD")
    run.push("side", logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {side: BACKLOG_ONLY, merge: UNGRANTED}
    assert "src/auth.py" in next(f for f in findings if f.commit == merge).reason


# --- rewrites in the middle of a run ----------------------------------------------------------

def test_a_logged_force_push_in_the_middle_fails_even_when_the_net_is_a_fast_forward(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    commit(run.clone, "src/theirs.py", "x\n", "another session's work")
    run.push()
    git(run.clone, "checkout", "-q", "-b", "mine", base)
    commit(run.clone, "src/mine.py", "y\n", "mine")
    run.push("mine", force=True)
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_deleting_the_default_branch_fails_even_when_logged(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/keep")
    run.before = run.snapshot()
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/keep")
    run.push("", "refs/heads/main")
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/main")
    commit(run.clone, "src/x.py", "x\n", "again")
    run.push()
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_a_logged_push_whose_old_tip_is_not_in_the_clone_is_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    before = rev(run.clone, "HEAD")
    commit(run.clone, "src/x.py", "x\n", "x")
    new = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "main")
    run.record("refs/heads/main", before, new)
    run.record("refs/heads/main", "f" * 40, new)  # a rewrite from a tip nobody can see
    findings = run.judge()
    assert branch_verdict(findings) == UNVERIFIED


# --- one URL, many remote names ---------------------------------------------------------------

def test_a_push_through_one_remote_covers_another_remote_with_the_same_url(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "remote", "add", "mirror", str(run.bare))
    git(run.clone, "fetch", "-q", "mirror")
    run.before = run.snapshot()
    pushed = commit(run.clone, "src/x.py", "x\n", "x")
    run.push(remote="mirror")
    findings = run.judge()
    assert {f.verdict for f in findings} == {PUSH_LOGGED}
    assert {f.remote for f in findings if f.commit == pushed} == {"origin", "mirror"}


def test_insteadof_makes_two_urls_one_remote(tmp_path: Path) -> None:
    run = Run(tmp_path)
    git(run.clone, "remote", "add", "short", "srv:work-remote.git")
    git(run.clone, "config", f"url.{tmp_path}/.insteadOf", "srv:")
    run.before = run.snapshot()
    commit(run.clone, "src/x.py", "x\n", "x")
    run.push(remote="short")
    findings = run.judge()
    assert exit_code(findings) == 0, [f.reason for f in findings]


# --- no credentials in evidence ---------------------------------------------------------------

SECRET = "ghs_s3cr3tT0KEN"


def test_tokens_in_remote_urls_never_reach_snapshots_reports_or_logs(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    url = f"https://x-access-token:{SECRET}@git.example.invalid/o/n.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    run_dir = tmp_path / "run"
    env = env_with(GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig-global"), GIT_CONFIG_NOSYSTEM="1")
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir), env=env).returncode == 0
    commit(clone, "src/x.py", "x\n", "x")
    git(clone, "push", "-q", "origin", "main")  # unlogged
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")
    # Logged by URL, token and all, as a pre-push hook sees a `git push <url>`.
    assert run_cli("record-push", "--repo", str(clone), "--remote", url, "--ref",
                   "refs/heads/side", "--old", ZERO, "--new", rev(clone, "HEAD"),
                   "--run-dir", str(run_dir), env=env).returncode == 0
    done = run_cli("closeout", "--run-dir", str(run_dir), env=env)
    assert done.returncode == 1
    assert SECRET not in done.stdout + done.stderr
    for path in run_dir.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    snap = json.loads((run_dir / "audit-before.json").read_text())
    assert snap["repos"][str(clone.resolve())]["remotes"]["origin"]["url"] == \
        "https://***@git.example.invalid/o/n.git"
    report = json.loads(subprocess.run(
        ["cat", str(run_dir / "audit-report.json")], capture_output=True, text=True,
        check=True).stdout)
    got = {(f["ref"], f["verdict"]) for f in report["findings"]}
    # The push logged by URL (with its token) covers the remote named by the same URL.
    assert ("refs/heads/side", PUSH_LOGGED) in got


# --- release assets ---------------------------------------------------------------------------

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


def asset(name: str, uploader: str = "github-actions[bot]", digest: str = "a") -> dict[str, Any]:
    return {"id": 1, "name": name, "size": 10, "digest": "sha256:" + digest * 64,
            "updated_at": "2026-11-30T07:20:00Z", "uploader": uploader}


def rp_release(tag: str, assets: list[dict[str, Any]], author: str = "release-please[bot]"
               ) -> dict[str, Any]:
    return {"id": 11, "tag_name": tag, "name": tag, "draft": False, "prerelease": False,
            "author": author, "target_commitish": "main", "created_at": "2026-11-30T07:10:00Z",
            "published_at": "2026-11-30T07:10:00Z", "repo": GH, "assets": assets}


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


# --- big runs read well -----------------------------------------------------------------------

def test_consecutive_passing_commits_are_one_finding_failing_ones_stay_alone(
        tmp_path: Path) -> None:
    from audit.report import render_json, render_text

    run = Run(tmp_path)
    logged = [commit(run.clone, f"src/l{i}.py", "x\n", f"logged {i}") for i in range(3)]
    run.push()
    tasks = [commit(run.clone, f"backlog/tasks/task-{i}.md", "x\n", f"task {i}")
             for i in range(2)]
    bad = [commit(run.clone, f"src/b{i}.py", "x\n", f"bad {i}") for i in range(2)]
    run.push(logged=False)
    findings = run.judge()
    text = render_text(findings)
    commit_lines = [line for line in text.splitlines() if line.startswith("    ")]
    assert len(commit_lines) == 4  # bad, bad, 2 tasks as one, 3 logged as one
    assert sum("commit " in line and "[UNGRANTED]" in line for line in commit_lines) == 2
    grouped = next(line for line in commit_lines if "3 commits" in line)
    assert f"{rev(run.clone, logged[0] + '~1')[:7]}..{logged[2][:7]}" in grouped
    assert "[PUSH_LOGGED] 3 commits in logged push" in grouped
    assert any("2 commits each changes only backlog/" in line for line in commit_lines)
    assert text.rstrip().endswith("audit: 6 findings, 4 failing")
    data = json.loads(render_json(findings))
    group = next(f for f in data["findings"] if f.get("count") == 3)
    assert (group["first"], group["last"], group["commit"]) == (logged[0], logged[2], logged[2])
    assert group["verdict"] == PUSH_LOGGED and group["kind"] == "commit"
    singles = [f for f in data["findings"] if f["kind"] == "commit" and "count" not in f]
    assert sorted(f["commit"] for f in singles) == sorted(bad)
    assert render_json(findings) == render_json(run.judge())  # byte-identical
    assert {f["commit"] for f in data["findings"] if f.get("count") == 2} == {tasks[1]}


def test_fast_writers_match_json_dumps_byte_for_byte() -> None:
    from audit.evidence.rundir import dump_json
    from audit.report import _finding_json

    odd = ["plain", "é ünïcödé", 'quote " and \\ backslash', "tab\tnew\nline\x00\x1f", "\u2028",
           "emoji 😀", ""]
    for text in odd:
        finding = {"repo": text, "remote": "origin", "ref": text, "kind": "commit",
                   "before": None, "after": "a" * 40, "commit": None, "verdict": "PUSH_LOGGED",
                   "reason": text, "count": 3, "first": text, "last": "b"}
        assert _finding_json(finding) == json.dumps(finding, sort_keys=True, ensure_ascii=False)
        snap = {"z": [text, 1, None, True, 2.5, {}, []], "a": {text: {"k": [text]}}, "e": {}}
        assert dump_json(snap) == json.dumps(snap, sort_keys=True, indent=2,
                                             ensure_ascii=False) + "\n"


def test_a_rewrite_pushed_away_and_back_fails_though_the_branch_ends_where_it_began(
        tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    commit(run.clone, "src/theirs.py", "x\n", "another session's work")
    run.push()
    git(run.clone, "reset", "-q", "--hard", base)
    run.push(force=True)  # logged: back to the start, the other commit gone from main
    findings = run.judge()
    assert verdicts(findings) == {("refs/heads/main", "branch-unchanged"): NON_FAST_FORWARD}
    assert exit_code(findings) == 1


def test_listing_outside_the_clone_keeps_its_credential_header_and_nothing_else(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    """A CI checkout keeps its token in `http.<url>.extraHeader`: ls-remote outside the clone
    still sends that Authorization header, and no other header the run could add."""
    from audit.evidence.snapshot import take_snapshot

    clone, _bare = make_repo_with_remote(tmp_path)
    url = httpserver.url_for("/o/n.git")
    git(clone, "remote", "set-url", "origin", url)
    base = httpserver.url_for("/")
    git(clone, "config", f"http.{base}.extraHeader", "AUTHORIZATION: basic c2VjcmV0")
    git(clone, "config", "--add", f"http.{base}.extraHeader", "X-Evil: 1")
    httpserver.expect_request("/o/n.git/info/refs").respond_with_data("nope", status=404)
    remote = take_snapshot([clone], charter_sha256=None)["repos"][str(clone.resolve())][
        "remotes"]["origin"]
    assert remote["available"] is False
    request = httpserver.log[0][0]
    assert request.headers.get("Authorization") == "basic c2VjcmV0"
    assert "X-Evil" not in request.headers
    assert "c2VjcmV0" not in json.dumps(remote)
