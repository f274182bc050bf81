"""Every step, not only the net change (SPEC "Evidence the run cannot make"): the ref updates a
server recorded between the arm and closeout, each judged on its own. Pure functions of the
snapshots' plain data: the after-snapshot's remotes carry their `steps` part
(`audit.evidence.steps` reads GitHub's activity or a bare repository's journal).

* A step is covered by a push-log entry (of that repository and remote) with the same ref, old
  and new.
* The default branch: a force push or a deletion is NON_FAST_FORWARD even when undone before
  closeout, logged or not; a step whose ancestry could not be read is UNVERIFIED. Its
  fast-forward steps need nothing more: every commit they brought is still judged one by one
  in the net change, or a later step took it away, and that step is no fast-forward.
  A creation of it while it existed at the arm, no deletion seen first, is UNVERIFIED: the
  record misses a step (or the repository was replaced under its name).
* Any other ref whose net change hides steps (it is unchanged, or the log chains its net change):
  each step no entry covers is UNGRANTED, "a step the net change hides". A ref whose net change
  the log does not explain is failing already; its steps add nothing.
* Steps in the arm's own second whose new value is what the before-snapshot holds are the state
  `begin` saw (the server's times are whole seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.judge.rules import chain
from audit.model import (
    NON_FAST_FORWARD,
    STEPS_FROM_ACTIVITY,
    STEPS_NET_ONLY,
    UNGRANTED,
    UNVERIFIED,
    ZERO,
    Finding,
    PushEntry,
    Step,
    short,
)
from audit.refs import covering, default_branch


def parse_steps(part: Mapping[str, Any]) -> list[Step]:
    return [Step(ref=s["ref"], old=s["old"], new=s["new"], at=s["at"], actor=s.get("actor"),
                 kind=s.get("kind", ""), fast_forward=s.get("fast_forward"))
            for s in part.get("steps", [])]


def judge_steps(before: Mapping[str, Any], after: Mapping[str, Any],
                entries: Mapping[str, Sequence[PushEntry]]
                ) -> tuple[list[Finding], list[str]]:
    """The step findings and the report's notes ("net change only", GitHub's tags)."""
    findings: list[Finding] = []
    notes: list[str] = []
    b_repos: Mapping[str, Any] = before.get("repos", {})
    a_repos: Mapping[str, Any] = after.get("repos", {})
    for repo in sorted(set(b_repos) & set(a_repos)):
        b, a = b_repos[repo], a_repos[repo]
        if b.get("available") is False or a.get("available") is False:
            continue
        arm_second = str(b.get("taken_at") or before.get("taken_at") or "")
        remotes = {**b.get("remotes", {}), **a.get("remotes", {})}
        for name in sorted(set(b.get("remotes", {})) & set(a.get("remotes", {}))):
            b_part, a_part = b["remotes"][name], a["remotes"][name]
            part = a_part.get("steps")
            if part is None or not (b_part.get("available") and a_part.get("available")):
                continue
            if not part.get("available"):
                findings.append(Finding(repo, name, "", "steps-unavailable", None, None, None,
                                        UNVERIFIED, "could not read the steps the server "
                                        f"recorded since the arm: {part.get('reason')}"))
                continue
            source = part.get("source")
            if source == STEPS_NET_ONLY:
                notes.append(f"[{repo}] {name}: net change only ({part.get('note')})")
                continue
            if source == STEPS_FROM_ACTIVITY:
                notes.append(f"[{repo}] {name}: tags: net change only (GitHub's activity "
                             "records branches, not tags)")
            mine = covering(entries.get(repo, ()), name, a_part, remotes)
            steps = [s for s in parse_steps(part)
                     if not _seen_at_arm(s, arm_second, b_part.get("refs", {}))]
            findings.extend(_judge_remote(repo, name, b_part, a_part, steps, mine))
    return findings, notes


def _seen_at_arm(step: Step, arm_second: str, before_refs: Mapping[str, str]) -> bool:
    return step.at[:19] == arm_second[:19] and step.new == before_refs.get(step.ref, ZERO)


def _pushes(entries: Sequence[PushEntry]) -> frozenset[tuple[str, str, str]]:
    """(ref, old, new) of every entry: what covers a step, looked up once per step (a push of
    8,000 tags is 8,000 steps and 8,000 entries)."""
    return frozenset((e.ref, e.old, e.new) for e in entries)


def _covered(step: Step, pushes: frozenset[tuple[str, str, str]]) -> bool:
    return (step.ref, step.old, step.new) in pushes


def _when(step: Step) -> str:
    return f"at {step.at} by {step.actor or 'an unknown actor'}"


def _judge_remote(repo: str, name: str, b_part: Mapping[str, Any], a_part: Mapping[str, Any],
                  steps: Sequence[Step], entries: Sequence[PushEntry]) -> list[Finding]:
    out: list[Finding] = []
    branch = default_branch(b_part, a_part)
    b_refs: Mapping[str, str] = b_part.get("refs", {})
    a_refs: Mapping[str, str] = a_part.get("refs", {})
    pushes = _pushes(entries)
    logged_by_ref: dict[str, list[PushEntry]] = {}
    for e in entries:
        logged_by_ref.setdefault(e.ref, []).append(e)
    by_ref: dict[str, list[Step]] = {}
    for step in steps:
        if step.ref == "HEAD" or step.ref.startswith("refs/pull/") or step.old == step.new:
            continue  # HEAD follows its branch; pull-request refs are the forge's
        by_ref.setdefault(step.ref, []).append(step)
    for ref, mine in sorted(by_ref.items()):
        if ref == branch:
            net = (b_refs.get(ref, ZERO), a_refs.get(ref, ZERO))
            out.extend(_default_branch(repo, name, mine, pushes, net))
            continue
        uncovered = [step for step in mine if not _covered(step, pushes)]
        if not uncovered:
            continue
        before, after = b_refs.get(ref), a_refs.get(ref)
        if before != after and chain(logged_by_ref.get(ref, []), before, after) is None:
            continue  # the net change is judged, and fails, on its own
        out.extend(Finding(
            repo, name, ref, "step-hidden", step.old, step.new, None, UNGRANTED,
            f"a step the net change hides: {ref} {short(step.old)}..{short(step.new)} "
            f"{_when(step)}") for step in uncovered)
    return out


def _default_branch(repo: str, name: str, steps: Sequence[Step],
                    pushes: frozenset[tuple[str, str, str]], net: tuple[str, str]
                    ) -> list[Finding]:
    out: list[Finding] = []
    # Present at the arm: until a deletion is seen, a creation means one the server's record
    # does not show (the repository deleted or renamed away and made again under its name).
    present = net[0] != ZERO
    for step in steps:
        covered = _covered(step, pushes)
        logged = " (logged)" if covered else ""
        if step.new == ZERO:
            present = False
            out.append(Finding(
                repo, name, step.ref, "step-deleted", step.old, step.new, None, NON_FAST_FORWARD,
                f"the default branch was deleted {_when(step)}{logged}: a failure even when "
                "logged or undone before closeout"))
        elif step.old == ZERO:
            if present:
                out.append(Finding(
                    repo, name, step.ref, "step-unchecked", step.old, step.new, None, UNVERIFIED,
                    f"the default branch was created {_when(step)}{logged} though it existed "
                    "at the arm: its deletion, or the repository's replacement, is not in the "
                    "server's record"))
            present = True  # otherwise its commits are judged in the net change
        elif step.fast_forward is False or step.kind == "force_push":
            out.append(Finding(
                repo, name, step.ref, "step-force-push", step.old, step.new, None,
                NON_FAST_FORWARD,
                f"force push {short(step.old)}..{short(step.new)} {_when(step)}{logged}: not a "
                "fast-forward, even when undone before closeout"))
        elif step.fast_forward is None and step.kind not in ("push", "pr_merge",
                                                             "merge_queue_merge") \
                and not covered and (step.old, step.new) != net:
            # The net change itself and a logged push are checked by the net change's rules
            # (a rewrite there is NON_FAST_FORWARD, one that cannot be checked UNVERIFIED).
            out.append(Finding(
                repo, name, step.ref, "step-unchecked", step.old, step.new, None, UNVERIFIED,
                f"step {short(step.old)}..{short(step.new)} {_when(step)}: could not tell "
                "whether it was a fast-forward"))
    return out
