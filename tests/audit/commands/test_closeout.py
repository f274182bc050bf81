"""closeout, compare and report as a user runs them: real run directories, real remotes, the
real pre-recorded push log, GitHub releases from a GitHub-shaped test server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    commit,
    enterprise_remote,
    env_with,
    gh_activity,
    gh_release,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
)
from pytest_httpserver import HTTPServer
from werkzeug import Response

from audit.evidence.rundir import AFTER, BEFORE, PUSH_LOG, REPORT_JSON, REPORT_TXT
from audit.main import main as audit_main

FINDING_KEYS = {"repo", "remote", "ref", "kind", "before", "after", "commit", "verdict", "reason"}
VERDICTS = {"PUSH_LOGGED", "BACKLOG_ONLY", "RELEASE_PLEASE", "FOREIGN", "UNGRANTED",
            "NON_FAST_FORWARD", "UNVERIFIED"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def arm(tmp_path: Path, charter_text: str | None = None) -> tuple[Path, Path, Path | None]:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    charter: Path | None = None
    args = ["begin", str(clone), "--run-dir", str(run_dir)]
    if charter_text is not None:
        charter = tmp_path / "charter.md"
        charter.write_text(charter_text)
        args += ["--charter", str(charter)]
    assert audit_main(args) == 0
    return clone, run_dir, charter


def push_logged(clone: Path, run_dir: Path, ref: str = "refs/heads/main") -> None:
    old = git(clone, "ls-remote", "origin", ref).split()[0]
    new = rev(clone, "HEAD")
    git(clone, "push", "-q", "origin", f"HEAD:{ref}")
    assert audit_main(["record-push", "--repo", str(clone), "--ref", ref, "--old", old,
                       "--new", new, "--run-dir", str(run_dir)]) == 0


def check_report_shape(data: dict[str, Any]) -> None:
    assert set(data) == {"ok", "verdict", "findings"}
    assert isinstance(data["ok"], bool) and data["verdict"] in ("pass", "fail", "could_not_check")
    assert data["ok"] == (data["verdict"] == "pass")
    for f in data["findings"]:
        assert set(f) == FINDING_KEYS
        assert f["verdict"] in VERDICTS
        assert all(isinstance(f[k], str) for k in ("repo", "remote", "ref", "kind", "reason"))
        assert all(f[k] is None or isinstance(f[k], str) for k in ("before", "after", "commit"))


def test_closeout_writes_both_reports_and_report_reprints_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, run_dir, _ = arm(tmp_path)
    commit(clone, "src/a.py", "a\n", "work")
    push_logged(clone, run_dir)
    commit(clone, "backlog/tasks/task-1.md", "done\n", "task done")
    git(clone, "push", "-q", "origin", "main")  # unlogged, but backlog-only
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[-1] == "audit: 4 findings, 0 failing"
    # HEAD, main, two commits beneath main, a note (the bare remote keeps no journal), summary
    assert len(lines) == 6
    assert lines[4].startswith(f"note: [{clone.resolve()}] origin: net change only (no journal")
    assert lines[1].startswith(f"[{clone.resolve()}] origin refs/heads/main: branch moved ")
    assert "[BACKLOG_ONLY] fast-forward; 2 commits: 1 BACKLOG_ONLY, 1 PUSH_LOGGED" in lines[1]
    prefix = f"    [{clone.resolve()}] origin refs/heads/main: commit "
    assert lines[2].startswith(prefix) and lines[3].startswith(prefix)
    assert {"[PUSH_LOGGED]" in lines[2] or "[PUSH_LOGGED]" in lines[3],
            "[BACKLOG_ONLY]" in lines[2] or "[BACKLOG_ONLY]" in lines[3]} == {True}
    for name in (AFTER, REPORT_JSON, REPORT_TXT):
        assert (run_dir / name).exists()
    assert (run_dir / REPORT_TXT).read_text() == out
    data = json.loads((run_dir / REPORT_JSON).read_text())
    check_report_shape(data)
    assert data["ok"] is True and len(data["findings"]) == 4
    assert audit_main(["report", "--run-dir", str(run_dir)]) == 0
    assert capsys.readouterr().out == out


def test_closeout_fails_on_an_unlogged_push_and_report_keeps_the_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, run_dir, _ = arm(tmp_path)
    commit(clone, "src/a.py", "a\n", "sneaky")
    git(clone, "push", "-q", "origin", "main")
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    check_report_shape(data)
    assert data["verdict"] == "fail"
    assert [f["verdict"] for f in data["findings"]] == ["UNGRANTED"] * 3
    assert audit_main(["report", "--run-dir", str(run_dir)]) == 1
    assert capsys.readouterr().out.endswith("audit: 3 findings, 3 failing\n")


def test_no_changes_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, run_dir, _ = arm(tmp_path)
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "audit: no remote changes"
    # The bare remote keeps no journal: what happened between the arm and now is not known.
    assert len(out) == 2 and "origin: net change only (no journal at " in out[0]


def test_a_changed_charter_is_refused_before_anything_is_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, run_dir, charter = arm(tmp_path, "# Charter: o/n loop1\nauthority: release-please o/n\n")
    assert charter is not None
    charter.write_text("# Charter: o/n loop1\nauthority: release-please o/n, "
                       "release-please evil/other\n")
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter)]) == 2
    assert "charter changed since begin" in capsys.readouterr().err
    assert not (run_dir / AFTER).exists() and not (run_dir / REPORT_JSON).exists()


def test_charter_must_match_what_begin_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, run_dir, charter = arm(tmp_path, "# Charter: o/n loop1\nsession: s1\n")
    assert charter is not None
    assert audit_main(["closeout", "--run-dir", str(run_dir)]) == 2  # armed with one: needed
    assert "pass that same file with --charter" in capsys.readouterr().err
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter)]) == 0
    other_dir = tmp_path / "run2"
    clone2, _ = make_repo_with_remote(tmp_path, "second")
    assert audit_main(["begin", str(clone2), "--run-dir", str(other_dir)]) == 0
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(other_dir), "--charter", str(charter)]) == 2
    assert "recorded no charter" in capsys.readouterr().err


def test_compare_refuses_an_unknown_grant(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    clone, run_dir, _ = arm(tmp_path)
    charter = tmp_path / "odd.md"
    charter.write_text("# Charter: o/n loop1\nauthority: deploy-prod o/n\n")
    before = json.loads((run_dir / BEFORE).read_text())
    before["charter_sha256"] = hashlib.sha256(charter.read_bytes()).hexdigest()
    (tmp_path / "before.json").write_text(json.dumps(before))
    assert audit_main(["snapshot", "--out", str(tmp_path / "after.json"), str(clone)]) == 0
    capsys.readouterr()
    assert audit_main(["compare", str(tmp_path / "before.json"), str(tmp_path / "after.json"),
                       "--charter", str(charter)]) == 2
    assert "unknown grant 'deploy-prod'" in capsys.readouterr().err


def test_a_malformed_push_log_fails_closed_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, run_dir, _ = arm(tmp_path)
    commit(clone, "src/a.py", "a\n", "work")
    push_logged(clone, run_dir)
    with (run_dir / PUSH_LOG).open("a") as fh:
        fh.write('{"repo": "/x", "remote": "origin"\n')
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{run_dir / PUSH_LOG}:2: malformed push-log line" in err
    assert not (run_dir / REPORT_JSON).exists()
    assert audit_main(["report", "--run-dir", str(run_dir)]) == 2
    assert "no report" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert audit_main(["closeout"]) == 2
    assert "no run directory" in capsys.readouterr().err
    assert audit_main(["closeout", "--run-dir", str(tmp_path / "empty")]) == 2
    assert "run `loop-pi-audit begin` first" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert audit_main(["compare", str(tmp_path / "bad.json"), str(tmp_path / "bad.json")]) == 2
    assert "malformed snapshot JSON" in capsys.readouterr().err
    clone, run_dir, _ = arm(tmp_path)
    assert audit_main(["closeout", "--run-dir", str(run_dir),
                       "--push-log", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such push log" in capsys.readouterr().err


def test_a_mistyped_run_dir_is_refused_and_never_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only `begin` makes a run directory: `closeout` or `report` of a mistyped one says so and
    leaves no empty directory (with a lock file in it) behind to be mistaken for a run."""
    typo = tmp_path / "runs" / "lop7"
    assert audit_main(["closeout", "--run-dir", str(typo)]) == 2
    assert f"run directory {typo} does not exist" in capsys.readouterr().err
    assert not typo.exists()
    assert audit_main(["report", "--run-dir", str(typo)]) == 2
    assert "no report" in capsys.readouterr().err
    assert not typo.exists() and not typo.parent.exists()


