"""The step rules and the tamper rules as plain data: no git, no ledger, no run directory."""

from __future__ import annotations

from typing import Any

from audit.judge.seal import arm_chain, cross_check, downgrade_unsealed, judge_seals
from audit.judge.steps import judge_steps
from audit.model import (
    Arm,
    Finding,
    LogLine,
    PushEntry,
    SealedPush,
    Seals,
)

ZERO = "0" * 40
A, B, C = "a" * 40, "b" * 40, "c" * 40
REPO = "/r"
ARM_TIME = "2026-11-30T07:00:00Z"


def snap(refs: dict[str, str], steps: dict[str, Any] | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"available": True, "url": "/bare", "refs": refs,
                            "symrefs": {"HEAD": "refs/heads/main"}}
    if steps is not None:
        part["steps"] = steps
    return {"taken_at": ARM_TIME, "charter_sha256": None, "repos": {REPO: {
        "taken_at": ARM_TIME, "remotes": {"origin": part},
        "tags": {"available": True, "tags": {}},
        "releases": {"available": True, "releases": []}}}}


def step(ref: str, old: str, new: str, at: str = "2026-11-30T07:05:00Z", *,
         kind: str = "journal", ff: bool | None = None) -> dict[str, Any]:
    return {"ref": ref, "old": old, "new": new, "at": at, "actor": "mallory", "kind": kind,
            "fast_forward": ff}


def entry(ref: str, old: str, new: str, line: int = 1) -> PushEntry:
    return PushEntry(REPO, "origin", ref, old, new, ARM_TIME, "test", line)


def journal(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"available": True, "source": "journal", "steps": list(steps)}


def judged(before_refs: dict[str, str], after_refs: dict[str, str],
           steps: dict[str, Any], entries: tuple[PushEntry, ...] = ()
           ) -> tuple[list[tuple[str, str, str]], list[str]]:
    findings, notes = judge_steps(snap(before_refs), snap(after_refs, steps), {REPO: entries})
    return [(f.kind, f.ref, f.verdict) for f in findings], notes


MAIN = "refs/heads/main"


def test_a_force_push_of_the_default_branch_fails_even_logged_and_undone() -> None:
    steps = journal(step(MAIN, A, B, ff=False), step(MAIN, B, A, ff=False))
    got, _ = judged({MAIN: A}, {MAIN: A}, steps, (entry(MAIN, A, B), entry(MAIN, B, A, 2)))
    assert got == [("step-force-push", MAIN, "NON_FAST_FORWARD")] * 2


def test_a_deletion_of_the_default_branch_fails() -> None:
    steps = journal(step(MAIN, A, ZERO), step(MAIN, ZERO, A))
    got, _ = judged({MAIN: A}, {MAIN: A}, steps)
    assert got == [("step-deleted", MAIN, "NON_FAST_FORWARD")]


def test_fast_forwards_of_the_default_branch_are_left_to_the_net_change() -> None:
    got, _ = judged({MAIN: A}, {MAIN: C},
                    journal(step(MAIN, A, B, ff=True), step(MAIN, B, C, ff=True)))
    assert got == []


def test_a_default_branch_step_of_unknown_ancestry_is_unverified() -> None:
    got, _ = judged({MAIN: A}, {MAIN: C},
                    journal(step(MAIN, A, B, ff=None), step(MAIN, B, C, ff=True)))
    assert got == [("step-unchecked", MAIN, "UNVERIFIED")]
    # The net change itself, and a logged push, are the net change's rules' to check.
    assert judged({MAIN: A}, {MAIN: B}, journal(step(MAIN, A, B, ff=None)))[0] == []
    assert judged({MAIN: A}, {MAIN: C}, journal(step(MAIN, A, B, ff=None)),
                  (entry(MAIN, A, B),))[0] == []


def test_github_says_which_steps_are_fast_forwards() -> None:
    activity = {"available": True, "source": "github-activity",
                "steps": [step(MAIN, A, B, kind="push", ff=True),
                          step(MAIN, B, C, kind="force_push", ff=False)]}
    got, notes = judged({MAIN: A}, {MAIN: C}, activity)
    assert got == [("step-force-push", MAIN, "NON_FAST_FORWARD")]
    assert notes == [f"[{REPO}] origin: tags: net change only (GitHub's activity records "
                     "branches, not tags)"]


def test_a_ref_moved_and_moved_back_by_uncovered_steps_is_ungranted() -> None:
    topic = "refs/heads/topic"
    got, _ = judged({MAIN: A, topic: A}, {MAIN: A, topic: A},
                    journal(step(topic, A, B), step(topic, B, A)))
    assert got == [("step-hidden", topic, "UNGRANTED")] * 2


