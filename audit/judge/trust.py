"""What the object store's checks mean for a judgement (SPEC: the run controls its object store).

The evidence side checks every commit of a branch it reads against its name, and the trees of
each commit that could pass because of its paths (`BranchHistory.untrusted`,
`untrusted_paths`). Only a branch that would pass is failed by what they found: an edited
object could not make a failing branch worse for the run, and its commits' verdicts are worth
more to the report than "could not check". So the judgement is made once, then the branches
that would pass on evidence that does not hold up are marked, and judged again.
"""

from __future__ import annotations

from dataclasses import replace

from audit.model import FAILING, PATH_VERDICTS, BranchHistory, Finding, History


def distrusted(history: History, findings: list[Finding]) -> History:
    """`history` with each branch that `findings` let pass, but whose commit objects, or the
    trees of a commit passing because of its paths, do not hold up, made a branch that could
    not be checked; the same object when there is none."""
    failing = {(f.repo, f.remote, f.ref) for f in findings
               if f.kind.startswith("branch-") and f.verdict in FAILING}
    by_paths: dict[tuple[str, str, str], set[str]] = {}
    for f in findings:
        if f.kind == "commit" and f.commit is not None and f.verdict in PATH_VERDICTS:
            by_paths.setdefault((f.repo, f.remote, f.ref), set()).add(f.commit)
    branches = dict(history.branches)
    changed = False
    for key, hist in history.branches.items():
        if key in failing or hist.problem is not None or not hist.commits:
            continue
        judged = by_paths.get(key, set())
        why = hist.untrusted or next(
            (hist.untrusted_paths[c.sha] for c in hist.commits
             if c.sha in judged and c.sha in hist.untrusted_paths), None)
        if why is not None:
            branches[key] = BranchHistory(None, problem=why)
            changed = True
    return replace(history, branches=branches) if changed else history
