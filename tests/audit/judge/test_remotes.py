"""Regression checks from a review of loop-pi-audit against SPEC Part 2, run as a user would:
real clones, real bare remotes, real pushes, the real command line."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import commit, git, isolate_git, make_repo_with_remote, run_cli


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Review")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "review@example.com")


def test_summary_says_findings_even_for_one(tmp_path: Path) -> None:
    """SPEC: the summary line is `audit: N findings, K failing`, whatever N is."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")  # one unlogged ref: one finding
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"
    again = run_cli("report", "--run-dir", str(run_dir))
    assert again.returncode == 1
    assert again.stdout.splitlines()[-1] == "audit: 1 findings, 1 failing"


def test_a_logged_push_to_a_remote_no_snapshot_holds_is_unverified(tmp_path: Path) -> None:
    """`git push <url>` to a repository that is no configured remote: the hook logs it, yet no
    snapshot looked there. The audit cannot say "no remote changes" and pass."""
    clone, _ = make_repo_with_remote(tmp_path)
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other))
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/secret.py", "x\n", "sent elsewhere")
    git(clone, "push", "-q", str(other), "main")
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["verdict"] == "could_not_check"
    [finding] = data["findings"]
    assert (finding["kind"], finding["remote"], finding["verdict"]) == (
        "remote-unaudited", str(other), "UNVERIFIED")


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


def test_a_refused_closeout_or_a_new_begin_leaves_no_earlier_report_behind(
        tmp_path: Path) -> None:
    """`report` re-prints the last report; after a closeout that failed closed (exit 2), or
    once a new run is armed, an earlier pass must not be re-printed as this run's verdict."""
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
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert not (run_dir / "audit-after.json").exists()
    assert run_cli("report", "--run-dir", str(run_dir)).returncode == 2


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


def test_deeply_nested_json_is_a_malformed_line_not_a_traceback(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--out", str(snap), str(clone)).returncode == 0
    deep = "[" * 100_000 + "\n"
    log = tmp_path / "push-log.jsonl"
    log.write_text('{"not": "a push"}\n' + deep)
    done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
    assert (done.returncode, done.stderr) == (
        2, f"loop-pi-audit: {log}:1: malformed push-log line: missing key 'repo'\n")
    log.write_text(deep)
    done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
    assert done.returncode == 2 and f"{log}:1: malformed push-log line" in done.stderr
    bad = tmp_path / "deep.json"
    bad.write_text(deep)
    done = run_cli("compare", str(bad), str(snap))
    assert done.returncode == 2 and f"{bad}: malformed snapshot JSON" in done.stderr


def test_a_run_directory_that_cannot_be_created_is_one_line_and_exit_2(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for args in (("begin", str(clone), "--run-dir", str(blocker / "run")),
                 ("snapshot", "--out", str(blocker / "snap.json"), str(clone))):
        done = run_cli(*args)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith("loop-pi-audit: ")


def test_a_remote_pointed_elsewhere_during_the_run_is_unverified(tmp_path: Path) -> None:
    """`git remote set-url` to an untouched mirror must not hide an unlogged push to the remote
    the run started from behind "no remote changes"."""
    clone, bare = make_repo_with_remote(tmp_path)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(bare), str(mirror))
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/evil.py", "x\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "remote", "set-url", "origin", str(mirror))
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    [finding] = json.loads(done.stdout)["findings"]
    assert (finding["kind"], finding["remote"], finding["verdict"]) == (
        "remote-url-changed", "origin", "UNVERIFIED")


