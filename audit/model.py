"""The audit's data: verdicts, findings, commits and what git said about a branch.

Plain values only, shared by the evidence side (`audit.evidence.history`,
`audit.evidence.snapshot`) and the judge (`audit.judge.compare`), so neither has to import the
other: the push log's entries and the charter's grants are defined here, read from their files
by `audit.evidence.pushlog` and `audit.evidence.charter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple


class FindingVerdict(StrEnum):
    PUSH_LOGGED = "PUSH_LOGGED"
    BACKLOG_ONLY = "BACKLOG_ONLY"
    RELEASE_PLEASE = "RELEASE_PLEASE"
    FOREIGN = "FOREIGN"
    UNGRANTED = "UNGRANTED"
    NON_FAST_FORWARD = "NON_FAST_FORWARD"
    UNVERIFIED = "UNVERIFIED"
    TAMPERED = "TAMPERED"


PUSH_LOGGED = FindingVerdict.PUSH_LOGGED
BACKLOG_ONLY = FindingVerdict.BACKLOG_ONLY
RELEASE_PLEASE = FindingVerdict.RELEASE_PLEASE
FOREIGN = FindingVerdict.FOREIGN
UNGRANTED = FindingVerdict.UNGRANTED
NON_FAST_FORWARD = FindingVerdict.NON_FAST_FORWARD
UNVERIFIED = FindingVerdict.UNVERIFIED
TAMPERED = FindingVerdict.TAMPERED

PASSING = frozenset({PUSH_LOGGED, BACKLOG_ONLY, RELEASE_PLEASE, FOREIGN})
# The passing verdicts a commit gets for the paths it changes (audit.evidence.trees reads those
# again).
PATH_VERDICTS = frozenset({BACKLOG_ONLY, RELEASE_PLEASE})
# Evidence that no longer matches its seal fails like a violation (exit 1).
VIOLATIONS = frozenset({UNGRANTED, NON_FAST_FORWARD, TAMPERED})
FAILING = VIOLATIONS | {UNVERIFIED}
# Most severe first: what a branch line shows when its commits disagree.
SEVERITY = (TAMPERED, NON_FAST_FORWARD, UNGRANTED, UNVERIFIED, FOREIGN, RELEASE_PLEASE,
            BACKLOG_ONLY, PUSH_LOGGED)
# The folder whose changes alone make a commit BACKLOG_ONLY.
BACKLOG_DIR = "backlog/"
# Who may publish a release-please release (and upload its assets).
RELEASE_BOTS = ("release-please[bot]", "github-actions[bot]")


# Not frozen: a frozen dataclass's __init__ sets each field through object.__setattr__, and a big
# run makes tens of thousands of findings. Nothing mutates one after it is made.
@dataclass(slots=True)
class Finding:
    repo: str
    remote: str
    ref: str
    kind: str
    before: str | None
    after: str | None
    commit: str | None
    verdict: str
    reason: str
    # Where a commit sits beneath its ref (git's topological order) and its first parent, for
    # the text line; not part of the JSON.
    order: int = field(default=0, compare=False)
    parent: str | None = field(default=None, compare=False)
    # What a passing commit's verdict rests on, said for a whole run of commits (the log entry,
    # "only backlog/", the other session): consecutive commits with the same verdict and the
    # same evidence are reported as one finding. None for a failing commit, always alone.
    evidence: str | None = field(default=None, compare=False)
    # A run of commits reported as one: how many, the oldest and the newest (`commit`).
    count: int = 1
    first: str | None = None
    last: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "repo": self.repo, "remote": self.remote, "ref": self.ref, "kind": self.kind,
            "before": self.before, "after": self.after, "commit": self.commit,
            "verdict": self.verdict, "reason": self.reason}
        if self.count > 1:
            out.update(count=self.count, first=self.first, last=self.last)
        return out


@dataclass(frozen=True)
class FileChange:
    """One path a commit changes against one parent, as its checked trees say: each side's mode
    (None where the path is absent) and, for a regular file of a commit shaped like a release,
    its content (None when not read, or when the blob did not match its name)."""
    path: str
    old_mode: str | None
    new_mode: str | None
    old: bytes | None = None
    new: bytes | None = None


REGULAR_MODES = ("100644", "100755")


class Commit(NamedTuple):
    """One commit of a judged range. A tuple: a range holds up to hundreds of thousands.

    Only `sha` and `parents` are read for a commit a push-log entry covers (its verdict rests on
    the log alone); `subject` None says it was not read (or could not be parsed), and its
    `paths` are then empty."""
    sha: str
    parents: tuple[str, ...]
    subject: str | None
    sessions: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    # The paths among `paths` that are submodule gitlinks or symbolic links, which lead outside
    # the folder they sit in.
    gitlinks: tuple[str, ...] = ()
    # For a commit shaped like a release-please release: every path it changes against each
    # parent, with the regular files' contents (None for any other commit).
    changes: tuple[FileChange, ...] | None = None


@dataclass(frozen=True)
class BranchHistory:
    """What git said about one changed default branch.

    `commits` holds every commit reachable from the after tip or from a push-log tip of that
    remote and not from the excluded before tips, children before parents. `present` holds the
    push-log tips that exist locally as commits: a present tip outside `commits` is an ancestor of
    the before tip. `fast_forwards` and `rewrites` hold the (old, new) pairs of the branch's log
    entries whose old tip is, or is not, an ancestor of the new one (a pair in neither could not
    be checked). `problem` says why the branch could not be checked at all.
    """
    fast_forward: bool | None
    commits: tuple[Commit, ...] = ()
    present: frozenset[str] = frozenset()
    problem: str | None = None
    fast_forwards: frozenset[tuple[str, str]] = frozenset()
    rewrites: frozenset[tuple[str, str]] = frozenset()
    # The reach sets over `commits` (`audit.judge.rules.reach_bits`) of `reach_entries`, the
    # remote's log entries whose tips are present, when already worked out; else the judge works
    # them out itself.
    reach: Mapping[str, int] | None = None
    reach_entries: tuple[PushEntry, ...] | None = None
    # What the object store said of this history, read for every branch (the judge decides what
    # it means: only a branch that would pass is failed by it). `untrusted`: why its commit
    # objects cannot be trusted (one does not hash to its name, or they could not be read).
    # `untrusted_paths`: for a commit that could pass because of its paths (no log entry of the
    # branch covers it, and it changes only backlog/ or is shaped like a release), why the paths
    # git reported for it do not hold up against its checked trees.
    untrusted: str | None = None
    untrusted_paths: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class History:
    entries: Mapping[str, tuple[PushEntry, ...]]  # snapshot repo → the log entries naming it
    branches: Mapping[tuple[str, str, str], BranchHistory]  # (repo, remote, ref)
    # Log entries naming no repository of the before snapshot: pushes nobody snapshotted.
    unmatched: tuple[PushEntry, ...] = ()


@dataclass(frozen=True)
class Change:
    ref: str
    before: str | None
    after: str | None

    @property
    def change(self) -> str:
        if self.before is None:
            return "added"
        return "deleted" if self.after is None else "moved"



def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Report order: by repository, remote and ref; a ref's own line before its commits."""
    return sorted(findings, key=lambda f: (f.repo, f.remote, f.ref, f.kind == "commit", f.order,
                                           f.kind, f.commit or ""))


