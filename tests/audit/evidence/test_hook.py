"""The pre-push hook against real pushes to real bare remotes, from a script and from `just`."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from audit_helpers import ZERO, commit, git, isolate_git, make_repo_with_remote, rev, run_cli

from audit.evidence.pushlog import read_push_log, same_repo
from audit.evidence.rundir import PUSH_LOG
from audit.main import main as audit_main
from audit.model import PushEntry


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def install(repo: Path, *extra: str) -> None:
    assert audit_main(["hook", "install", str(repo), *extra]) == 0


def push(repo: Path, *args: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), "push", *args], capture_output=True,
                          text=True, env=env, check=False)


def logged(run_dir: Path) -> list[tuple[str, str, str, str]]:
    return [(e.remote, e.ref, e.old, e.new) for e in read_push_log(run_dir / PUSH_LOG)]


def entries(run_dir: Path) -> list[PushEntry]:
    return read_push_log(run_dir / PUSH_LOG)


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    clone, bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("LOOP_PI_RUN_DIR", str(run_dir))
    install(clone)
    return clone, bare, run_dir


def test_hook_records_branch_creation_update_deletion_and_tag_pushes(
        setup: tuple[Path, Path, Path]) -> None:
    clone, bare, run_dir = setup
    main0 = rev(clone, "HEAD")
    main1 = commit(clone, "a.txt", "a\n", "update main")
    git(clone, "branch", "feature")
    git(clone, "tag", "light")
    git(clone, "tag", "-a", "v1.0.0", "-m", "release 1.0.0")
    tag_object = rev(clone, "refs/tags/v1.0.0")
    assert tag_object != main1

    assert push(clone, "origin", "main").returncode == 0                      # update
    assert push(clone, "origin", "feature").returncode == 0                   # creation
    assert push(clone, "origin", "light", "v1.0.0").returncode == 0           # two tags
    assert push(clone, "origin", ":refs/heads/feature").returncode == 0       # deletion

    assert logged(run_dir) == [
        ("origin", "refs/heads/main", main0, main1),
        ("origin", "refs/heads/feature", ZERO, main1),
        ("origin", "refs/tags/light", ZERO, main1),
        ("origin", "refs/tags/v1.0.0", ZERO, tag_object),
        ("origin", "refs/heads/feature", main1, ZERO),
    ]
    first = entries(run_dir)[0]
    assert first.repo == str(clone.resolve()) and first.source == "pre-push-hook"
    assert first.at.endswith("Z")
    # The log and the remote agree on what happened.
    assert rev(bare, "refs/tags/v1.0.0") == tag_object and rev(bare, "main") == main1


def test_hook_records_a_push_made_by_a_shell_script(setup: tuple[Path, Path, Path],
                                                     tmp_path: Path) -> None:
    clone, _, run_dir = setup
    new = commit(clone, "b.txt", "b\n", "scripted")
    script = tmp_path / "ship.sh"
    script.write_text(f"#!/bin/sh\nset -e\ncd {clone}\n"
                      "git push -q origin HEAD:refs/heads/scripted 2>/dev/null\n")
    script.chmod(0o755)
    subprocess.run([str(script)], check=True)
    assert logged(run_dir) == [("origin", "refs/heads/scripted", ZERO, new)]


def test_hook_records_a_push_made_by_a_just_recipe(setup: tuple[Path, Path, Path]) -> None:
    clone, _, run_dir = setup
    before = rev(clone, "HEAD")
    new = commit(clone, "justfile", "ship:\n    git push -q origin HEAD:main\n", "add recipe")
    just = shutil.which("just")
    assert just is not None
    done = subprocess.run([just, "ship"], cwd=clone, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert logged(run_dir) == [("origin", "refs/heads/main", before, new)]


def test_an_existing_rejecting_hook_still_rejects_and_gets_the_same_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("LOOP_PI_RUN_DIR", str(run_dir))
    seen = tmp_path / "seen.txt"
    original = clone / ".git" / "hooks" / "pre-push"
    original.write_text(f'#!/bin/sh\necho "args: $1 $2" > {seen}\ncat >> {seen}\n'
                        'echo "policy says no" >&2\nexit 1\n')
    original.chmod(0o750)
    original_bytes = original.read_bytes()
    install(clone)
    old = rev(clone, "HEAD")
    new = commit(clone, "c.txt", "c\n", "refused")

    done = push(clone, "origin", "main")

    assert done.returncode != 0 and "policy says no" in done.stderr
    assert rev(bare, "main") == old  # the push did not happen
    assert seen.read_text() == (f"args: origin {bare}\n"
                                f"refs/heads/main {new} refs/heads/main {old}\n")
    assert logged(run_dir) == []  # refused before transfer: nothing to explain

    assert audit_main(["hook", "uninstall", str(clone)]) == 0
    assert original.read_bytes() == original_bytes
    assert stat.S_IMODE(original.stat().st_mode) == 0o750
    assert not (original.parent / "pre-push.loop-pi-audit-chained").exists()


def test_an_existing_accepting_hook_runs_and_the_push_is_logged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    seen = tmp_path / "seen.txt"
    hook = clone / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ncat > {seen}\nexit 0\n")
    hook.chmod(0o755)
    install(clone, "--run-dir", str(run_dir))  # the run dir given at install, none at push
    new = commit(clone, "d.txt", "d\n", "accepted")
    assert push(clone, "origin", "HEAD:refs/heads/x").returncode == 0
    assert seen.read_text() == f"HEAD {new} refs/heads/x {ZERO}\n"
    assert logged(run_dir) == [("origin", "refs/heads/x", ZERO, new)]


def test_install_twice_is_idempotent_and_uninstall_restores_nothing_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    hooks = clone / ".git" / "hooks"
    mine = hooks / "pre-push"
    install(clone, "--run-dir", str(tmp_path / "run"))
    first = mine.read_bytes()
    install(clone, "--run-dir", str(tmp_path / "run"))
    assert mine.read_bytes() == first
    assert not (hooks / "pre-push.loop-pi-audit-chained").exists()
    assert os.access(mine, os.X_OK)
    assert audit_main(["hook", "uninstall", str(clone)]) == 0
    assert not mine.exists()
    assert audit_main(["hook", "uninstall", str(clone)]) == 0  # nothing to do, says so


def test_uninstall_leaves_a_foreign_hook_alone(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    foreign = clone / ".git" / "hooks" / "pre-push"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    assert audit_main(["hook", "uninstall", str(clone)]) == 1
    assert "not the loop-pi-audit hook" in capsys.readouterr().err
    assert foreign.read_text() == "#!/bin/sh\nexit 0\n"


def test_core_hooks_path_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    git(clone, "config", "core.hooksPath", "githooks")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    install(clone, "--run-dir", str(run_dir))
    assert (clone / "githooks" / "pre-push").exists()
    assert not (clone / ".git" / "hooks" / "pre-push").exists()
    new = commit(clone, "e.txt", "e\n", "via hooksPath")
    assert push(clone, "origin", "HEAD:refs/heads/hp").returncode == 0
    assert logged(run_dir) == [("origin", "refs/heads/hp", ZERO, new)]


def test_push_time_run_dir_wins_over_the_installed_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    installed, current = tmp_path / "installed-run", tmp_path / "current-run"
    installed.mkdir()
    current.mkdir()
    install(clone, "--run-dir", str(installed))
    new = commit(clone, "f.txt", "f\n", "f")
    env = {**os.environ, "LOOP_PI_RUN_DIR": str(current)}
    assert push(clone, "origin", "HEAD:refs/heads/y", env=env).returncode == 0
    assert logged(current) == [("origin", "refs/heads/y", ZERO, new)]
    assert logged(installed) == []


def test_without_any_run_dir_the_hook_warns_and_lets_the_push_go(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    install(clone)
    assert "logged only while $LOOP_PI_RUN_DIR is set" in capsys.readouterr().err
    new = commit(clone, "g.txt", "g\n", "g")
    done = push(clone, "origin", "main")
    assert done.returncode == 0
    assert "no run directory" in done.stderr and "not logged" in done.stderr
    assert rev(bare, "main") == new


def test_a_push_that_cannot_be_logged_is_refused_loudly_unless_allowed(
        tmp_path: Path) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    old = rev(clone, "HEAD")
    install(clone, "--run-dir", str(tmp_path / "vanished-run"))
    new = commit(clone, "h.txt", "h\n", "h")
    done = push(clone, "origin", "main")
    assert done.returncode != 0
    assert "could not log this push" in done.stderr and "push refused" in done.stderr
    assert rev(bare, "main") == old
    env = {**os.environ, "LOOP_PI_AUDIT_ALLOW_UNLOGGED": "1"}
    done = push(clone, "origin", "main", env=env)
    assert done.returncode == 0
    assert "could not log this push" in done.stderr and "pushing anyway" in done.stderr
    assert rev(bare, "main") == new


def test_a_push_from_a_linked_worktree_counts_for_the_repository(
        setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    clone, _, run_dir = setup
    worktree = tmp_path / "wt"
    git(clone, "worktree", "add", "-q", str(worktree), "-b", "wt-branch")
    new = commit(worktree, "w.txt", "w\n", "from the worktree")
    assert push(worktree, "origin", "wt-branch").returncode == 0
    [entry] = entries(run_dir)
    assert (entry.ref, entry.old, entry.new) == ("refs/heads/wt-branch", ZERO, new)
    assert entry.repo == str(worktree.resolve())
    assert same_repo(entry.repo, str(clone))


def test_hook_install_on_a_non_repository_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    assert audit_main(["hook", "install", str(tmp_path / "plain")]) == 2
    assert "not a git repository" in capsys.readouterr().err


def test_a_push_to_a_url_is_logged_under_the_remote_with_that_url(
        setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    clone, bare, run_dir = setup
    new = commit(clone, "u.txt", "u\n", "pushed by URL")
    assert push(clone, str(bare), "HEAD:refs/heads/by-url").returncode == 0
    other = tmp_path / "elsewhere.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    assert push(clone, str(other), "HEAD:refs/heads/by-url").returncode == 0
    assert logged(run_dir) == [("origin", "refs/heads/by-url", ZERO, new),
                               (str(other), "refs/heads/by-url", ZERO, new)]


def test_a_repository_with_its_own_audit_package_cannot_hijack_the_hook(
        setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    clone, _, run_dir = setup
    (clone / "audit").mkdir()
    (clone / "audit" / "__init__.py").write_text("")
    (clone / "audit" / "hook.py").write_text("raise SystemExit('hijacked')\n")
    new = commit(clone, "audit/evidence/hook.py", "raise SystemExit('hijacked')\n", "a look-alike")
    done = push(clone, "origin", "HEAD:refs/heads/lookalike")
    assert done.returncode == 0 and "hijacked" not in done.stderr
    assert logged(run_dir) == [("origin", "refs/heads/lookalike", ZERO, new)]


def test_a_branch_named_with_a_unicode_line_separator_is_logged_not_refused(
        setup: tuple[Path, Path, Path]) -> None:
    """git allows U+2028 in a ref name; the hook split git's stdin with splitlines(), broke
    the line there and refused an honest push as "unexpected line from git"."""
    clone, _, run_dir = setup
    head = rev(clone, "HEAD")
    done = push(clone, "origin", "HEAD:refs/heads/odd\u2028name")
    assert done.returncode == 0, done.stderr
    assert logged(run_dir) == [("origin", "refs/heads/odd\u2028name", ZERO, head)]


def test_install_refuses_to_change_a_pre_push_hook_tracked_in_the_work_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With core.hooksPath in the work tree (husky and the like), the team's pre-push is a
    tracked file: install renamed it and wrote its own script in its place, so a loop that
    commits everything pushed a hook naming this machine's interpreter to every clone. It
    refuses and changes nothing; an untracked hooks folder still works (above)."""
    clone, _ = make_repo_with_remote(tmp_path)
    hook = clone / ".husky" / "pre-push"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    git(clone, "add", ".husky/pre-push")
    git(clone, "commit", "-q", "-m", "team hooks")
    git(clone, "config", "core.hooksPath", ".husky")
    assert audit_main(["hook", "install", str(clone), "--run-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{hook} is tracked by git" in err and "record-push" in err
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    assert git(clone, "status", "--porcelain") == ""


def test_a_relative_run_directory_at_push_time_is_refused_with_why(tmp_path: Path) -> None:
    """git runs the hook from the top of the work tree, so a relative $LOOP_PI_RUN_DIR that
    was meant from elsewhere is missing there: the refusal says why."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    assert run_cli("hook", "install", str(clone)).returncode == 0
    commit(clone, "src/a.py", "a\n", "a")
    done = subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"],
                          capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**os.environ, "LOOP_PI_RUN_DIR": "run"})
    assert done.returncode != 0
    assert "relative $LOOP_PI_RUN_DIR is read from" in done.stderr
    assert "give an absolute path" in done.stderr