def test_an_insteadof_rule_added_during_the_run_is_unverified(tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(bare), str(mirror))
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    before = json.loads((run_dir / "audit-before.json").read_text())
    assert "rewritten_to" not in next(iter(before["repos"].values()))["remotes"]["origin"]
    commit(clone, "src/evil.py", "x\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "config", f"url.{mirror}.insteadOf", str(bare))
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    [finding] = json.loads(done.stdout)["findings"]
    assert (finding["kind"], finding["verdict"]) == ("remote-url-changed", "UNVERIFIED")
    assert str(mirror) in finding["reason"]


def test_a_push_by_the_url_an_insteadof_rule_leads_to_counts_for_that_remote(
        tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "config", f"url.{bare}.insteadOf", "short:")
    git(clone, "remote", "set-url", "origin", "short:")
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/a.py", "a\n", "pushed by URL")
    git(clone, "push", "-q", str(bare), "main")
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = {(f["kind"], f["verdict"]) for f in json.loads(done.stdout)["findings"]}
    assert ("commit", "PUSH_LOGGED") in verdicts


def test_push_log_ends_empty_file_and_blank_lines(tmp_path: Path) -> None:
    """A final newline is the end of the last line; an empty file holds no push; a blank line
    is a malformed line, named as such with its number."""
    clone, _ = make_repo_with_remote(tmp_path)
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--out", str(snap), str(clone)).returncode == 0
    zero = "0" * 40
    line = json.dumps({"repo": str(clone), "remote": "origin", "ref": "refs/heads/x",
                       "old": zero, "new": "1" * 40, "at": "2026-11-30T07:00:00Z",
                       "source": "test"})
    log = tmp_path / "push-log.jsonl"
    for text in ("", line + "\n", line):
        log.write_text(text)
        done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
        assert (done.returncode, done.stdout) == (0, "audit: no remote changes\n"), done.stderr
    for text, number in ((line + "\n\n", 2), ("\n" + line + "\n", 1), ("\n", 1)):
        log.write_text(text)
        done = run_cli("compare", str(snap), str(snap), "--push-log", str(log))
        assert (done.returncode, done.stderr) == (
            2, f"loop-pi-audit: {log}:{number}: malformed push-log line: blank line "
               "(one JSON object per line)\n")


def test_a_relative_run_directory_at_push_time_is_refused_with_why(tmp_path: Path) -> None:
    """git runs the hook from the top of the work tree, so a relative $LOOP_PI_RUN_DIR that
    was meant from elsewhere is missing there: the refusal says why."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("hook", "install", str(clone)).returncode == 0
    commit(clone, "src/a.py", "a\n", "a")
    done = subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"],
                          capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**os.environ, "LOOP_PI_RUN_DIR": "run"})
    assert done.returncode != 0
    assert "relative $LOOP_PI_RUN_DIR is read from" in done.stderr
    assert "give an absolute path" in done.stderr


def test_the_charter_granted_is_the_one_whose_hash_was_checked(tmp_path: Path) -> None:
    """The charter is read once to check its hash and once to parse it; a file that could change
    between the two reads must not grant anything. A FIFO (which would hand each read other
    bytes) is refused before either read: only a regular file is read
    (jobs.core.fs.read_regular)."""
    from audit.commands.closeout import resolve_charter
    from jobs.core.errors import InputError

    frozen = b"# Charter: o/n loop1\nauthority: none\n"
    fifo = tmp_path / "charter.md"
    os.mkfifo(fifo)
    before = {"charter_sha256": hashlib.sha256(frozen).hexdigest()}
    with pytest.raises(InputError, match="cannot read charter: not a regular file"):
        resolve_charter(str(fifo), before, tmp_path / "audit-before.json")


LINE = re.compile(r"^( {4})?\[[^\]]+\] \S+ \S+: .+ [0-9a-f]{7}\.\.[0-9a-f]{7} "
                  r"\[(PUSH_LOGGED|BACKLOG_ONLY|RELEASE_PLEASE|FOREIGN|UNGRANTED|"
                  r"NON_FAST_FORWARD|UNVERIFIED)\] .+$")


def test_every_report_line_has_the_spec_shape(tmp_path: Path) -> None:
    """Even a finding about no ref at all (a vanished remote) keeps `<before>..<after>`."""
    clone, bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src.txt", "x\n", "unlogged work")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/side")
    git(clone, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    done = run_cli("closeout", "--run-dir", str(run_dir))
    lines = done.stdout.splitlines()
    assert done.returncode in (1, 3) and len(lines) >= 4, done.stdout
    for line in lines[:-1]:
        assert LINE.match(line), line
    assert re.fullmatch(r"audit: \d+ findings, \d+ failing", lines[-1])


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
