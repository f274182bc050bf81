"""Reading the steps a remote's server recorded since the arm, for the after-snapshot's `steps`
part (judged by `audit.judge.steps`):

* a remote whose configured URL names a GitHub repository: its repository activity
  (`audit.evidence.steps.activity`);
* a remote whose effective URL (after insteadOf) is a local path or `file://` URL of a
  repository with a journal (`audit.evidence.steps.journal`): its journal; whether each
  default-branch update was a fast-forward is read from that repository in one `git rev-list`
  (whatever the number of updates);
* anything else: "net change only", said in the report.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from audit.evidence.git import absolute_url, run_git
from audit.evidence.github import Deadline, api_base_for, unnamed_github_urls, unnamed_reason
from audit.evidence.steps.activity import read_activity
from audit.evidence.steps.journal import (
    JOURNAL,
    hook_in_effect,
    journal_identity,
    read_journal,
)
from audit.model import (
    STEPS_FROM_ACTIVITY,
    STEPS_FROM_JOURNAL,
    STEPS_NET_ONLY,
    ZERO,
    Commit,
    PushEntry,
)
from audit.reach import entry_ancestry
from audit.refs import default_branch
from jobs.core.urls import github_hosts, github_remote, redact_text
from jobs.git.hardened import hardened_argv
from jobs.git.run import GitError

# What GitHub's activity says of a step's ancestry.
FAST_FORWARD = {"push": True, "pr_merge": True, "merge_queue_merge": True, "force_push": False}


def local_path(url: str | None, repo: str) -> Path | None:
    """The repository a local path or `file://` URL names; None for any other URL."""
    if not url:
        return None
    if url.startswith("file://"):
        path = unquote(url.removeprefix("file://"))
        return Path(path) if path.startswith("/") else None
    if "://" in url:
        return None
    absolute = absolute_url(url, repo)
    return Path(absolute) if os.path.isabs(absolute) else None


# git's local transport (`enter_repo`) tries these after the path a URL names, in this order, and
# takes the first that is a file (a gitfile) or a git directory: `/srv/app` reaches
# `/srv/app.git`.
_SUFFIXES = ("/.git", "", ".git/.git", ".git")


def git_dir_of(path: Path) -> Path:
    """The repository git reaches through the local path `path` (where its journal is): the
    first of `path/.git`, `path`, `path.git/.git`, `path.git` that is a gitfile or a git
    directory, a gitfile followed; `path` itself when none is."""
    text = str(path).rstrip("/") or "/"
    for suffix in _SUFFIXES:
        candidate = Path(text + suffix)
        if candidate.is_file():
            return _gitfile_target(candidate) or candidate
        if candidate.is_dir() and _is_git_dir(candidate):
            return candidate
    return path


def _is_git_dir(path: Path) -> bool:
    """git's own test, roughly: objects/ and refs/ (or a commondir) and a HEAD."""
    return (path / "HEAD").is_file() and (
        (path / "commondir").is_file()
        or ((path / "objects").is_dir() and (path / "refs").is_dir()))


def _gitfile_target(path: Path) -> Path | None:
    try:
        text = path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    target = Path(text.removeprefix("gitdir: "))
    return target if target.is_absolute() else path.parent / target


