"""A third round of what a run that controls its clone, its run directory and its push log could
try: each test builds the attack for real (a clone, bare remotes on disk, the run directory's
files) and each was a false pass, a traceback or an honest run failed before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    ZERO,
    Run,
    commit,
    enterprise_remote,
    gh_release,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
    verdicts,
)
from pytest_httpserver import HTTPServer

from audit.evidence.charter import load_charter
from audit.evidence.github import read_releases
from audit.evidence.history import gather_history
from audit.evidence.snapshot import take_snapshot
from audit.judge.compare import judge
from audit.judge.rules import entry_covers_remote
from audit.model import (
    BACKLOG_ONLY,
    NON_FAST_FORWARD,
    PUSH_LOGGED,
    UNGRANTED,
    UNVERIFIED,
    PushEntry,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def _compare(tmp_path: Path, before: dict[str, Any], after: dict[str, Any],
             log: Path) -> tuple[int, str, str, Path, Path]:
    b, a = tmp_path / "before.json", tmp_path / "after.json"
    b.write_text(json.dumps(before))
    a.write_text(json.dumps(after))
    done = run_cli("compare", str(b), str(a), "--push-log", str(log))
    return done.returncode, done.stdout, done.stderr, b, a


def test_a_nul_in_a_push_log_path_is_a_malformed_line_not_a_traceback(tmp_path: Path) -> None:
    """A push-log entry whose `repo` held a NUL reached os.path.realpath: `unexpected error:
    ValueError: embedded null byte`, exit 3. It is a malformed line: exit 2, file and line."""
    run = Run(tmp_path)
    commit(run.clone, "src/x.py", "x\n", "x")
    run.push()
    with run.log.open("a") as fh:
        fh.write(json.dumps({"repo": "/tmp/a\u0000b", "remote": "origin",
                             "ref": "refs/heads/main", "old": ZERO, "new": ZERO,
                             "at": "2026-11-30T07:00:00Z", "source": "test"}) + "\n")
    code, _, err, _, _ = _compare(tmp_path, run.before, run.snapshot(), run.log)
    assert code == 2, err
    assert err == (f"loop-pi-audit: {run.log}:2: malformed push-log line: 'repo' holds a NUL "
                   "character\n")


def test_a_snapshot_keyed_by_a_path_git_cannot_run_in_is_malformed(tmp_path: Path) -> None:
    """A snapshot's repository key is the path closeout runs git in: one holding a NUL was a
    traceback (exit 3), a relative one would be read from wherever compare runs. Both are a
    malformed snapshot: exit 2, the file named."""
    run = Run(tmp_path)
    after = run.snapshot()
    for bad in ("/tmp/x\u0000y", "relative/clone"):
        before = json.loads(json.dumps(run.before))
        before["repos"][bad] = before["repos"].pop(run.key)
        code, _, err, b, _ = _compare(tmp_path, before, after, run.log)
        assert code == 2, err
        assert err.startswith(f"loop-pi-audit: {b}: not a loop-pi-audit snapshot: repository "
                              f"key {bad!r} is not an absolute path"), err


def test_a_dangling_remote_head_does_not_let_the_run_choose_its_default_branch(
        tmp_path: Path) -> None:
    """The remote's HEAD named a branch that did not exist when the run started (a bare
    repository made with another default branch name), so the server advertised no HEAD and
    main was the default branch. By creating that branch the run made the after-snapshot's HEAD
    the default: main became "any other ref", and a logged force push rewriting it passed as
    PUSH_LOGGED. The default is decided by what the run found."""
    run = Run(tmp_path)
    git(run.bare, "symbolic-ref", "HEAD", "refs/heads/master")
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    run.before = run.snapshot()
    assert "HEAD" not in run.before["repos"][run.key]["remotes"]["origin"]["symrefs"]
    git(run.clone, "reset", "-q", "--hard", "HEAD~1")
    commit(run.clone, "src/b.py", "b\n", "b")
    run.push(force=True)
    run.push("HEAD", "refs/heads/master")
    found = verdicts(run.judge())
    assert found[("refs/heads/main", "branch-moved")] == NON_FAST_FORWARD
    assert found[("refs/heads/master", "branch-added")] == PUSH_LOGGED


def test_a_ref_name_holding_a_unicode_line_separator_cannot_stand_in_for_another(
        tmp_path: Path) -> None:
    """git allows U+2028 (and U+0085) in ref names; Python's splitlines() breaks lines there.
    `refs/heads/feature<U+2028>` holding feature's old tip was read as `refs/heads/feature`, so
    an unlogged force push of feature (and of a tag the same way) left no finding at all. git's
    output is split on newlines only: every ref keeps its own name."""
    run = Run(tmp_path)
    start = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/feature")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/tags/v1")
    run.before = run.snapshot()
    commit(run.clone, "deploy.sh", "evil\n", "evil")
    for ref in ("refs/heads/feature", "refs/tags/v1"):
        git(run.clone, "push", "-q", "--no-verify", "origin", f"{start}:{ref}\u2028")
        git(run.clone, "push", "-q", "--force", "origin", f"HEAD:{ref}")
    after = run.snapshot()
    refs = after["repos"][run.key]["remotes"]["origin"]["refs"]
    assert refs["refs/heads/feature"] == rev(run.clone, "HEAD")
    assert refs["refs/heads/feature\u2028"] == start
    found = verdicts(run.judge(after))
    assert found[("refs/heads/feature", "branch-moved")] == UNGRANTED
    assert found[("refs/tags/v1", "tag-moved")] == UNGRANTED
    assert found[("refs/heads/feature\u2028", "branch-added")] == UNGRANTED


def test_a_local_tag_named_with_a_line_separator_is_recorded_not_a_traceback(
        tmp_path: Path) -> None:
    """The same split of `for-each-ref` output made `begin` die on a tag `v1<U+2028>x`
    (`ValueError: not enough values to unpack`, exit 3)."""
    run = Run(tmp_path)
    git(run.clone, "tag", "v1\u2028x")
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(run.clone), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    snap = json.loads((run_dir / "audit-before.json").read_text())
    assert "refs/tags/v1\u2028x" in snap["repos"][run.key]["tags"]["tags"]


def test_one_repository_spelled_two_ways_is_one_remote(tmp_path: Path) -> None:
    """`origin` at /srv/x.git and `mirror` at file:///srv/x.git are one repository: the push
    logged through origin moved mirror's main too, and an honest run failed with "a push the log
    never saw" on mirror."""
    run = Run(tmp_path)
    git(run.clone, "remote", "add", "mirror", f"file://{run.bare}")
    run.before = run.snapshot()
    commit(run.clone, "src/a.py", "a\n", "a")
    run.push()
    found = {(f.remote, f.ref, f.kind): f.verdict for f in run.judge()}
    assert found[("mirror", "refs/heads/main", "branch-moved")] == PUSH_LOGGED
    assert found[("origin", "refs/heads/main", "branch-moved")] == PUSH_LOGGED


