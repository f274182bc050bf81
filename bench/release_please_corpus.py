"""Replay the tagged release-please release commits of real repositories through the audit's own
judgement, offline, and print the false-alarm rate.

Usage: python bench/release_please_corpus.py [--show N] [--untagged] [--as-worded] GIT_DIR...

Each GIT_DIR is a clone (bare or not) of a repository that releases with release-please. Every
commit reachable from its refs whose subject is shaped like a release (`chore(<scope>): release
…`, `chore: release …`) and that a tag points at is judged as closeout judges a commit no
push-log entry covers: its raw changes, subject and trailers read with `read_commits` (the same
four git processes per repository as per branch in closeout, the blobs checked against their
names), then `RELEASE_PLEASE` or not by the same judge (`audit.judge`), under a charter that
grants release-please, with a published release by `release-please[bot]` for every tag on the
commit (the real releases are not read: this measures the content rule). A tagged release commit
judged anything else is a false alarm; the most common reasons are printed. `--untagged` also
judges the release-shaped commits no tag points at (a Java `-SNAPSHOT` bump needs no release;
any other untagged one fails by design). `--as-worded` judges by the contract's words alone,
without the audit's one tightening (a release never lowers a version's numbers).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from audit.evidence.git import run_git  # noqa: E402
from audit.evidence.history import read_commits  # noqa: E402
from audit.judge.compare import RepoJudge  # noqa: E402
from audit.model import RELEASE_PLEASE, Charter, Commit, Grant, History  # noqa: E402
from audit.releases import is_release_subject  # noqa: E402
from jobs.git.hardened import hardened_argv  # noqa: E402

GH = "corpus/repo"
GH_URL = f"https://github.com/{GH}.git"


def release_commits(repo: str) -> list[tuple[str, tuple[str, ...], str]]:
    """(sha, parents, subject) of every release-shaped commit reachable from the refs."""
    out = run_git(repo, *hardened_argv("log", "--all", "--format=%H%x1f%P%x1f%s"),
                  errors="replace")
    found = []
    for line in out.split("\n"):
        fields = line.split("\x1f")
        if len(fields) == 3 and is_release_subject(fields[2]):
            found.append((fields[0], tuple(fields[1].split()), fields[2]))
    return found


def tags_by_commit(repo: str) -> dict[str, list[str]]:
    out = run_git(repo, *hardened_argv("for-each-ref", "refs/tags",
                                       "--format=%(objectname) %(*objectname) %(refname)"))
    found: dict[str, list[str]] = {}
    for line in out.split("\n"):
        parts = line.split(" ")
        if len(parts) == 3:
            target = parts[1] or parts[0]
            found.setdefault(target, []).append(parts[2])
        elif len(parts) == 2:  # a lightweight tag: no peeled name
            found.setdefault(parts[0], []).append(parts[1])
    return found


def judge_repo(repo: str, untagged: bool, as_worded: bool = False
               ) -> list[tuple[str, str, str, bool]]:
    """(sha, subject, verdict and reason, tagged) for each release-shaped commit of `repo`."""
    tags = tags_by_commit(repo)
    chosen = [(s, p, subj) for s, p, subj in release_commits(repo) if untagged or s in tags]
    if not chosen:
        return []
    bare = [Commit(sha, parents, None) for sha, parents, _ in chosen]
    commits, untrusted, problems = read_commits(repo, bare, [c.sha for c in bare], bare[0].sha)
    if untrusted is not None:
        raise SystemExit(f"{repo}: {untrusted}")
    refs: dict[str, str] = {"refs/heads/main": chosen[0][0]}
    releases: list[dict[str, Any]] = []
    for sha, _parents, _subject in chosen:
        for ref in tags.get(sha, []):
            refs[ref] = sha
            releases.append({"tag_name": ref.removeprefix("refs/tags/"), "draft": False,
                             "author": "release-please[bot]", "repo": GH})
    part = {"available": True, "url": GH_URL, "refs": refs, "symrefs": {}}
    snap = {"remotes": {"origin": part}, "tags": {"available": True, "tags": {}},
            "releases": {"available": True, "releases": releases, "github_repos": [GH]}}
    charter = Charter(Path("charter.md"), GH, 1, (Grant("release-please", GH),), None, "")
    judge = RepoJudge(repo, snap, snap, (), charter, History({}, {}), ())
    judge.never_lower = not as_worded
    out = []
    for commit, (sha, _parents, subject) in zip(commits, chosen, strict=True):
        got = judge._release_commit(commit, [GH])
        verdict = f"{got[0]} {got[1]}" if got is not None else "not release-shaped"
        if sha in problems:
            verdict = f"UNVERIFIED {problems[sha]}"
        out.append((sha, subject, verdict, sha in tags))
    return out


def category(verdict: str) -> str:
    """A reason without its specifics (line numbers, versions), to count like ones together."""
    why = verdict.split(" but ", 1)[-1]
    where, _, what = why.partition(": ")
    name = where.split(" line ")[0].rsplit("/", 1)[-1]
    if "→" in what:
        what = what.split(": ", 1)[-1] if ": " in what else what.split(" ", 3)[-1]
    return f"{name}: {what[:70]}"


def main(argv: list[str]) -> int:
    show = int(argv[argv.index("--show") + 1]) if "--show" in argv else 3
    untagged = "--untagged" in argv
    as_worded = "--as-worded" in argv
    repos = [a for i, a in enumerate(argv) if not a.startswith("--")
             and (i == 0 or argv[i - 1] != "--show")]
    if not repos:
        print(__doc__)
        return 2
    total_tagged = total_alarms = 0
    reasons: Counter[str] = Counter()
    print(f"{'repository':<55} {'tagged':>7} {'pass':>6} {'false alarms':>13}"
          + (f" {'untagged':>9} {'pass':>6}" if untagged else ""))
    for repo in repos:
        rows = judge_repo(repo, untagged, as_worded)
        tagged = [r for r in rows if r[3]]
        alarms = [r for r in tagged if not r[2].startswith(RELEASE_PLEASE)]
        total_tagged += len(tagged)
        total_alarms += len(alarms)
        reasons.update(category(r[2]) for r in alarms)
        line = f"{repo[-55:]:<55} {len(tagged):>7} {len(tagged) - len(alarms):>6} {len(alarms):>13}"
        if untagged:
            rest = [r for r in rows if not r[3]]
            ok = sum(r[2].startswith(RELEASE_PLEASE) for r in rest)
            line += f" {len(rest):>9} {ok:>6}"
        print(line)
        for sha, subject, verdict, _ in alarms[:show]:
            print(f"    {sha[:10]} {subject[:50]!r}: {verdict[:150]}")
    rate = total_alarms / total_tagged if total_tagged else 0.0
    print(f"\n{total_tagged} tagged release commits, {total_alarms} false alarms: "
          f"{100 * rate:.2f}%")
    print("most common reasons:")
    for why, n in reasons.most_common(12):
        print(f"  {n:>5}  {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