def test_compare_json_is_byte_identical_and_valid(tmp_path: Path) -> None:
    clone, run_dir, _ = arm(tmp_path)
    commit(clone, "src/a.py", "a\n", "logged")
    push_logged(clone, run_dir)
    commit(clone, "src/b.py", "b\n", "not logged")
    git(clone, "push", "-q", "origin", "main", "HEAD:refs/heads/extra")
    git(clone, "tag", "v9")
    after = tmp_path / "after.json"
    assert audit_main(["snapshot", "--out", str(after), str(clone)]) == 0
    args = ["compare", str(run_dir / BEFORE), str(after), "--push-log",
            str(run_dir / PUSH_LOG), "--json"]
    first, second = run_cli(*args), run_cli(*args)
    assert first.returncode == second.returncode == 1, first.stderr
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    check_report_shape(data)
    assert list(data) == ["findings", "ok", "verdict"]  # sorted keys, as in every run
    kinds = {(f["ref"], f["kind"]): f["verdict"] for f in data["findings"]}
    assert kinds[("refs/heads/extra", "branch-added")] == "UNGRANTED"
    assert kinds[("refs/tags/v9", "tag-added")] == "UNGRANTED"
    text = run_cli(*args[:-1])
    assert text.returncode == 1
    assert len(text.stdout.splitlines()) == len(data["findings"]) + 1
    failing = sum(f["verdict"] == "UNGRANTED" for f in data["findings"])
    assert failing == 5  # HEAD, main, its unlogged commit, the new branch, the local tag
    assert text.stdout.splitlines()[-1] == f"audit: {len(data['findings'])} findings, 5 failing"


