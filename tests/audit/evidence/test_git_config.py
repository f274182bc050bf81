"""No git setting the run can write changes what the audit reads: not in its clone (grafts,
replace refs, hooks, an upload-pack, a log encoding, trailer separators, a partial clone's
promisor, an alternate-refs command), not in the user's global config (insteadOf, hidden refs).
The audit's environment holds the GitHub token, so a command the run configured and the audit's
git then ran would hold it too. Each test builds the attack for real: a clone, a bare remote,
pushes; each was a false pass, or a wrong verdict, before git was run hardened."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import (
    Run,
    branch_verdict,
    commit,
    commit_verdicts,
    git,
    isolate_git,
    make_bare,
    other_clone,
    rev,
    verdicts,
)

from audit.model import BACKLOG_ONLY, NON_FAST_FORWARD, UNGRANTED, UNVERIFIED, exit_code


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_grafts_cannot_turn_a_rewrite_into_a_fast_forward(tmp_path: Path) -> None:
    run = Run(tmp_path)
    base = rev(run.clone, "HEAD")
    kept = commit(run.clone, "src/auth.py", "check()\n", "auth")
    run.push()
    run.before = run.snapshot()
    # Rewrite: a new commit on the old base with the same tree plus a backlog change, so that
    # with a graft naming `kept` as its parent it reads as a backlog-only fast-forward.
    git(run.clone, "checkout", "-q", "-b", "rewrite", base)
    git(run.clone, "checkout", "-q", kept, "--", ".")
    commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task")
    forged = rev(run.clone, "HEAD")
    run.push("rewrite", force=True, logged=False)
    grafts = run.clone / ".git" / "info" / "grafts"
    grafts.parent.mkdir(exist_ok=True)
    grafts.write_text(f"{forged} {kept}\n")
    findings = run.judge()
    assert branch_verdict(findings) == NON_FAST_FORWARD
    assert exit_code(findings) == 1


def test_an_ignored_submodule_gitlink_is_not_backlog_only(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sub_a, sub_b = "1" * 40, "2" * 40
    (run.clone / ".gitmodules").write_text(
        '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\tignore = all\n')
    git(run.clone, "update-index", "--add", "--cacheinfo", f"160000,{sub_a},vendor/lib")
    git(run.clone, "add", ".gitmodules")
    git(run.clone, "commit", "-q", "-m", "vendor lib")
    run.push()
    run.before = run.snapshot()
    git(run.clone, "update-index", "--cacheinfo", f"160000,{sub_b},vendor/lib")
    moved = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "task (and a gitlink)")
    git(run.clone, "config", "diff.ignoreSubmodules", "all")
    git(run.clone, "config", "submodule.lib.ignore", "all")
    run.push(logged=False)
    findings = run.judge()
    assert commit_verdicts(findings) == {moved: UNGRANTED}
    assert "vendor/lib" in next(f for f in findings if f.commit == moved).reason


def test_a_utf16_log_encoding_does_not_blur_ungranted_into_unverified(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    git(run.clone, "config", "i18n.logOutputEncoding", "UTF-16")
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}
    assert exit_code(findings) == 1


def test_a_configured_upload_pack_cannot_serve_an_untouched_mirror(tmp_path: Path) -> None:
    run = Run(tmp_path)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(run.bare), str(mirror))
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    script = tmp_path / "fake-upload-pack"
    script.write_text(f'#!/bin/sh\nexec git-upload-pack "{mirror}"\n')
    script.chmod(0o755)
    git(run.clone, "config", "remote.origin.uploadpack", str(script))
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}


def test_a_trailer_separator_setting_cannot_forge_another_session(tmp_path: Path) -> None:
    run = Run(tmp_path, session="mine")
    # "Claude-Session= other" is no trailer under git's default separator (":").
    forged = commit(run.clone, "src/x.py", "x\n", "forged", trailers=())
    git(run.clone, "commit", "-q", "--amend", "-m", "forged\n\nClaude-Session= other")
    forged = rev(run.clone, "HEAD")
    run.push(logged=False)
    commit(run.clone, "src/y.py", "y\n", "mine on top", trailers=[("Claude-Session", "mine")])
    run.push()
    git(run.clone, "config", "trailer.separators", ":=")
    findings = run.judge()
    assert commit_verdicts(findings)[forged] == UNGRANTED


def test_closeout_runs_none_of_the_clones_hooks_when_it_fetches(tmp_path: Path) -> None:
    run = Run(tmp_path)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(run.bare), str(other))
    commit(other, "backlog/tasks/task-1.md", "x\n", "from elsewhere")
    git(other, "push", "-q", "origin", "main")
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    for name in ("reference-transaction", "post-checkout", "post-merge"):
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
        hook.chmod(0o755)
    git(run.clone, "config", "core.hooksPath", str(hooks))
    findings = run.judge()
    assert verdicts(findings)[("refs/heads/main", "branch-moved")] == BACKLOG_ONLY
    assert not marker.exists()


def test_a_replaced_commit_is_judged_as_itself(tmp_path: Path) -> None:
    run = Run(tmp_path)
    sneaky = commit(run.clone, "src/x.py", "x\n", "sneak")
    run.push(logged=False)
    git(run.clone, "checkout", "-q", "-b", "decoy", "HEAD~1")
    decoy = commit(run.clone, "backlog/tasks/task-1.md", "x\n", "decoy")
    git(run.clone, "replace", sneaky, decoy)
    findings = run.judge()
    assert commit_verdicts(findings) == {sneaky: UNGRANTED}


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


def test_hidden_refs_in_the_global_config_cannot_hide_a_push_from_the_snapshot(
        tmp_path: Path) -> None:
    """For a remote on this machine git runs upload-pack with the caller's global config (kept:
    it holds credentials and insteadOf rules; `-c` does not reach a local upload-pack). A
    `uploadpack.hideRefs` or `transfer.hideRefs` written there at closeout hid the branch and
    the tag the run pushed unlogged: no finding at all, exit 0."""
    run = Run(tmp_path)
    commit(run.clone, "deploy.sh", "evil\n", "evil")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/evil", "HEAD:refs/tags/evil")
    global_config = tmp_path / "gitconfig-global"
    global_config.write_text("[uploadpack]\n\thideRefs = refs/heads/evil\n"
                             "[transfer]\n\thideRefs = refs/tags/evil\n\thideRefs = HEAD\n")
    git(run.bare, "config", "uploadpack.hideRefs", "refs/heads/main")
    found = verdicts(run.judge())
    assert found == {("refs/heads/evil", "branch-added"): UNGRANTED,
                     ("refs/tags/evil", "tag-added"): UNGRANTED}
