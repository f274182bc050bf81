"""The hardened form of git the audit reads history in: settings and an environment that ignore
whatever the audited run could have written into its clone, its configuration or the environment
it starts us with (SPEC "How closeout judges"; docs/audit.md, "What the run cannot edit").

Plain data and one pure function of the environment: jobs/git/run.py starts the process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# GIT_* variables that may reach any git we start: they choose which user files, credentials,
# transports and traces apply, never which repository, objects or history git reads. Every other
# GIT_* variable is dropped: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY,
# GIT_GRAFT_FILE, GIT_REPLACE_REF_BASE, GIT_NAMESPACE, GIT_CONFIG_PARAMETERS/COUNT,
# GIT_EXTERNAL_DIFF, ... (set, say, when a command runs from inside a git hook) would point git at
# another repository or change what it reports. GIT_EXEC_PATH is never inherited either: it
# chooses the programs git runs (its remote helpers, and, put first on the PATH of what git
# starts, the `git` a local remote's upload-pack command names).
KEPT_GIT_VARS = frozenset({
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_SSH", "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_ALLOW_PROTOCOL",
    "GIT_PROXY_COMMAND", "GIT_CEILING_DIRECTORIES", "GIT_CURL_VERBOSE", "GIT_REDACT_COOKIES",
})
KEPT_GIT_PREFIXES = ("GIT_TRACE", "GIT_SSL_", "GIT_HTTP_", "GIT_PROXY_SSL_", "GIT_AUTHOR_",
                     "GIT_COMMITTER_")
# Transports git may use for the audit's reads; a configured remote helper (ext::, a custom
# `git-remote-*`) could answer anything. GIT_ALLOW_PROTOCOL overrides every protocol.* setting.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
# No transport at all, for commands that read only the clone.
NO_PROTOCOL = "none"

# `-c` settings for every git command that reads history or talks to a remote. Command-line
# settings beat every configuration file (system, global, the clone's own, includeIf), so what
# the run could have written into them cannot change what these commands report.
HARDENED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.commitGraph", "false"),         # a forged commit-graph could answer ancestry wrongly
    ("core.useReplaceRefs", "false"),      # with --no-replace-objects: history as written
    ("core.quotePath", "false"),
    ("core.precomposeUnicode", "false"),
    ("core.hooksPath", "/dev/null"),       # fetch runs reference-transaction hooks otherwise
    ("core.fsmonitor", "false"),
    # A fetch lists an alternate object store's tips with this shell command otherwise.
    ("core.alternateRefsCommand", "true"),
    ("core.askPass", ""),
    ("i18n.logOutputEncoding", "UTF-8"),   # a UTF-16 setting made the log unparseable
    ("log.showSignature", "false"),
    ("log.follow", "false"),
    ("log.decorate", "false"),
    ("log.abbrevCommit", "false"),
    ("log.showRoot", "true"),
    ("log.mailmap", "false"),
    ("diff.ignoreSubmodules", "none"),     # a moved gitlink is a change
    ("diff.renames", "false"),
    ("diff.relative", "false"),            # would hide paths outside the current directory
    ("diff.noprefix", "false"),
    ("color.ui", "never"),
    ("color.diff", "never"),
    ("trailer.separators", ":"),           # "Claude-Session= x" must not parse as a trailer
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("fetch.writeCommitGraph", "false"),
    ("fetch.prune", "false"),
    ("fetch.pruneTags", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.version", "2"),
)
# Options of `git log` that restate the settings above where a flag exists: a flag also beats
# `submodule.<name>.ignore` in `.gitmodules`, which no `-c` can reach.
HARDENED_LOG_OPTIONS = ("--no-color", "--no-renames", "--no-ext-diff", "--no-textconv",
                        "--ignore-submodules=none", "--no-relative", "--no-notes",
                        "--no-show-signature", "--no-decorate", "--encoding=UTF-8", "--no-mailmap")


def hardened_argv(*args: str) -> list[str]:
    """`git` arguments for a command that reads history: no replace refs, every setting above."""
    argv = ["--no-replace-objects"]
    for key, value in HARDENED_CONFIG:
        argv += ["-c", f"{key}={value}"]
    return [*argv, *args]


def environment(base: Mapping[str, str], *, hardened: bool = False,
                network: bool = False) -> dict[str, str]:
    """The environment of every git either program starts: the repository named on the command
    line and nothing else, and nothing that waits for a human at 7 a.m.; `hardened` adds what the
    audit needs so that nothing of the run's making answers its reads, and `network` lets such a
    read reach a remote (our own fetch and ls-remote, by URL)."""
    env = {k: v for k, v in base.items()
           if not k.startswith("GIT_") or k in KEPT_GIT_VARS or k.startswith(KEPT_GIT_PREFIXES)}
    env["GIT_TERMINAL_PROMPT"] = "0"
    if not hardened:
        return env
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    # git 2.44 and later: a missing object is never fetched on its own (older git is held by
    # GIT_ALLOW_PROTOCOL below).
    env["GIT_NO_LAZY_FETCH"] = "1"
    # An empty graft file: `.git/info/grafts` is never read.
    env["GIT_GRAFT_FILE"] = os.devnull
    # A user's own GIT_SSH_COMMAND wins (it may carry keys or proxies); ours only adds batch
    # mode. Either way it beats a core.sshCommand the run could have configured in its clone.
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    # Set (even empty), it beats every core.gitProxy setting.
    env.setdefault("GIT_PROXY_COMMAND", "")
    env.setdefault("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
    if not network:
        # Only our own fetch and ls-remote may reach a remote: any other command would do so only
        # to fetch a missing object lazily, which a partial clone does through its promisor
        # remote's configured upload-pack, a command the run chose.
        env["GIT_ALLOW_PROTOCOL"] = NO_PROTOCOL
    env.setdefault("GCM_INTERACTIVE", "never")
    env["LC_ALL"] = "C"
    # Fully buffered output: git would otherwise flush after every commit of a log, and each of
    # those small writes costs a system call (20,000 of them for 20,000 commits).
    env["GIT_FLUSH"] = "0"
    return env
