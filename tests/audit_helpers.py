"""Real repositories and GitHub-shaped JSON for loop-pi-audit tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def rev(repo: Path, what: str) -> str:
    return git(repo, "rev-parse", what).strip()


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
    """`loop-pi-audit ARGS` as a real process (the installed interpreter, `-m audit.main`)."""
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
               published_at: str | None = "2026-11-29T10:05:00Z") -> dict[str, Any]:
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
        "assets": [], "body": f"Release {tag}",
    }


def link_header(pages: Sequence[tuple[str, str]]) -> str:
    """`Link: <url>; rel="next", <url>; rel="last"` from (rel, url) pairs."""
    return ", ".join(f'<{url}>; rel="{rel}"' for rel, url in pages)
