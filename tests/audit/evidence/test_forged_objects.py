"""The clone's object store is the run's to edit: a commit or tree object rewritten in place, or
commits below the run given other parents, cannot turn a rewrite into a fast-forward or a code
change into BACKLOG_ONLY, and an honest clone's trees still pass."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest
from audit_helpers import Run, commit, git, isolate_git, rev, run_cli, write_snapshot

from audit.model import NON_FAST_FORWARD, UNVERIFIED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def _forge(clone: Path, sha: str, kind: str, body: bytes) -> None:
    """Rewrite object `sha`'s loose file in the clone to hold `body` (of type `kind`)."""
    loose = clone / ".git" / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(kind.encode() + b" %d\0" % len(body) + body))


def _tree(clone: Path, sha: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), "cat-file", "tree", sha],
                          capture_output=True, check=True).stdout


def _with_parents(clone: Path, sha: str, *extra: str) -> None:
    """Forge commit `sha` in the clone: more parents, and a committer date in the far future
    (git's ancestry walk visits commits newest first)."""
    raw = git(clone, "cat-file", "commit", sha).encode()
    head, _, message = raw.partition(b"\n\n")
    lines = [ln for ln in head.split(b"\n") if not ln.startswith(b"committer ")]
    lines[1:1] = [b"parent " + p.encode() for p in extra]
    lines.append(b"committer X <x@example.invalid> 4102444800 +0000")
    _forge(clone, sha, "commit", b"\n".join(lines) + b"\n\n" + message)


def test_a_forged_commit_object_cannot_turn_a_rewrite_into_a_fast_forward(
        tmp_path: Path) -> None:
    """git checks an object against its name when a walk starts from it, not when it follows a
    parent. The run rewrote an intermediate commit's object file in its clone so that its parent
    line named the old tip: the rewrite read as a fast-forward, and closeout passed (exit 0)
    what fails "whatever the log says"."""
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    kept = commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "checkout", "-q", "-b", "rewrite", base)
    dropped = commit(run.clone, "src/auth.py", "pass\n", "disable auth")
    commit(run.clone, "backlog/t.md", "x\n", "task")
    run.push("rewrite", force=True)  # logged: a rewrite fails all the same
    raw = git(run.clone, "cat-file", "commit", dropped)
    forged = raw.replace(f"parent {base}", f"parent {kept}").encode()
    loose = run.clone / ".git" / "objects" / dropped[:2] / dropped[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"commit %d\0" % len(forged) + forged))
    done = run_cli("compare", str(write_snapshot(tmp_path / "before.json", run.before)),
                   str(write_snapshot(tmp_path / "after.json", run.snapshot())),
                   "--push-log", str(run.log), "--json")
    assert done.returncode != 0, done.stdout
    findings = json.loads(done.stdout)["findings"]
    branch = next(f for f in findings if f["kind"] == "branch-moved")
    assert branch["verdict"] in (NON_FAST_FORWARD, UNVERIFIED), branch
    assert all(f["verdict"] != "PUSH_LOGGED" for f in findings)


@pytest.mark.parametrize("where", ["root tree", "subtree"])
def test_a_forged_tree_object_cannot_make_a_code_change_backlog_only(
        tmp_path: Path, where: str) -> None:
    """Commits are checked against their names; trees were not. The run pushed, unlogged, a
    commit changing src/auth.py and a task, then rewrote a tree object of that commit in its
    clone so that src/ read as unchanged (its root tree naming the old src/ tree, or its src/
    tree holding the old entries): git reported only the task, and the code change passed
    as BACKLOG_ONLY."""
    run = Run(tmp_path)
    commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    (run.clone / "src" / "auth.py").write_text("pass\n")
    git(run.clone, "add", "src/auth.py")
    sneak = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task and a little more")
    run.push(logged=False)
    old_src, new_src = rev(run.clone, f"{sneak}^:src"), rev(run.clone, f"{sneak}:src")
    assert old_src != new_src
    if where == "root tree":
        root = rev(run.clone, f"{sneak}^{{tree}}")
        _forge(run.clone, root, "tree",
               _tree(run.clone, root).replace(bytes.fromhex(new_src), bytes.fromhex(old_src)))
    else:
        _forge(run.clone, new_src, "tree", _tree(run.clone, old_src))
    listed = git(run.clone, "log", "-1", "--name-only", "--format=", sneak).split()
    assert listed == ["backlog/tasks/task-1.md"]  # the forgery works on git itself

    done = run_cli("compare", str(write_snapshot(tmp_path / "before.json", run.before)),
                   str(write_snapshot(tmp_path / "after.json", run.snapshot())),
                   "--push-log", str(run.log), "--json")

    assert done.returncode != 0, done.stdout
    findings = json.loads(done.stdout)["findings"]
    assert all(f["verdict"] != "BACKLOG_ONLY" for f in findings), findings
    branch = next(f for f in findings if f["kind"] == "branch-moved")
    assert branch["verdict"] == UNVERIFIED and "tree" in branch["reason"], branch