def read_steps(repo: str, *, urls: Sequence[str], fetch_url: str | None,
               before_part: Mapping[str, Any], after_part: Mapping[str, Any], since: str,
               token: Callable[[], str | None], clock: Callable[[], Deadline],
               blocked: str | None, env: Mapping[str, str] = os.environ,
               logged: AbstractSet[tuple[str, str, str]] = frozenset()) -> dict[str, Any]:
    """One remote's `steps` part. `logged` holds the (ref, old, new) of the push log's entries:
    their ancestry is the net change's rules' to check, not read again here."""
    unnamed = unnamed_github_urls(urls, env)
    if unnamed:
        return {"available": False, "reason": unnamed_reason(unnamed)}
    named = [found for url in urls
             if (found := github_remote(url, github_hosts(env))) is not None]
    named = list({name.lower(): (host, name) for host, name in named}.values())
    if named:
        if blocked is not None:
            return {"available": False, "reason": blocked}
        steps: list[dict[str, Any]] = []
        for host, name in named:
            part = read_activity(name, token=token(), base_url=api_base_for(host, env),
                                 since=since, deadline=clock())
            if not part["available"]:
                return {"available": False, "reason": redact_text(part["reason"])}
            steps.extend({**s, "fast_forward": FAST_FORWARD.get(s["kind"])}
                         for s in part["steps"])
        return {"available": True, "source": STEPS_FROM_ACTIVITY, "steps": steps}
    named_path = local_path(fetch_url, repo)
    if named_path is None:
        return {"available": True, "source": STEPS_NET_ONLY,
                "note": "its server is neither GitHub nor a repository on this machine"}
    path = git_dir_of(named_path)
    journal = path / JOURNAL
    seen = before_part.get("journal")
    if isinstance(seen, Mapping):
        problem = journal_problem(seen, path, journal)
        if problem is not None:
            return {"available": False, "reason": problem}
    if not journal.is_file():
        return {"available": True, "source": STEPS_NET_ONLY,
                "note": f"no journal at {journal} (`loop-pi-audit journal install {path}`)"}
    try:
        steps = read_journal(journal, since)
    except (OSError, ValueError) as exc:
        return {"available": False, "reason": f"cannot read the journal: {exc}"}
    branch = default_branch(before_part, after_part)
    net = (before_part.get("refs", {}).get(branch), after_part.get("refs", {}).get(branch))
    with_ancestry(path, [s for s in steps if (s["old"], s["new"]) != net
                         and (s["ref"], s["old"], s["new"]) not in logged],
                  branch, net[0])
    return {"available": True, "source": STEPS_FROM_JOURNAL, "journal": str(journal),
            "steps": steps}


def journal_at_begin(repo: str, fetch_url: str | None) -> dict[str, Any] | None:
    """What the before-snapshot records of a local remote's journal: where it is and the file
    it was (`journal_identity`). Without it closeout could not tell a journal deleted, emptied
    or no longer written during the run from a remote that never had one. None when the remote
    has no journal kept by a hook in effect."""
    named = local_path(fetch_url, repo)
    if named is None:
        return None
    bare = git_dir_of(named)
    seen = journal_identity(bare / JOURNAL) if hook_in_effect(bare) else None
    return None if seen is None else {"path": str(bare / JOURNAL), **seen}


def journal_problem(seen: Mapping[str, Any], bare: Path, journal: Path) -> str | None:
    """Why the journal begin saw cannot say every step since (None when it can): gone, not the
    file it was (replaced, or what it held then no longer opens it), or no longer written."""
    if seen.get("path") != str(journal):
        return f"the journal begin saw, {seen.get('path')}, is not {journal} where it now leads"
    size = seen.get("size")
    now = journal_identity(journal, size if isinstance(size, int) else None)
    if now is None:
        return f"the journal {journal} that begin saw is gone"
    if any(now[k] != seen.get(k) for k in ("device", "inode", "sha256")) or (
            not isinstance(size, int) or now["size"] < size):
        return (f"the journal {journal} is not the file begin saw: replaced, or what it held "
                "then no longer opens it")
    if not hook_in_effect(bare):
        return (f"the journal hook is no longer in effect in {bare} (hooks removed or "
                "core.hooksPath pointed elsewhere): ref updates since were not recorded")
    return None


def with_ancestry(bare: Path, steps: list[dict[str, Any]], branch: str,
                  before_tip: str | None) -> None:
    """Mark each update of the default branch among `steps` a fast-forward or not, from one walk
    of the repository that received it: every commit the updates' tips reach and the before tip
    does not. An old tip the walk cannot place (the before tip itself, or something behind it,
    that the new tip does not descend from) is no fast-forward; git failing leaves them
    unknown. (The net change itself and the logged pushes are left out by the caller: the net
    change's rules judge them from the history they read anyway.)"""
    moves = [s for s in steps if s["ref"] == branch and ZERO not in (s["old"], s["new"])]
    if not moves:
        return
    tips = sorted({s[k] for s in moves for k in ("old", "new")})
    revs = "".join(f"{t}\n" for t in tips) + (f"^{before_tip}\n" if before_tip else "")
    try:
        out = run_git(bare, *hardened_argv("rev-list", "--parents", "--topo-order",
                                           "--ignore-missing", "--stdin"), input_text=revs)
    except GitError:
        return
    commits = []
    for line in out.split("\n"):
        if line:
            sha, *parents = line.split(" ")
            commits.append(Commit(sha, tuple(parents), None, (), ()))
    entries = [PushEntry("", "", branch, s["old"], s["new"], "", "", 0) for s in moves]
    for step, answer in zip(moves, entry_ancestry(commits, entries), strict=True):
        step["fast_forward"] = bool(answer)