def test_covered_steps_pass_and_an_uncovered_one_beside_a_logged_net_change_fails() -> None:
    topic = "refs/heads/topic"
    steps = journal(step(topic, ZERO, A), step(topic, A, B), step(topic, B, C))
    logged = (entry(topic, ZERO, A), entry(topic, A, C, 2))
    # The log chains the net change (absent → C), but A..B and B..C were pushed another way.
    got, _ = judged({MAIN: A}, {MAIN: A, topic: C}, steps, logged)
    assert got == [("step-hidden", topic, "UNGRANTED")] * 2
    everything = (*logged, entry(topic, A, B, 3), entry(topic, B, C, 4))
    assert judged({MAIN: A}, {MAIN: A, topic: C}, steps, everything)[0] == []


def test_steps_of_a_net_change_the_log_does_not_explain_add_nothing() -> None:
    topic = "refs/heads/topic"
    got, _ = judged({MAIN: A}, {MAIN: A, topic: B}, journal(step(topic, ZERO, B)))
    assert got == []  # the net change itself is UNGRANTED (audit.judge.compare)


def test_a_step_in_the_arm_second_that_lands_on_the_before_value_is_what_begin_saw() -> None:
    at_arm = "2026-11-30T07:00:00Z"
    topic = "refs/heads/topic"
    got, _ = judged({MAIN: A, topic: B}, {MAIN: A, topic: B},
                    journal(step(topic, A, B, at=at_arm)))
    assert got == []
    # One second later it is a step of the run.
    got, _ = judged({MAIN: A, topic: B}, {MAIN: A, topic: B},
                    journal(step(topic, A, B, at="2026-11-30T07:00:01Z")))
    assert got == [("step-hidden", topic, "UNGRANTED")]


def test_head_and_pull_request_refs_are_not_steps_of_their_own() -> None:
    got, _ = judged({MAIN: A}, {MAIN: A},
                    journal(step("HEAD", A, B), step("refs/pull/1/head", ZERO, B)))
    assert got == []


def test_unavailable_steps_are_unverified_and_no_journal_is_a_note() -> None:
    got, _ = judged({MAIN: A}, {MAIN: A}, {"available": False, "reason": "GitHub answered 403"})
    assert got == [("steps-unavailable", "", "UNVERIFIED")]
    got, notes = judged({MAIN: A}, {MAIN: A},
                        {"available": True, "source": "none", "note": "no journal at /x"})
    assert got == [] and notes == [f"[{REPO}] origin: net change only (no journal at /x)"]


def test_snapshots_without_steps_judge_the_net_change_only() -> None:
    findings, notes = judge_steps(snap({MAIN: A}), snap({MAIN: B}), {REPO: ()})
    assert findings == [] and notes == []


# --- seals ----------------------------------------------------------------------------------------

def arm(row: int, kind: str = "begin", extends: int | None = None,
        before: str = "d" * 64) -> Arm:
    return Arm(row, kind, extends, ARM_TIME, before, None, "t" * 64,
               {"salt": "s", "git": {"path": "/usr/bin/git", "sha256": "g"}, "settings": {}})


def seals(**given: Any) -> Seals:
    base: dict[str, Any] = {"run_dir": "/run", "ledger": "sqlite:///l.db",
                            "arms": (arm(1),), "before_sha256": "d" * 64}
    return Seals(**{**base, **given})


def verdicts(found: tuple[Finding, ...]) -> list[tuple[str, str]]:
    return [(f.kind, f.verdict) for f in found]


def test_the_chain_runs_from_the_first_begin_to_its_newest_add() -> None:
    rows = (arm(1), arm(2, "add", 1, "e" * 64), arm(3, "begin"), arm(4, "add", 2, "f" * 64))
    assert [a.id for a in arm_chain(rows)] == [1, 2, 4]
    judgement = judge_seals(seals(arms=rows, before_sha256="f" * 64))
    assert judgement.head is not None and judgement.head.id == 4
    assert verdicts(judgement.findings) == [("arm-repeated", "TAMPERED")]
    assert judgement.before_ok


def test_a_before_snapshot_not_matching_its_newest_arm_is_tampered() -> None:
    judgement = judge_seals(seals(before_sha256="0" * 64))
    assert verdicts(judgement.findings) == [("before-changed", "TAMPERED")]
    assert not judgement.before_ok


def test_an_arm_in_another_ledger_is_still_tampered_and_says_which_configuration_to_give() -> None:
    """audit-arm.json is the run's to write: it never decides where the seal is looked up, but
    when it names another ledger, the reason says so (begin and closeout given different
    configurations is the honest mistake behind most missing arms)."""
    elsewhere = judge_seals(seals(arms=(), armed_in="sqlite:////home/me/ledger.db"))
    assert verdicts(elsewhere.findings) == [("arm-missing", "TAMPERED")]
    reason = elsewhere.findings[0].reason
    assert "audit-arm.json says it was armed in sqlite:////home/me/ledger.db" in reason
    assert "--config" in reason
    same = judge_seals(seals(arms=(), armed_in="sqlite:///l.db")).findings[0].reason
    assert "audit-arm.json" not in same


