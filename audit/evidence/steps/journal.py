"""The journal of a bare repository the owner runs: `loop-pi-audit journal install BARE` puts a
`reference-transaction` hook there that appends every committed ref update (ref, old, new,
time, user) to `BARE/loop-pi-journal.jsonl`, fsynced. Closeout reads it for each remote whose
effective URL is that repository (`audit.evidence.steps`).

The hook never blocks or fails a push: git runs it three times per transaction (`prepared`,
then `committed` or `aborted`) and only `prepared` could abort; ours records `committed` only
and always exits 0. A hook that was there is moved aside to
`reference-transaction.loop-pi-audit-chained` and run first with the same argument and standard
input (its status stands in the `prepared` state, as it did before); `uninstall` puts it back.

git also runs the hook for transactions that move nothing: `git pack-refs` (and so `git gc`,
`receive.autogc`, `git maintenance`) "creates" every ref in packed-refs (zeros to its value),
then "deletes" each loose copy (its value to zeros) while the ref stays where it was. And
`git update-ref REF NEW` without an old value hands the hook zeros as the old value whatever
the ref held. So the hook lists the refs (one `git for-each-ref`, from sh, before anything else)
when a transaction is `prepared` and again when it is `committed`, beside the journal
(`loop-pi-journal.jsonl.refs.<git's pid>.<state>`); from those the journal records the value
each ref held before ("zeros" that replaced a value are that value; an update to the value the
ref already held is no update) and leaves out a "deletion" after which the ref still holds the
value it was deleted from. Without the listings (git failing, a hook installed before) the
lines are recorded as git gave them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import re
import shlex
import stat
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobs.core.errors import LoopError, UsageError
from jobs.core.fs import atomic_write
from jobs.git.run import GitError

MARKER = "# loop-pi-audit reference-transaction journal"
HOOK = "reference-transaction"
CHAINED_SUFFIX = ".loop-pi-audit-chained"
JOURNAL = "loop-pi-journal.jsonl"
# Beside the journal: `<journal>.refs.<git's pid>.<prepared|committed>`, what the refs held.
REFS_INFIX = ".refs."
PROG = "loop-pi-audit journal"
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
ZERO_OID = "0" * 64


def _hooks_dir(bare: Path) -> Path:
    from audit.evidence.git import run_git

    try:
        if run_git(bare, "rev-parse", "--is-bare-repository", timeout=30).strip() != "true":
            raise UsageError(f"{bare}: not a bare repository (the journal records what a "
                             "server receives)")
        out = run_git(bare, "rev-parse", "--git-path", "hooks", timeout=30).strip()
    except GitError as exc:
        raise UsageError(f"{bare}: not a git repository ({exc})") from None
    hooks = Path(out)
    return Path(os.path.abspath(hooks if hooks.is_absolute() else bare / hooks))


def _is_ours(path: Path) -> bool:
    try:
        return MARKER.encode() in path.read_bytes()[:4096]
    except OSError:
        return False


def hook_script(python: str, chained: Path, journal: Path) -> str:
    q = shlex.quote
    base = q(str(journal) + REFS_INFIX) + '"$PPID"'
    return (
        "#!/bin/sh\n"
        f"{MARKER}: appends every committed ref update to {journal.name}.\n"
        "# Installed by `loop-pi-audit journal install`; remove with `journal uninstall`.\n"
        f"chained={q(str(chained))}\n"
        # git's pid names the transaction's process. What the refs a transaction creates held
        # when it was prepared tells a ref `git pack-refs` packed from one created. Never fatal.
        f"base={base}\n"
        'if [ "$1" = prepared ]; then\n'
        '    rm -f "$base.prepared" 2>/dev/null\n'
        '    in=$(mktemp "${TMPDIR:-/tmp}/loop-pi-journal.XXXXXX" 2>/dev/null) || {\n'
        '        if [ -x "$chained" ]; then exec "$chained" "$@"; fi\n'
        "        exit 0; }\n"
        '    cat >"$in"\n'
        "    set -f  # ref names hold no glob characters; never expand one all the same\n"
        "    refs=$(awk '$1 ~ /^0+$/ && $2 !~ /^0+$/ { print $3 }' \"$in\" 2>/dev/null)\n"
        '    if [ -n "$refs" ]; then\n'
        "        git for-each-ref --format='%(objectname) %(refname)' -- $refs </dev/null "
        '>"$base.tmp" 2>/dev/null && mv -f "$base.tmp" "$base.prepared" 2>/dev/null\n'
        '        rm -f "$base.tmp" 2>/dev/null\n'
        "    fi\n"
        '    status=0\n'
        '    if [ -x "$chained" ]; then "$chained" "$@" <"$in"; status=$?; fi\n'
        '    rm -f "$in"\n'
        '    exit $status\n'
        "fi\n"
        'if [ "$1" != committed ]; then\n'
        '    rm -f "$base.prepared" 2>/dev/null\n'
        '    if [ -x "$chained" ]; then exec "$chained" "$@"; fi\n'
        "    exit 0\n"
        "fi\n"
        f"exec {q(python)} -P -m audit.evidence.steps.journal committed \"$chained\" "
        f"{q(str(journal))}\n")


def install(bare: Path, python: str = sys.executable) -> str:
    hooks = _hooks_dir(bare)
    hook, chained = hooks / HOOK, hooks / (HOOK + CHAINED_SUFFIX)
    journal = bare / JOURNAL
    hooks.mkdir(parents=True, exist_ok=True)
    note = ""
    if (hook.exists() or hook.is_symlink()) and not _is_ours(hook):
        if chained.exists() or chained.is_symlink():
            raise LoopError(f"{hook} is not ours and {chained} already exists; refusing to "
                            "overwrite either", 1)
        os.rename(hook, chained)
        note = f"; the existing hook now runs first from {chained}"
    if not journal.exists():
        # There from the start: "no journal" and "nothing pushed since" must not look alike.
        journal.touch(mode=0o644)
    atomic_write(hook, hook_script(python, chained, journal).encode(), mode=0o755)
    return f"installed {hook} (journal {journal}){note}"


def uninstall(bare: Path) -> str:
    hooks = _hooks_dir(bare)
    hook, chained = hooks / HOOK, hooks / (HOOK + CHAINED_SUFFIX)
    if not (hook.exists() or hook.is_symlink()):
        if chained.exists() or chained.is_symlink():
            os.rename(chained, hook)
            return f"restored {hook} (no journal hook was installed)"
        return f"no {HOOK} hook in {hooks}; nothing to do"
    if not _is_ours(hook):
        raise LoopError(f"{hook} is not the loop-pi-audit journal hook; leaving it alone", 1)
    if chained.exists() or chained.is_symlink():
        os.replace(chained, hook)
        return f"removed the journal hook; restored the original {hook} (the journal stays)"
    hook.unlink()
    return f"removed {hook} (the journal {bare / JOURNAL} stays)"


def hook_in_effect(bare: Path) -> bool:
    """Whether the hook git runs for `bare`'s ref updates now (in the hooks folder its
    configuration names, `core.hooksPath` included) is the journal's."""
    try:
        hook = _hooks_dir(bare) / HOOK
    except LoopError:
        return False
    return _is_ours(hook) and os.access(hook, os.X_OK)