@pytest.mark.parametrize(("one", "other", "same"), [
    ("https://github.com/acme/widgets.git", "git@github.com:acme/widgets.git", True),
    ("https://github.com/acme/widgets", "ssh://git@github.com/Acme/Widgets.git", True),
    ("https://x-access-token:t0k3n@github.com/acme/widgets.git/",
     "https://github.com/acme/widgets", True),
    ("https://github.com/acme/widgets", "https://github.com/acme/gadgets", False),
    ("/srv/x.git", "file:///srv/x.git/", True),
    ("/srv/x", "/srv/x.git", False),  # two directories git could both find
])
def test_a_github_repository_is_one_remote_however_its_url_is_spelled(
        one: str, other: str, same: bool) -> None:
    entry = PushEntry("/r", "mirror", "refs/heads/main", ZERO, "1" * 40, "", "test", 1)
    remotes = {"origin": {"url": one}, "mirror": {"url": other}}
    assert entry_covers_remote(entry, "origin", remotes["origin"], remotes) is same


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


def test_hidden_refs_in_the_global_config_cannot_hide_a_push_from_the_snapshot(
        tmp_path: Path) -> None:
    """For a remote on this machine git runs upload-pack with the caller's global config (kept:
    it holds credentials and insteadOf rules; `-c` does not reach a local upload-pack). A
    `uploadpack.hideRefs` or `transfer.hideRefs` written there at closeout hid the branch and
    the tag the run pushed unlogged: no finding at all, exit 0."""
    run = Run(tmp_path)
    commit(run.clone, "deploy.sh", "evil\n", "evil")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/evil", "HEAD:refs/tags/evil")
    global_config = tmp_path / "gitconfig-global"
    global_config.write_text("[uploadpack]\n\thideRefs = refs/heads/evil\n"
                             "[transfer]\n\thideRefs = refs/tags/evil\n\thideRefs = HEAD\n")
    git(run.bare, "config", "uploadpack.hideRefs", "refs/heads/main")
    found = verdicts(run.judge())
    assert found == {("refs/heads/evil", "branch-added"): UNGRANTED,
                     ("refs/tags/evil", "tag-added"): UNGRANTED}


