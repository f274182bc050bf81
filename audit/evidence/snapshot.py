"""Snapshots: every remote ref, local tag and GitHub release of the repositories a run may touch.

A part that cannot be read is `{"available": false, "reason": ...}` and never an empty list, so
closeout can tell "nothing there" from "could not look".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.evidence.git import absolute_url, ls_remote, remote_timeout, run_git
from audit.evidence.github import (
    Deadline,
    api_base_for,
    find_token,
    github_cap,
    prepare,
    read_releases,
    unnamed_github_urls,
    unnamed_reason,
)
from jobs.core.errors import UsageError
from jobs.core.urls import github_hosts, github_remote, redact_text, redact_url
from jobs.git.run import GitError

NOT_ON_GITHUB = "no remote on a GitHub host"


@dataclass
class RemoteConfig:
    name: str
    urls: list[str] = field(default_factory=list)
    pushurls: list[str] = field(default_factory=list)
    # Where git actually goes after url.<base>.insteadOf / pushInsteadOf.
    effective: list[str] = field(default_factory=list)
    fetch_url: str | None = None
    # Where `git push <name>` goes: every push URL, else every URL (after rewriting).
    push_urls: list[str] = field(default_factory=list)
    # URLs to list that an insteadOf rule would rewrite once more (url → where to): git
    # rewrites a remote's URL once, but listing the rewritten URL by itself would rewrite it
    # again with the user's global rules, and look elsewhere than where git pushes.
    rewritten_again: dict[str, str] = field(default_factory=dict)
    # The repository's `http[.<url>].extraHeader` settings that carry credentials (CI checkouts
    # keep their token there): passed on to the ls-remote run outside the clone. Only
    # `Authorization:` headers; nothing else the run could write there goes along.
    auth_headers: list[tuple[str, str]] = field(default_factory=list)


def repo_key(repo: Path | str) -> str:
    """How a repository is named in snapshots: its absolute real path."""
    return os.path.realpath(repo)


def read_remote_config(repo: Path | str) -> dict[str, RemoteConfig]:
    """Every remote's configured URLs and push URLs, as written (before insteadOf), and where
    they lead after rewriting, from one `git config` call."""
    try:
        out = run_git(repo, "config", "-z", "--get-regexp", r"^(remote|url|http)\.", timeout=30)
    except GitError as exc:
        if exc.returncode == 1:  # no key matched: a repository without remotes
            return {}
        raise
    remotes: dict[str, RemoteConfig] = {}
    # url.<base>.insteadOf <prefix> → {prefix: base}, per kind.
    rules: dict[str, dict[str, str]] = {"insteadof": {}, "pushinsteadof": {}}
    headers: list[tuple[str, str]] = []
    for record in out.split("\0"):
        if not record:
            continue
        key, _, value = record.partition("\n")
        section, _, rest = key.partition(".")
        if section == "http":
            if key.lower().endswith(".extraheader") and \
                    value.lower().startswith("authorization:"):
                headers.append((key, value))
            continue
        # <section>.<name>.<variable>; a remote name or URL base may itself contain dots.
        body, _, variable = rest.rpartition(".")
        if not body:
            continue
        if section == "url" and variable in rules:
            rules[variable][value] = body
        elif section == "remote" and variable in ("url", "pushurl"):
            remote = remotes.setdefault(body, RemoteConfig(body))
            (remote.urls if variable == "url" else remote.pushurls).append(value)
    plain, push_only = rules["insteadof"], rules["pushinsteadof"]
    for remote in remotes.values():
        fetch = [_rewrite(u, plain) or u for u in remote.urls]
        if remote.pushurls:
            push = [_rewrite(u, plain) or u for u in remote.pushurls]
        else:
            push = [_rewrite(u, push_only) or _rewrite(u, plain) or u for u in remote.urls]
        remote.effective = list(dict.fromkeys(fetch + push))
        remote.fetch_url = fetch[0] if fetch else None
        remote.push_urls = list(dict.fromkeys(push))
        for url in [*fetch[:1], *push]:
            again = _rewrite(url, plain)
            if again is not None and again != url:
                remote.rewritten_again[url] = again
        remote.auth_headers = headers
    return dict(sorted(remotes.items()))


def _rewrite(url: str, rules: Mapping[str, str]) -> str | None:
    """git's insteadOf rule: the longest matching prefix wins."""
    matches = [prefix for prefix in rules if url.startswith(prefix)]
    if not matches:
        return None
    best = max(matches, key=len)
    return rules[best] + url[len(best):]


