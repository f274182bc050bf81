"""Reading the steps a remote's server recorded since the arm, for the after-snapshot's `steps`
part (judged by `audit.judge.steps`):

* a remote whose configured URL names a GitHub repository: its repository activity
  (`audit.evidence.steps.activity`);
* a remote whose effective URL (after insteadOf) is a local path or `file://` URL of a
  repository with a journal (`audit.evidence.steps.journal`): its journal, and the journal of
  each other repository on this machine its push URLs (after pushInsteadOf) reach, where
  `git push <name>` goes; whether each default-branch update was a fast-forward is read from
  the repository that recorded it in one `git rev-list` (whatever the number of updates);
* anything else (a push URL too): "net change only", said in the report.
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
               push_urls: Sequence[str] = (),
               before_part: Mapping[str, Any], after_part: Mapping[str, Any], since: str,
               token: Callable[[], str | None], clock: Callable[[], Deadline],
               blocked: str | None, env: Mapping[str, str] = os.environ,
               logged: AbstractSet[tuple[str, str, str]] = frozenset()) -> dict[str, Any]:
    """One remote's `steps` part, from the journals of every repository on this machine its
    fetch and push URLs reach (`local_repositories`). `logged` holds the (ref, old, new) of the
    push log's entries: their ancestry is the net change's rules' to check, not read again
    here."""
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
    reached = local_repositories(repo, fetch_url, push_urls)
    if isinstance(reached, str):
        return {"available": True, "source": STEPS_NET_ONLY, "note": reached}
    problem = _journals_problem(reached, before_part)
    if problem is not None:
        return {"available": False, "reason": problem}
    for path in reached:
        if not (path / JOURNAL).is_file():
            return {"available": True, "source": STEPS_NET_ONLY,
                    "note": f"no journal at {path / JOURNAL} "
                            f"(`loop-pi-audit journal install {path}`)"}
    branch = default_branch(before_part, after_part)
    net = (before_part.get("refs", {}).get(branch), after_part.get("refs", {}).get(branch))
    steps = []
    for path in reached:
        try:
            mine = read_journal(path / JOURNAL, since)
        except (OSError, ValueError) as exc:
            return {"available": False, "reason": f"cannot read the journal: {exc}"}
        with_ancestry(path, [s for s in mine if (s["old"], s["new"]) != net
                             and (s["ref"], s["old"], s["new"]) not in logged],
                      branch, net[0])
        steps.extend(mine)  # one repository after the other: each its own sequence
    part = {"available": True, "source": STEPS_FROM_JOURNAL, "journal": str(reached[0] / JOURNAL),
            "steps": steps}
    if len(reached) > 1:
        part["push_journals"] = [str(path / JOURNAL) for path in reached[1:]]
    return part


def local_repositories(repo: str, fetch_url: str | None,
                       push_urls: Sequence[str] = ()) -> list[Path] | str:
    """The repositories on this machine a remote reaches: the one its fetch URL names, then
    each other one a push URL names (`git push <name>` goes to those). A note saying why the
    steps are the net change only when one of them is not a repository on this machine."""
    named = local_path(fetch_url, repo)
    if named is None:
        return "its server is neither GitHub nor a repository on this machine"
    found = [git_dir_of(named)]
    seen = {os.path.realpath(found[0])}
    for url in push_urls:
        path = local_path(url, repo)
        if path is None:
            return redact_text(f"it pushes to {url}, neither GitHub nor a repository on this "
                               "machine")
        bare = git_dir_of(path)
        if os.path.realpath(bare) not in seen:
            seen.add(os.path.realpath(bare))
            found.append(bare)
    return found


def _journals_problem(reached: Sequence[Path], before_part: Mapping[str, Any]) -> str | None:
    """The first reason a journal begin saw cannot say every step since: the fetch
    repository's (`journal`), then each push repository's (`push_journals`)."""
    seen = before_part.get("journal")
    if isinstance(seen, Mapping):
        problem = journal_problem(seen, reached[0], reached[0] / JOURNAL)
        if problem is not None:
            return problem
    pushed = before_part.get("push_journals")
    by_path = {str(path / JOURNAL): path for path in reached[1:]}
    for seen in pushed if isinstance(pushed, list) else []:
        if not isinstance(seen, Mapping):
            return "the push journals begin saw are malformed"
        path = by_path.get(str(seen.get("path")))
        if path is None:
            return (f"the journal begin saw, {seen.get('path')}, is not among "
                    f"{', '.join(by_path) or 'none'} where pushes now lead")
        problem = journal_problem(seen, path, path / JOURNAL)
        if problem is not None:
            return problem
    return None


def journals_at_begin(repo: str, fetch_url: str | None,
                      push_urls: Sequence[str] = ()) -> dict[str, Any]:
    """What the before-snapshot's remote part records of the journals the remote reaches, each
    where it is and the file it was (`journal_identity`): `journal`, the fetch repository's, and
    `push_journals`, each other repository's a push URL reaches; each only when a hook in effect
    keeps it. Without them closeout could not tell a journal deleted, emptied or no longer written
    during the run from a remote that never had one."""
    named = local_path(fetch_url, repo)
    if named is None:
        return {}
    keys: dict[str, Any] = {}
    seen = _seen_at_begin(git_dir_of(named))
    if seen is not None:
        keys["journal"] = seen
    reached = local_repositories(repo, fetch_url, push_urls)
    if isinstance(reached, list):
        pushed = [s for path in reached[1:] if (s := _seen_at_begin(path)) is not None]
        if pushed:
            keys["push_journals"] = pushed
    return keys


def _seen_at_begin(bare: Path) -> dict[str, Any] | None:
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