def test_a_backlog_only_commit_whose_trees_are_intact_still_passes(tmp_path: Path) -> None:
    """The trees' check finds nothing wrong in an honest clone: a task edit, a task moved to
    completed/, a new folder under backlog/ and a merge of two task edits pass."""
    run = Run(tmp_path)
    commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task 1")
    run.push()
    run.before = run.snapshot()
    commit(run.clone, "backlog/tasks/task-1.md", "y\n", "edit task 1")
    (run.clone / "backlog" / "completed").mkdir()
    git(run.clone, "mv", "backlog/tasks/task-1.md", "backlog/completed/task-1.md")
    git(run.clone, "commit", "-q", "-m", "complete task 1")
    commit(run.clone, "backlog/docs/deep/er/doc-1.md", "d\n", "a doc")
    base = rev(run.clone, "HEAD")
    git(run.clone, "checkout", "-q", "-b", "side")
    commit(run.clone, "backlog/tasks/task-2.md", "2\n", "task 2")
    git(run.clone, "checkout", "-q", "main")
    commit(run.clone, "backlog/tasks/task-3.md", "3\n", "task 3")
    git(run.clone, "merge", "-q", "--no-edit", "side")
    assert rev(run.clone, "HEAD^") != base
    run.push(logged=False)

    done = run_cli("compare", str(write_snapshot(tmp_path / "before.json", run.before)),
                   str(write_snapshot(tmp_path / "after.json", run.snapshot())),
                   "--push-log", str(run.log), "--json")

    findings = json.loads(done.stdout)["findings"]
    assert done.returncode == 0, findings
    assert {f["verdict"] for f in findings if f["kind"] == "commit"} == {"BACKLOG_ONLY"}


def test_forged_commits_below_the_run_cannot_make_logged_rewrites_fast_forwards(
        tmp_path: Path) -> None:
    """A logged push whose old tip the checked graph does not hold was asked of `merge-base`,
    whose walk reads objects below the run's first commit unchecked. The run force-pushed a
    task onto an older commit X (logged), then force-pushed its work back onto the before tip
    (logged): two rewrites in the middle of the run. It then gave X the before tip as a parent,
    and the commit M between them its dropped task, each dated in the future so that git's
    walk reaches them first: both rewrites read as fast-forwards, and closeout passed."""
    run = Run(tmp_path)
    x = commit(run.clone, "src/x.py", "x\n", "X")
    m = commit(run.clone, "src/m.py", "m\n", "M")
    commit(run.clone, "src/base.py", "b\n", "before the run")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "checkout", "-q", "-b", "old", x)
    dropped = commit(run.clone, "backlog/tasks/a.md", "a\n", "task a")
    run.push("old", force=True)
    git(run.clone, "checkout", "-q", "main")
    commit(run.clone, "backlog/tasks/b.md", "b\n", "task b")
    run.push(force=True)

    def compare() -> subprocess.CompletedProcess[str]:
        return run_cli("compare", str(write_snapshot(tmp_path / "before.json", run.before)),
                       str(write_snapshot(tmp_path / "after.json", run.snapshot())),
                       "--push-log", str(run.log), "--json")

    honest = compare()
    assert honest.returncode != 0 and "rewritten in the middle" in honest.stdout, honest.stdout
    _with_parents(run.clone, x, rev(run.clone, "main~1"))
    _with_parents(run.clone, m, dropped)

    done = compare()

    assert done.returncode != 0, done.stdout
    branch = next(f for f in json.loads(done.stdout)["findings"] if f["kind"] == "branch-moved")
    assert branch["verdict"] in (NON_FAST_FORWARD, UNVERIFIED), branch