def parse_ls_remote(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """`git ls-remote --symref` output → (refs, symrefs), peeled `^{}` lines kept as printed."""
    refs: dict[str, str] = {}
    symrefs: dict[str, str] = {}
    # Newlines only: a ref name may hold U+2028 or U+0085, where splitlines() would break it
    # and let `refs/heads/x<U+2028>` stand in for `refs/heads/x`.
    for line in text.split("\n"):
        if not line:
            continue
        left, sep, name = line.partition("\t")
        if not sep:
            raise ValueError(f"unexpected ls-remote line {line[:80]!r}")
        if left.startswith("ref: "):
            symrefs[name] = left[len("ref: "):]
        else:
            refs[name] = left
    return dict(sorted(refs.items())), dict(sorted(symrefs.items()))


def snapshot_remote(repo: str, remote: RemoteConfig, timeout: float) -> dict[str, Any]:
    part: dict[str, Any] = {"url": redact_url(remote.urls[0]) if remote.urls else None}
    if remote.pushurls:
        part["pushurls"] = [redact_url(u) for u in remote.pushurls]
    if remote.effective != list(dict.fromkeys(remote.urls + remote.pushurls)):
        # Where an insteadOf rule sends git: a rule added during the run must not quietly point
        # the after-snapshot at another repository.
        part["rewritten_to"] = [redact_url(u) for u in remote.effective]
    if remote.fetch_url is None:
        return {"available": False, **part,
                "reason": f"remote {remote.name} has no url configured"}
    if remote.rewritten_again:
        url, again = next(iter(remote.rewritten_again.items()))
        return {"available": False, **part, "reason": redact_text(
            f"an insteadOf rule rewrites {url} once more, to {again}: git rewrites a URL once, "
            f"so listing {url} would look elsewhere than {remote.name} leads")}
    try:
        # By URL, outside the clone: a remote.<name>.uploadpack, a remote helper or any other
        # setting the run could write into its clone's config cannot choose who answers.
        listed = _list_url(repo, remote, remote.fetch_url, timeout)
    except (GitError, ValueError) as exc:
        return {"available": False, **part,
                "reason": redact_text(f"git ls-remote --symref {remote.name} failed: {exc}")}
    # A push goes to the push URLs (or to every URL), which may be another repository than the
    # one listed: each must show the same refs, or what a push changed there goes unseen.
    for url in remote.push_urls:
        if url == remote.fetch_url:
            continue
        try:
            pushed_to = _list_url(repo, remote, url, timeout)
        except (GitError, ValueError) as exc:
            return {"available": False, **part, "reason": redact_text(
                f"git ls-remote --symref {url} (where {remote.name} pushes) failed: {exc}")}
        if pushed_to != listed:
            return {"available": False, **part, "reason": redact_text(
                f"remote {remote.name} pushes to {url}, whose refs differ from those of "
                f"{remote.fetch_url} (the URL listed): a push there cannot be judged")}
    refs, symrefs = listed
    return {"available": True, **part, "refs": refs, "symrefs": symrefs}


def _list_url(repo: str, remote: RemoteConfig, url: str, timeout: float
              ) -> tuple[dict[str, str], dict[str, str]]:
    return parse_ls_remote(ls_remote(absolute_url(url, repo), timeout=timeout,
                                     config=remote.auth_headers))


def snapshot_tags(repo: str) -> dict[str, Any]:
    """Local tags in ls-remote's form: `refs/tags/X` → the object the tag ref names (the tag
    object for an annotated tag) plus `refs/tags/X^{}` → the commit it peels to."""
    fmt = "%(objectname)\t%(*objectname)\t%(refname)"
    try:
        out = run_git(repo, "for-each-ref", f"--format={fmt}", "refs/tags", timeout=60)
    except GitError as exc:
        return {"available": False, "reason": f"git for-each-ref refs/tags failed: {exc}"}
    tags: dict[str, str] = {}
    for line in out.split("\n"):  # not splitlines(): see parse_ls_remote
        if not line:
            continue
        sha, peeled, name = line.split("\t", 2)
        tags[name] = sha
        if peeled:
            tags[name + "^{}"] = peeled
    return {"available": True, "tags": dict(sorted(tags.items()))}



def github_remotes_of(remotes: Mapping[str, RemoteConfig],
                      env: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """Distinct (host, owner/name) the remotes' configured URLs name, the primary first:
    origin's fetch URL, else origin's push URL, else the first remote by name.

    URLs that only reach GitHub through insteadOf (a shorthand such as `gh:o/n`) come last:
    attribution follows the configured URL, but a rewrite must not hide a GitHub remote."""
    hosts = github_hosts(env)
    ordered = sorted(remotes.values(), key=lambda r: (r.name != "origin", r.name))
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    candidates = [u for r in ordered for u in [*r.urls, *r.pushurls]]
    candidates += [u for r in ordered for u in r.effective]
    for url in candidates:
        named = github_remote(url, hosts)
        if named is not None and named[1].lower() not in seen:
            seen.add(named[1].lower())
            found.append(named)
    return found


@dataclass
class GitHubReads:
    """What one snapshot's GitHub reads share: the token (looked up once) and the deadline."""
    env: Mapping[str, str]
    deadline: Deadline | None = None
    tokens: list[str | None] = field(default_factory=list)
    # Why GitHub must not be called at all (closeout: a proxy, CA or API setting differs from
    # the one recorded at begin), else None.
    blocked: str | None = None

    def token(self) -> str | None:
        if not self.tokens:
            self.tokens.append(find_token(self.env))
        return self.tokens[0]

    def clock(self) -> Deadline:
        if self.deadline is None:
            # Started at the first GitHub call, not at the start of the git work.
            prepare()
            self.deadline = Deadline.after(github_cap(self.env))
        return self.deadline


def snapshot_releases(remotes: Mapping[str, RemoteConfig], reads: GitHubReads
                      ) -> dict[str, Any]:
    named = github_remotes_of(remotes, reads.env)
    names = [name for _host, name in named]
    unnamed = unnamed_github_urls(
        [u for r in remotes.values() for u in [*r.urls, *r.pushurls, *r.effective]], reads.env)
    if unnamed:
        return {"available": False, "reason": unnamed_reason(unnamed),
                "github_repo": names[0] if names else None, "github_repos": names}
    if not names:
        return {"available": True, "releases": [], "note": NOT_ON_GITHUB, "github_repo": None,
                "github_repos": []}
    ident = {"github_repo": names[0], "github_repos": names}
    if reads.blocked is not None:
        return {"available": False, "reason": reads.blocked, **ident}
    token = reads.token()
    releases: list[dict[str, Any]] = []
    for host, name in named:
        part = read_releases(name, token=token, base_url=api_base_for(host, reads.env),
                             deadline=reads.clock())
        if not part["available"]:
            return {"available": False, "reason": redact_text(part["reason"]), **ident}
        releases.extend({**r, "repo": name} for r in part["releases"])
    releases.sort(key=lambda r: (r["repo"].lower(), str(r["tag_name"]),
                                 str(r["created_at"] or ""), r["id"] or 0))
    return {"available": True, "releases": releases, **ident}


def take_snapshot(repos: Sequence[Path], *, charter_sha256: str | None,
                  taken_at: datetime | None = None,
                  env: Mapping[str, str] = os.environ,
                  before: Mapping[str, Any] | None = None,
                  github_blocked: str | None = None,
                  logged: AbstractSet[tuple[str, str, str]] = frozenset()) -> dict[str, Any]:
    """Snapshot every repository; remotes are asked in parallel, each under its own timeout.
    With `before` (closeout), each remote also records the steps its server saw since that
    snapshot's time (`audit.evidence.steps`)."""
    when = iso_now(taken_at)
    timeout = remote_timeout(env)
    reads = GitHubReads(env, blocked=github_blocked)
    entries: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, RemoteConfig]] = {}
    for repo in repos:
        key = repo_key(repo)
        try:
            configs[key] = read_remote_config(key)
        except GitError as exc:
            reason = f"cannot read the repository's configuration: {exc}"
            entries[key] = {"available": False, "reason": reason, "taken_at": when,
                            "remotes": {}, "tags": {"available": False, "reason": reason},
                            "releases": {"available": False, "reason": reason}}
    work = [(key, remote) for key, cfg in configs.items() for remote in cfg.values()]
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(work)))) as pool:
        remote_parts = list(pool.map(lambda job: snapshot_remote(job[0], job[1], timeout), work))
    for key, cfg in configs.items():
        entries[key] = {
            "taken_at": when,
            "remotes": {r.name: part for (k, r), part in zip(work, remote_parts, strict=True)
                        if k == key},
            "tags": snapshot_tags(key),
            "releases": snapshot_releases(cfg, reads),
        }
        if before is not None:
            _add_steps(key, cfg, entries[key], before, reads, env, logged)
        else:
            _note_journals(key, cfg, entries[key])
    return {"taken_at": when, "charter_sha256": charter_sha256,
            "repos": dict(sorted(entries.items()))}