def test_unverified_without_violation_exits_3(tmp_path: Path) -> None:
    clone, run_dir, _ = arm(tmp_path)
    after = json.loads((run_dir / BEFORE).read_text())
    key = str(clone.resolve())
    after["repos"][key]["tags"] = {"available": False, "reason": "for-each-ref failed"}
    (tmp_path / "after.json").write_text(json.dumps(after))
    done = run_cli("compare", str(run_dir / BEFORE), str(tmp_path / "after.json"), "--json")
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["verdict"] == "could_not_check"


# --- a real release-please release read from a GitHub-shaped server ----------------------------

OWNER_NAME = "octo/widgets"


def test_closeout_passes_a_granted_release_please_release_from_the_api(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    # The repository as release-please left it at its last release.
    (clone / ".release-please-manifest.json").write_text('{".": "1.9.0"}\n')
    (clone / "pyproject.toml").write_text('[project]\nversion = "1.9.0"\n')
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "chore(main): release 1.9.0 (#40)")
    git(clone, "push", "-q", "origin", "main")
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, OWNER_NAME)
    served: list[dict[str, Any]] = []
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/releases").respond_with_handler(
        lambda request: Response(json.dumps(served), content_type="application/json"))
    # The repository's activity: the release commit's push, by the bot's merge.
    steps: list[dict[str, Any]] = []
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_handler(
        lambda request: Response(json.dumps(steps), content_type="application/json"))
    charter = tmp_path / "charter.md"
    charter.write_text(f"# Charter: {OWNER_NAME} loop3\nauthority: release-please {OWNER_NAME}\n")
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--charter", str(charter),
                       "--run-dir", str(run_dir)]) == 0
    # release-please: the release commit lands (merged release PR), then the API creates the
    # release and, server-side, its lightweight tag. None of it is the run's push.
    (clone / "CHANGELOG.md").write_text("## 2.0.0\n")
    (clone / ".release-please-manifest.json").write_text('{".": "2.0.0"}\n')
    (clone / "pyproject.toml").write_text('[project]\nversion = "2.0.0"\n')
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "chore(main): release 2.0.0 (#41)")
    old = git(clone, "ls-remote", "origin", "refs/heads/main").split()[0]
    git(clone, "push", "-q", "origin", "main", "HEAD:refs/tags/v2.0.0")
    steps.append(gh_activity(1, "refs/heads/main", old, rev(clone, "HEAD"), "pr_merge",
                             "release-please[bot]", "2999-01-01T00:00:00Z"))
    served.append(gh_release(api, OWNER_NAME, 99, "v2.0.0"))
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter),
                       "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    got = {(f["ref"], f["kind"]): f["verdict"] for f in data["findings"]}
    assert got[("refs/tags/v2.0.0", "tag-added")] == "RELEASE_PLEASE"
    assert got[("releases/v2.0.0", "release-added")] == "RELEASE_PLEASE"
    assert [f["verdict"] for f in data["findings"] if f["kind"] == "commit"] == [
        "RELEASE_PLEASE"]
    # The same release made by a person is no release-please release.
    served[0] = gh_release(api, OWNER_NAME, 99, "v2.0.0", author="octocat")
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter)]) == 1
    assert "made by octocat" in capsys.readouterr().out