def test_a_release_repeated_across_pages_is_read_once(httpserver: HTTPServer) -> None:
    """GitHub pages releases by offset: one created while the pages are read pushes the last
    release of page 1 onto page 2, so it came twice, and closeout said "release changed: 1
    release(s) with this tag before, 2 after" (UNGRANTED) in an honest run."""
    api = httpserver.url_for("/api/v3").rstrip("/")
    path = "/api/v3/repos/octo/widgets/releases"
    page2 = f"{api}/repos/octo/widgets/releases?per_page=100&page=2"
    repeated = gh_release(api, "octo/widgets", 2, "v1.1.0")
    httpserver.expect_request(path, query_string={"per_page": "100"}).respond_with_json(
        [gh_release(api, "octo/widgets", 3, "v1.2.0"), repeated],
        headers={"Link": f'<{page2}>; rel="next", <{page2}>; rel="last"'})
    httpserver.expect_request(path, query_string={"per_page": "100", "page": "2"}) \
        .respond_with_json([repeated, gh_release(api, "octo/widgets", 1, "v1.0.0")])
    part = read_releases("octo/widgets", token="t", base_url=api, timeout=5)
    assert [(r["id"], r["tag_name"]) for r in part["releases"]] == [
        (1, "v1.0.0"), (2, "v1.1.0"), (3, "v1.2.0")]


def test_a_symbolic_link_under_backlog_is_no_task_edit(tmp_path: Path) -> None:
    """An unlogged commit adding `backlog/tasks/task-9 - x.md` as a symbolic link to
    ~/.ssh/authorized_keys passed as BACKLOG_ONLY: only its path was looked at. Whatever reads
    tasks would read (and write back) the file it leads to. Like a gitlink, a symbolic link
    leads outside backlog/."""
    run = Run(tmp_path)
    tasks = run.clone / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    plain = commit(run.clone, "backlog/tasks/task-8 - y.md", "---\nid: task-8\n---\n", "task 8")
    (tasks / "task-9 - x.md").symlink_to("../../../../.ssh/authorized_keys")
    git(run.clone, "add", "backlog")
    git(run.clone, "commit", "-q", "-m", "task 9")
    link = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "HEAD:main")
    findings = run.judge()
    by_commit = {f.commit: f for f in findings if f.commit}
    assert by_commit[plain].verdict == BACKLOG_ONLY
    assert by_commit[link].verdict == UNGRANTED
    assert "symbolic link backlog/tasks/task-9 - x.md is no backlog change" in \
        by_commit[link].reason


def test_a_unicode_line_separator_does_not_start_a_charter_line(tmp_path: Path) -> None:
    """A markdown line ends at a newline (or a carriage return), nowhere else. The charter was
    split with splitlines(), so the text after a U+2028 or U+0085 in a line of prose became a
    line of its own and could grant authority nobody reading the charter saw as a key."""
    path = tmp_path / "charter.md"
    path.write_text("# Charter: acme/widgets loop1\r\n"
                    "Notes: no releases\u2028authority: release-please acme/widgets\n"
                    "Prose\x85session: someone-else\n"
                    "session: mine\r\n", encoding="utf-8")
    charter = load_charter(path)
    assert charter.grants == () and charter.session == "mine"


@pytest.mark.parametrize("which", ["push-log.jsonl", "audit-before.json", "charter.md"])
def test_a_fifo_in_place_of_an_input_file_is_refused_not_waited_on(
        tmp_path: Path, which: str) -> None:
    """The run directory is the run's to write: a FIFO as its push log (or before-snapshot, or
    a charter) made closeout wait forever on the read. Only a regular file is read; anything
    else is a usage error naming it (exit 2)."""
    run = Run(tmp_path)
    run_dir = tmp_path / "run"
    charter = tmp_path / "charter.md"
    done = run_cli("begin", str(run.clone), "--run-dir", str(run_dir), "--charter", str(charter))
    assert done.returncode == 0, done.stderr
    fifo = charter if which == "charter.md" else run_dir / which
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    closed = subprocess.run(
        [sys.executable, "-m", "audit.main", "closeout", "--run-dir", str(run_dir),
         "--charter", str(charter)], capture_output=True, text=True, timeout=60, check=False)
    assert closed.returncode == 2, closed.stderr
    assert closed.stderr.startswith(f"loop-pi-audit: {fifo}: ")
    assert "not a regular file" in closed.stderr