def exit_code(findings: Sequence[Finding]) -> int:
    verdicts = {f.verdict for f in findings}
    if verdicts & VIOLATIONS:
        return 1
    if UNVERIFIED in verdicts:
        return 3
    return 0


def overall(findings: Sequence[Finding]) -> str:
    return {0: "pass", 1: "fail", 3: "could_not_check"}[exit_code(findings)]



def short(sha: str | None) -> str:
    return (sha or ZERO)[:7]



def most_severe(verdicts: Iterable[str]) -> str:
    present = set(verdicts)
    return next(v for v in SEVERITY if v in present)


ZERO = "0" * 40


@dataclass(frozen=True)
class PushEntry:
    repo: str
    remote: str
    ref: str
    old: str
    new: str
    at: str
    source: str
    line: int
    # False for a line the hook wrote while the ledger could not be reached (`"sealed": false`):
    # what only such a line covers cannot be checked.
    sealed: bool = True


@dataclass(frozen=True)
class Grant:
    kind: str
    repo: str


@dataclass(frozen=True)
class Charter:
    path: Path
    repo: str
    loop: int
    grants: tuple[Grant, ...]
    session: str | None
    sha256: str
    # `release-bots:`: logins that count as release bots besides RELEASE_BOTS (an App or a
    # machine user release-please runs as).
    release_bots: tuple[str, ...] = ()