# --- cost: git processes grow with refs, never with commits -----------------------------------

def counting_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    real = shutil.which("git")
    assert real is not None
    bindir = tmp_path / "shim"
    bindir.mkdir()
    count = tmp_path / "git-calls"
    shim = bindir / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{count}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return env_with(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}"), count


def closeout_git_calls(tmp_path: Path, n: int) -> list[str]:
    """The git commands one closeout starts when main gained `n` unlogged commits. The counting
    git is the one `begin` finds, so it is the one closeout runs (a git put first on PATH
    later would not be)."""
    env, count = counting_git(tmp_path)
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begun = run_cli("begin", str(clone), "--run-dir", str(run_dir), env=env)
    assert begun.returncode == 0, begun.stderr
    count.unlink()
    lines = [f"commit refs/heads/main\ncommitter T <t@x> {1700000000 + i} +0000\n"
             f"data 2\nc\nM 644 inline f{i}.txt\ndata 2\n{i % 10}\n" for i in range(n)]
    head = rev(clone, "HEAD")
    git(clone, "fast-import", "--quiet",
        input=f"reset refs/heads/main\nfrom {head}\n\n" + "".join(lines))
    git(clone, "push", "-q", "origin", "main")  # unlogged
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json", env=env)
    assert done.returncode == 1, done.stderr
    assert len(json.loads(done.stdout)["findings"]) == n + 2
    return [git_verb(c.split()) for c in count.read_text().splitlines()]