def test_no_arm_is_tampered_and_an_unreadable_ledger_is_unverified() -> None:
    assert verdicts(judge_seals(seals(arms=())).findings) == [("arm-missing", "TAMPERED")]
    unread = judge_seals(seals(problem="cannot open the ledger"))
    assert verdicts(unread.findings) == [("seal-unchecked", "UNVERIFIED")]
    assert unread.before_ok


def test_expect_before_is_checked_against_the_begin_row() -> None:
    assert judge_seals(seals(expect_before="D" * 64)).findings == ()
    assert verdicts(judge_seals(seals(expect_before="e" * 64)).findings) == [
        ("before-changed", "TAMPERED")]


def test_the_push_log_is_cross_checked_line_by_row() -> None:
    lines = (LogLine(1, "x"), LogLine(2, "y"), LogLine(3, "x"), LogLine(4, "z", sealed=False))
    rows = (SealedPush(1, "x", ARM_TIME), SealedPush(2, "x", ARM_TIME),
            SealedPush(3, "w", ARM_TIME))
    unrecorded, missing = cross_check(seals(log_lines=lines, pushes=rows))
    assert unrecorded == [2] and [r.id for r in missing] == [3]
    judgement = judge_seals(seals(log_lines=lines, pushes=rows))
    assert verdicts(judgement.findings) == [("push-log-line", "UNGRANTED"),
                                            ("push-log-row", "TAMPERED")]
    assert judgement.unrecorded == frozenset({2})


def test_what_only_an_unsealed_line_covers_is_unverified() -> None:
    def finding(kind: str, verdict: str, commit: str | None = None) -> Finding:
        return Finding(REPO, "origin", MAIN, kind, A, B, commit, verdict, "why")

    loose = [finding("branch-moved", "PUSH_LOGGED"), finding("commit", "PUSH_LOGGED", B),
             finding("commit", "BACKLOG_ONLY", C)]
    strict = [finding("branch-moved", "UNGRANTED"), finding("commit", "UNGRANTED", B),
              finding("commit", "BACKLOG_ONLY", C)]
    assert [f.verdict for f in downgrade_unsealed(loose, strict)] == [
        "UNVERIFIED", "UNVERIFIED", "BACKLOG_ONLY"]


def test_a_hidden_step_only_an_unsealed_line_covers_is_unverified() -> None:
    # topic moved to B and back, the run's unsealed lines covering both steps: the judgement
    # with every line finds nothing, the one without them two hidden steps. What only an
    # unsealed line covers must not pass as "no remote changes".
    topic = "refs/heads/topic"
    steps = journal(step(topic, A, B), step(topic, B, A))
    unsealed = (PushEntry(REPO, "origin", topic, A, B, ARM_TIME, "hook", 1, sealed=False),
                PushEntry(REPO, "origin", topic, B, A, ARM_TIME, "hook", 2, sealed=False))
    before, after = snap({MAIN: A, topic: A}), snap({MAIN: A, topic: A}, steps)
    loose, _ = judge_steps(before, after, {REPO: unsealed})
    strict, _ = judge_steps(before, after, {REPO: ()})
    assert loose == [] and len(strict) == 2
    got = downgrade_unsealed(loose, strict)
    assert [(f.kind, f.verdict) for f in got] == [("step-hidden", "UNVERIFIED")] * 2
    assert all("sealed" in f.reason for f in got)


def test_a_commit_only_an_unsealed_line_covers_is_unverified_inside_a_logged_run() -> None:
    # Lines 1 (unsealed, A..C) and 2 (sealed, B..C): with both, B and C are one run of line 1's
    # (reported by its newest, C); without line 1, B is a push the log never saw.
    def commit(sha: str, verdict: str) -> Finding:
        return Finding(REPO, "origin", MAIN, "commit", A, C, sha, verdict, "why")

    run = commit(C, "PUSH_LOGGED")
    run.count, run.first, run.last = 2, B, C
    branch = Finding(REPO, "origin", MAIN, "branch-moved", A, C, None, "PUSH_LOGGED", "why")
    strict_branch = Finding(REPO, "origin", MAIN, "branch-moved", A, C, None, "UNGRANTED", "w")
    got = downgrade_unsealed([branch, run],
                             [strict_branch, commit(C, "PUSH_LOGGED"), commit(B, "UNGRANTED")])
    assert {(f.kind, f.commit, f.verdict) for f in got} == {
        ("branch-moved", None, "UNVERIFIED"), ("commit", C, "PUSH_LOGGED"),
        ("commit", B, "UNVERIFIED")}