def _add_steps(key: str, cfg: Mapping[str, RemoteConfig], entry: dict[str, Any],
               before: Mapping[str, Any], reads: GitHubReads, env: Mapping[str, str],
               logged: AbstractSet[tuple[str, str, str]]) -> None:
    from audit.evidence.steps.read import read_steps

    b_entry = before.get("repos", {}).get(key)
    if not isinstance(b_entry, Mapping):
        return
    since = str(b_entry.get("taken_at") or before.get("taken_at") or "")
    for name, part in entry["remotes"].items():
        b_part = b_entry.get("remotes", {}).get(name)
        remote = cfg.get(name)
        if not part.get("available") or not isinstance(b_part, Mapping) or remote is None:
            continue
        part["steps"] = read_steps(key, urls=[*remote.urls, *remote.pushurls],
                                   fetch_url=remote.fetch_url, push_urls=remote.push_urls,
                                   before_part=b_part, after_part=part, since=since,
                                   token=reads.token, clock=reads.clock, blocked=reads.blocked,
                                   env=env, logged=logged)


def _note_journals(key: str, cfg: Mapping[str, RemoteConfig], entry: dict[str, Any]) -> None:
    from audit.evidence.steps.read import journals_at_begin

    for name, part in entry["remotes"].items():
        if part.get("available"):
            part.update(journals_at_begin(key, cfg[name].fetch_url, cfg[name].push_urls))