def git_verb(argv: list[str]) -> str:
    """`status` from `-C dir -c k=v --no-replace-objects status ...`."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-C", "-c") else 1
    return argv[i] if i < len(argv) else ""


def test_git_processes_do_not_grow_with_commits(tmp_path: Path) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small = closeout_git_calls(tmp_path / "small", 3)
    big = closeout_git_calls(tmp_path / "big", 300)
    assert small == big
    # The judgement's own share: one cat-file for every tip, one rev-list (a fast-forward is
    # read off its graph; merge-base only when the graph cannot settle it), one log of what the
    # commits no log entry covers change, one cat-file that checks every commit against its
    # name, and one of the trees and blobs the commits judged by what they change rest on
    # (gathered before anything is judged, so for a failing branch too).
    assert [c for c in big if c in ("cat-file", "merge-base", "log", "fetch", "rev-list")] == [
        "cat-file", "rev-list", "log", "cat-file", "cat-file"]


# --- the whole loop with the real pre-push hook -------------------------------------------------

def test_a_run_with_the_real_hook_pushes_logged_and_a_no_verify_push_caught(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone, run_dir, charter = arm(tmp_path, "# Charter: o/n loop2\nsession: s-run\n")
    assert charter is not None
    assert audit_main(["hook", "install", str(clone), "--run-dir", str(run_dir)]) == 0
    monkeypatch.setenv("LOOP_PI_RUN_DIR", str(run_dir))
    done = commit(clone, "src/a.py", "a\n", "feature", trailers=[("Claude-Session", "s-run")])
    git(clone, "push", "-q", "origin", "main")  # through the hook: logged
    git(clone, "push", "-q", "origin", "main:refs/heads/topic")  # logged branch creation
    capsys.readouterr()
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter)]) == 0
    # A commit a logged push covers is judged by the log alone: its subject is not even read.
    assert "[PUSH_LOGGED] in logged push" in capsys.readouterr().out
    assert done in (run_dir / REPORT_JSON).read_text()
    hidden = commit(clone, "src/b.py", "b\n", "skips the hook")
    git(clone, "push", "-q", "--no-verify", "origin", "main")  # the hook never ran
    assert audit_main(["closeout", "--run-dir", str(run_dir), "--charter", str(charter),
                       "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {f["commit"]: f["verdict"] for f in data["findings"] if f["commit"]} == {
        done: "PUSH_LOGGED", hidden: "UNGRANTED"}


def test_a_refused_closeout_leaves_no_earlier_report_behind(tmp_path: Path) -> None:
    """`report` prints the last report the ledger recorded; after a closeout that failed closed
    (exit 2) an earlier pass must not be re-printed as this run's verdict. A run directory is
    armed once: a new run is a new directory."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("closeout", "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("report", "--run-dir", str(run_dir)).returncode == 0
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/unlogged")
    (run_dir / "push-log.jsonl").write_text("not json\n")
    refused = run_cli("closeout", "--run-dir", str(run_dir))
    assert refused.returncode == 2 and "push-log.jsonl:1:" in refused.stderr
    assert run_cli("report", "--run-dir", str(run_dir)).returncode == 2

    (run_dir / "push-log.jsonl").unlink()
    assert run_cli("closeout", "--run-dir", str(run_dir)).returncode == 1
    assert run_cli("report", "--run-dir", str(run_dir)).returncode == 1
    again = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert again.returncode == 2 and "already armed at " in again.stderr
    assert run_cli("report", "--run-dir", str(run_dir)).returncode == 1


def test_compare_of_snapshot_files_takes_a_charter(tmp_path: Path) -> None:
    """`snapshot --out` records no charter: `compare --charter` judges by the named file."""
    clone, _ = make_repo_with_remote(tmp_path)
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert run_cli("snapshot", "--out", str(before), str(clone)).returncode == 0
    assert json.loads(before.read_text())["charter_sha256"] is None
    commit(clone, "backlog/tasks/task-1 - x.md", "x\n", "backlog only")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    assert run_cli("snapshot", "--out", str(after), str(clone)).returncode == 0
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: o/n loop1\nauthority: release-please o/n\n")
    judged = run_cli("compare", str(before), str(after), "--charter", str(charter), "--json")
    assert judged.returncode == 0, judged.stderr
    assert {f["verdict"] for f in json.loads(judged.stdout)["findings"]} == {"BACKLOG_ONLY"}
    bad = tmp_path / "bad.md"
    bad.write_text("# Charter: o/n loop1\nauthority: deploy-anything o/n\n")
    refused = run_cli("compare", str(before), str(after), "--charter", str(bad))
    assert refused.returncode == 2 and "deploy-anything" in refused.stderr


def test_compare_without_the_armed_charter_grants_nothing(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: o/n loop1\nauthority: release-please o/n\n")
    assert run_cli("begin", str(clone), "--charter", str(charter),
                   "--run-dir", str(run_dir)).returncode == 0
    after = tmp_path / "after.json"
    assert run_cli("snapshot", "--out", str(after), str(clone)).returncode == 0
    judged = run_cli("compare", str(run_dir / "audit-before.json"), str(after))
    assert judged.returncode == 0 and judged.stdout.strip() == "audit: no remote changes"
    # closeout stays strict: the run was armed with a charter.
    refused = run_cli("closeout", "--run-dir", str(run_dir))
    assert refused.returncode == 2 and "--charter" in refused.stderr
