"""The transport fingerprint: everything outside the clone that decides where, or how, a remote
(or GitHub) is reached, taken at `begin` and again at closeout (SPEC "Evidence the run cannot
make").

* the git executable: its absolute path and the sha256 of its bytes (closeout runs that very
  file, and hashes it again);
* every transport key of git's system and global configuration, includes followed, as git reads
  it in each audited repository (an `includeIf "gitdir:…"` applies there): `url.*`, `remote.*`,
  `http.*`, `https.*`, `core.sshCommand`, `core.gitProxy`, `ssh.*`, `protocol.*`,
  `credential.*`;
* `~/.ssh/config` and every file it includes, and the `ssh` program git starts;
* the environment that steers transport: `*_proxy`/`*_PROXY`, `NO_PROXY`, every `GIT_*` but the
  author's and committer's identity, `SSL_CERT_*`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`,
  `GITHUB_API_URL`.

Each setting is kept as a salted digest of its value, never the value: a proxy URL or a header
may hold a password, and the fingerprint is written to the ledger and the run directory. The
names say what changed; the digests say that it did.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jobs.core.host import home_dir
from jobs.core.urls import redact_text
from jobs.git.run import GitError
from jobs.process.exe import executable

_CONFIG_KEY = re.compile(
    r"^(?:(?:url|remote|http|https|ssh|protocol|credential)\..+"
    r"|core\.sshcommand|core\.gitproxy)$")
_IDENTITY = ("GIT_AUTHOR_", "GIT_COMMITTER_")
_CA_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GITHUB_API_URL", "NO_PROXY")
# What GitHub's client (requests) reads from the environment: a change to any of these makes the
# GitHub reads of closeout go elsewhere, or trust another certificate.
GITHUB_SETTINGS = ("_proxy", "SSL_CERT_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                   "GITHUB_API_URL")
ABSENT = "absent"


def transport_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that steer transport (see the module's list)."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if (key.lower().endswith("_proxy") or key in _CA_VARS or key.startswith("SSL_CERT_")
                or (key.startswith("GIT_") and not key.startswith(_IDENTITY))):
            out[key] = value
    return out


def _digest(salt: str, name: str, value: bytes) -> str:
    return hashlib.sha256(salt.encode() + b"\0" + name.encode("utf-8", "surrogateescape")
                          + b"\0" + value).hexdigest()


def file_sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def git_config_values(repos: Sequence[str], git: str) -> dict[str, list[str]]:
    """Each transport key of the system and global configuration as git reads it in each
    repository (`<scope> config of <repo>: <key>` → its values in order)."""
    from audit.evidence.git import run_git

    found: dict[str, list[str]] = {}
    for repo in repos:
        try:
            out = run_git(repo, "config", "--includes", "--show-scope", "-z", "--list",
                          timeout=30, git=git)
        except GitError as exc:
            if exc.returncode == 1:
                continue  # no configuration at all
            found[f"config of {repo}"] = [f"unreadable: {exc}"]
            continue
        # -z with --show-scope: `<scope> NUL <key> LF <value> NUL`, record after record.
        tokens = out.split("\0")
        for scope, record in zip(tokens[0::2], tokens[1::2], strict=False):
            key, _, value = record.partition("\n")
            if scope in ("system", "global") and _CONFIG_KEY.match(key.lower()):
                # A key may name a URL with a token in it (url.<base>.insteadOf).
                found.setdefault(f"{scope} config of {repo}: {redact_text(key)}",
                                 []).append(value)
    return found


def ssh_config_files(home: Path) -> list[str]:
    """`~/.ssh/config` and every file its `Include` lines name (globs, relative to ~/.ssh),
    followed to a bounded depth as ssh does."""
    first = str(home / ".ssh" / "config")
    seen: list[str] = []
    todo = [(first, 0)]
    while todo:
        path, depth = todo.pop(0)
        if path in seen or depth > 16:
            continue
        seen.append(path)
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            words = line.strip().replace("=", " ", 1).split()
            if len(words) < 2 or words[0].lower() != "include":
                continue
            for pattern in words[1:]:
                pattern = os.path.expanduser(pattern) if pattern.startswith("~") else pattern
                if not os.path.isabs(pattern):
                    pattern = str(home / ".ssh" / pattern)
                todo.extend((p, depth + 1) for p in sorted(glob.glob(pattern)))
    return seen


def fingerprint(repos: Sequence[str], env: Mapping[str, str] = os.environ, *,
                salt: str | None = None, git: str | None = None) -> dict[str, Any]:
    """The fingerprint now: `{"salt", "git": {"path", "sha256"}, "settings": {name: digest}}`."""
    salt = salt or secrets.token_hex(16)
    program = git or executable("git", env)
    settings: dict[str, str] = {}

    def put(name: str, value: bytes) -> None:
        settings[name] = _digest(salt, name, value)

    for name, values in git_config_values(repos, program).items():
        put(name, "\0".join(values).encode("utf-8", "surrogateescape"))
    for path in ssh_config_files(home_dir(env)):
        put(f"ssh configuration file {path}", (file_sha256(path) or ABSENT).encode())
    try:
        ssh = executable("ssh", env)
        put("ssh executable", f"{ssh}\0{file_sha256(ssh) or ABSENT}".encode())
    except FileNotFoundError:
        put("ssh executable", ABSENT.encode())
    for key, value in transport_env(env).items():
        put(f"environment {key}", value.encode("utf-8", "surrogateescape"))
    return {"salt": salt, "git": {"path": program, "sha256": file_sha256(program) or ABSENT},
            "settings": dict(sorted(settings.items()))}


def fingerprint_sha256(print_: Mapping[str, Any]) -> str:
    """The digest the `armed` line and the arm record carry."""
    return hashlib.sha256(json.dumps(print_, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def parse_fingerprint(text: str) -> dict[str, Any] | None:
    """A fingerprint read back from the ledger; None when it is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not (isinstance(data, dict) and isinstance(data.get("salt"), str)
            and isinstance(data.get("git"), dict) and isinstance(data.get("settings"), dict)
            and isinstance(data["git"].get("path"), str)):
        return None
    return data


def github_settings(names: Iterable[str]) -> list[str]:
    """The changed settings among `names` that steer closeout's GitHub calls."""
    return [n for n in names if n.startswith("environment ")
            and any(part in n.removeprefix("environment ") or
                    n.removeprefix("environment ").lower().endswith("_proxy")
                    for part in GITHUB_SETTINGS)]