def iso_now(when: datetime | None = None) -> str:
    moment = when or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def snapshot_complete(snap: Mapping[str, Any]) -> list[str]:
    """The reason of every unavailable part (empty when the snapshot is complete)."""
    reasons: list[str] = []
    for repo, entry in sorted(snap.get("repos", {}).items()):
        if entry.get("available") is False:
            reasons.append(f"{repo}: {entry.get('reason', 'unavailable')}")
            continue
        for name, part in sorted(entry.get("remotes", {}).items()):
            if not part.get("available"):
                reasons.append(f"{repo}: remote {name}: {part.get('reason', 'unavailable')}")
        for label in ("tags", "releases"):
            part = entry.get(label, {})
            if not part.get("available"):
                reasons.append(f"{repo}: {label}: {part.get('reason', 'unavailable')}")
    return reasons


def require_repository(path: str) -> Path:
    """A REPO argument must be an existing git repository: a typo must not snapshot nothing."""
    repo = Path(path)
    if not repo.is_dir():
        raise UsageError(f"{path}: no such directory")
    try:
        run_git(repo, "rev-parse", "--git-dir", timeout=30)
    except GitError as exc:
        raise UsageError(f"{path}: not a git repository ({exc})") from None
    return Path(repo_key(repo))


def summarize(snap: Mapping[str, Any]) -> str:
    """One line per repository: how much the snapshot holds."""
    lines = []
    for repo, entry in sorted(snap.get("repos", {}).items()):
        remotes = entry.get("remotes", {})
        refs = sum(len(p.get("refs", {})) for p in remotes.values())
        tags = len([t for t in entry.get("tags", {}).get("tags", {}) if not t.endswith("^{}")])
        rel = entry.get("releases", {})
        releases = (rel.get("note") or f"{len(rel.get('releases', []))} releases"
                    if rel.get("available") else "releases unavailable")
        lines.append(f"{repo}: {len(remotes)} remotes, {refs} remote refs, {tags} local tags, "
                     f"{releases}")
    return "\n".join(lines)