def release_bots(charter: Charter | None) -> tuple[str, ...]:
    """Who may publish a release-please release and upload its assets under this charter."""
    extra = charter.release_bots if charter is not None else ()
    return RELEASE_BOTS + tuple(b for b in extra if b not in RELEASE_BOTS)


def is_release_bot(charter: Charter | None, login: object) -> bool:
    """Is `login` one of the release bots? GitHub logins name one account whatever their case
    (no two differ only by it), so a charter's spelling need not match GitHub's."""
    return isinstance(login, str) and login.lower() in {b.lower() for b in release_bots(charter)}


def grants_release_please(charter: Charter | None, github_repo: str | None) -> bool:
    """Does the charter grant `release-please` for this GitHub `owner/name`?"""
    if charter is None or not github_repo:
        return False
    wanted = github_repo.lower()
    return any(g.kind == "release-please" and g.repo.lower() == wanted for g in charter.grants)


# Where a remote's steps come from (the after-snapshot's `steps.source`).
STEPS_FROM_ACTIVITY = "github-activity"
STEPS_FROM_JOURNAL = "journal"
STEPS_NET_ONLY = "none"


@dataclass(frozen=True)
class Step:
    """One ref update a server recorded between the arm and closeout: an entry of GitHub's
    repository activity, or a line of a bare repository's journal. `fast_forward` is None when
    it is not known (a creation, a deletion, or ancestry that could not be read)."""
    ref: str
    old: str
    new: str
    at: str  # ISO 8601 UTC, whole seconds: `2026-11-30T07:00:00Z`
    actor: str | None
    kind: str  # push, force_push, branch_creation, branch_deletion, pr_merge, ..., journal
    fast_forward: bool | None = None


@dataclass(frozen=True)
class Arm:
    """One arm row of the ledger (`begin`, or an `add` extending the row `extends`)."""
    id: int
    kind: str
    extends: int | None
    armed_at: str
    before_sha256: str
    charter_sha256: str | None
    transport_sha256: str
    # The fingerprint as sealed (`audit.evidence.seal.transport`); None when unreadable.
    transport: Mapping[str, Any] | None


@dataclass(frozen=True)
class LogLine:
    """One line of the push-log file as written: its number, its text (no newline), and
    whether the hook marked it unsealed (`"sealed": false`)."""
    number: int
    text: str
    sealed: bool = True


@dataclass(frozen=True)
class SealedPush:
    """One `audit_pushes` row: a push-log line as it was sealed."""
    id: int
    text: str
    recorded_at: str


@dataclass(frozen=True)
class Seals:
    """What the ledger sealed for one run directory, and what the run directory holds now: the
    tamper rules' whole input (`audit.judge.seal`). `problem` says why the ledger could not be
    read (then nothing else is known)."""
    run_dir: str
    ledger: str
    problem: str | None = None
    arms: tuple[Arm, ...] = ()
    before_sha256: str | None = None  # the before-snapshot's bytes now; None when it is gone
    expect_before: str | None = None
    log_lines: tuple[LogLine, ...] = ()
    log_name: str = "push-log.jsonl"
    pushes: tuple[SealedPush, ...] = ()
    # The ledger audit-arm.json names (the run can write it: it only words a missing arm's reason).
    armed_in: str | None = None
    # Other paths the run directory's name led to, each with its `begin` row.
    moved: tuple[tuple[str, Arm], ...] = ()