def journal_identity(journal: Path, size: int | None = None) -> dict[str, Any] | None:
    """The journal file as begin saw it, for closeout to know it again: its device and inode,
    its size and the sha256 of its first `size` bytes (all of them by default); None when it
    is not a regular file. Opened without blocking: a FIFO there must not hang the audit."""
    try:
        fd = os.open(journal, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = hashlib.sha256()
        left = info.st_size if size is None else size
        while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
            digest.update(chunk)
            left -= len(chunk)
    return {"device": info.st_dev, "inode": info.st_ino, "size": info.st_size,
            "sha256": digest.hexdigest()}


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def committed(chained: str, journal: str, stdin: bytes) -> int:
    """What the hook does for a committed transaction. Always 0: the update has happened."""
    if chained and os.path.isfile(chained) and os.access(chained, os.X_OK):
        try:
            subprocess.run([chained, "committed"], input=stdin, check=False)
        except OSError as exc:
            print(f"{PROG}: cannot run the chained hook {chained}: {exc}", file=sys.stderr)
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    user = _user()
    updates = [(fields[0], fields[1], fields[2])
               for raw in stdin.decode("utf-8", "surrogateescape").split("\n")
               if len(fields := raw.split(" ", 2)) == 3 and fields[0] != fields[1]]
    prepared = f"{journal}{REFS_INFIX}{os.getppid()}.prepared"
    before = _listed(prepared)
    if updates:
        _remove(prepared)  # this transaction's; a nested one (packed-refs) had nothing to record
    deleted = sorted({ref for old, new, ref in updates if new == ZERO_OID[:len(new)]})
    after = _refs_now(deleted) if deleted else {}
    lines = []
    for old, new, ref in moved(updates, before, after):
        lines.append(json.dumps({"ref": ref, "old": old, "new": new,
                                 "at": at, "user": user}, sort_keys=True) + "\n")
    if not lines:
        return 0
    try:
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = "".join(lines).encode("utf-8", "surrogateescape")
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        print(f"{PROG}: warning: could not append to {journal}: {exc}", file=sys.stderr)
    return 0


def moved(updates: Sequence[tuple[str, str, str]], before: dict[str, str] | None,
          after: dict[str, str] | None) -> list[tuple[str, str, str]]:
    """The (old, new, ref) updates that moved a ref, with the value it held before: `before` and
    `after` are what the refs held when the transaction was prepared and once it was committed
    (None: not known). Zeros as the old value of a ref that held something stand for that value;
    an update to the value a ref already held moved nothing (`pack-refs` writing packed-refs); a
    deletion after which the ref still holds the value it was deleted from deleted nothing
    (`pack-refs` pruning the loose copy)."""
    out = []
    for old, new, ref in updates:
        if old == ZERO_OID[:len(old)] and before is not None and ref in before:
            old = before[ref]
            if old == new:
                continue
        if new == ZERO_OID[:len(new)] and after is not None and after.get(ref) == old:
            continue
        out.append((old, new, ref))
    return out


def _listed(path: str) -> dict[str, str] | None:
    """A `git for-each-ref` listing the hook wrote: ref → value; None when there is none."""
    try:
        with open(path, "rb") as fh:
            data = fh.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    return _parse_listing(data)


def _refs_now(refs: Sequence[str]) -> dict[str, str] | None:
    """What `refs` hold now, in the repository git runs the hook in; None when git fails."""
    try:
        done = subprocess.run(["git", "for-each-ref", "--format=%(objectname) %(refname)",
                               "--", *refs], capture_output=True, stdin=subprocess.DEVNULL,
                              check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return _parse_listing(done.stdout.decode("utf-8", "surrogateescape"))


def _parse_listing(data: str) -> dict[str, str]:
    refs = {}
    for line in data.split("\n"):
        sha, _, ref = line.partition(" ")
        if ref and _SHA.match(sha):
            refs[ref] = sha
    return refs


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def read_journal(path: Path, since: str) -> list[dict[str, Any]]:
    """The journal's updates at or after `since` (ISO, whole seconds), in order; ValueError
    naming the line for anything malformed: a journal that cannot be read line by line cannot
    say what happened."""
    steps: list[dict[str, Any]] = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                obj = json.loads(raw)
            except ValueError:
                raise ValueError(f"{path}:{number}: not a JSON object") from None
            if not (isinstance(obj, dict) and isinstance(obj.get("ref"), str)
                    and isinstance(obj.get("old"), str) and _SHA.match(obj["old"])
                    and isinstance(obj.get("new"), str) and _SHA.match(obj["new"])
                    and isinstance(obj.get("at"), str)):
                raise ValueError(f"{path}:{number}: not a journal entry (ref, old, new, at)")
            if obj["at"][:19] < since[:19]:
                continue
            user = obj.get("user")
            steps.append({"ref": obj["ref"], "old": obj["old"], "new": obj["new"],
                          "at": obj["at"][:19] + "Z",
                          "actor": user if isinstance(user, str) else None, "kind": "journal"})
    return steps


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3 or argv[0] != "committed":
        print(f"{PROG}: this module is run by the installed reference-transaction hook",
              file=sys.stderr)
        return 0
    try:
        return committed(argv[1], argv[2], sys.stdin.buffer.read())
    except Exception as exc:  # never fail a push that has happened
        print(f"{PROG}: warning: {exc}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
