"""Drift: whatever a recipe changes in the checkout (a file, HEAD, a submodule, a file git status
is told not to look at) is that recipe's drift, found before any later recipe runs; a checkout
git does not see whole is not clean. Real repositories with bare remotes, real `just`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from verify_helpers import VerifyRepo, make_verify_repo

TODAY = ("--today", "2026-11-30")


def test_a_recipe_killed_from_outside_is_still_checked_for_drift(tmp_path: Path) -> None:
    # The OOM killer ends a recipe after it wrote into the work tree (here the recipe's shell
    # SIGKILLs itself: a signal loop-verify did not send). Its task is an `error`, left as it
    # was; what it left must not be blamed on the next task's recipe as that recipe's drift,
    # and no later recipe may run on the changed tree.
    repo = make_verify_repo(tmp_path, tasks=[1, 2], justfile=(
        "verify-oom:\n    touch half-written.txt\n    kill -KILL $$\n\n"
        "verify-ok:\n    echo ok\n"))
    first = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    first.write_text(first.read_text().replace("just verify-ok", "just verify-oom"))
    repo.commit_all("task 1 runs verify-oom")
    second = repo.root / "backlog" / "tasks" / "task-2 - Task-2.md"
    untouched, head = second.read_bytes(), repo.head()

    proc = repo.run("run", *TODAY, "--json")

    results = json.loads(proc.stdout)["results"]
    verdicts = [(r["verdict"], r["task_id"]) for r in results]
    assert ("drift", "TASK-2") not in verdicts, results
    assert verdicts[0] == ("error", "TASK-1"), results
    assert "half-written.txt" in " ".join(str(r["reason"]) for r in results), results
    assert verdicts[-1] == ("skipped", "TASK-2"), results
    assert second.read_bytes() == untouched and repo.head() == head


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_status_is_told_not_to_look_at_makes_the_checkout_not_clean(
        tmp_path: Path, flag: str) -> None:
    # `git update-index --assume-unchanged` (or --skip-worktree, for a local tweak of a
    # tracked config file) hides that file's changes from `git status`: the recipe ran against
    # a tree that was not the branch's, and a change it made to such a file was no drift.
    justfile = "verify-cat:\n    cat README.md\n"
    repo = make_verify_repo(tmp_path, justfile=justfile)
    repo.add_task(1, notes="verify-cmd: just verify-cat")
    repo.commit_all()
    repo.git("update-index", flag, "README.md")
    (repo.root / "README.md").write_text("# app\nLOCAL CHANGE\n")
    assert repo.status() == ""  # git status itself sees nothing
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    word = flag.removeprefix("--")
    for args in (("--dry-run",), ()):
        done = repo.run("run", *TODAY, *args)
        assert done.returncode == 3, done.stdout + done.stderr
        assert (f"skipped  app: work tree not clean: README.md is marked {word}"
                in done.stdout), done.stdout
    assert not list(repo.state_dir.glob("runs/*/*.log")), "the recipe ran"
    assert task.read_bytes() == before and repo.head() == head
    doctor = repo.run("doctor")
    assert (f"FAIL repo {repo.root}: work tree not clean: README.md is marked {word}"
            in doctor.stdout), doctor.stdout

    # The flag cleared (the change now shows) and the change undone: the recipe runs.
    repo.git("update-index", flag.replace("--", "--no-"), "README.md")
    repo.git("checkout", "--", "README.md")
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_sparse_checkout_is_still_a_clean_checkout(tmp_path: Path) -> None:
    # Sparse checkout marks the files it leaves out skip-worktree too: absent, they hide nothing.
    repo = make_verify_repo(tmp_path, tasks=[1])
    (repo.root / "docs").mkdir()
    (repo.root / "docs" / "big.txt").write_text("big\n")
    repo.commit_all()
    repo.git("sparse-checkout", "set", "--no-cone", "/*", "!/docs/")
    assert not (repo.root / "docs" / "big.txt").exists()
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("ignore", ["all", "dirty", "untracked"])
def test_a_recipe_changing_a_submodule_is_drift_whatever_gitmodules_says(
        tmp_path: Path, ignore: str) -> None:
    # `ignore = dirty` in .gitmodules (common for a vendored submodule) or diff.ignoreSubmodules
    # makes `git status` quiet about what changed inside the submodule: a recipe that wrote
    # there passed as if the tree were clean, and the next recipe ran on its leftovers.
    lib = tmp_path / "lib"
    subprocess.run(["git", "init", "-q", "-b", "main", str(lib)], check=True)
    (lib / "lib.txt").write_text("lib\n")
    subprocess.run(["git", "-C", str(lib), "add", "."], check=True)
    subprocess.run(["git", "-C", str(lib), "commit", "-q", "-m", "lib"], check=True)
    justfile = "verify-sub:\n    echo changed >> vendor/lib/lib.txt\n    touch vendor/lib/new\n"
    repo = make_verify_repo(tmp_path / "main", justfile=justfile)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
             "vendor/lib")
    repo.git("config", "-f", ".gitmodules", "submodule.vendor/lib.ignore", ignore)
    repo.add_task(1, notes="verify-cmd: just verify-sub")
    repo.commit_all()
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before = task.read_bytes()

    done = repo.run("run", *TODAY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "drift    app TASK-1  just verify-sub" in done.stdout, done.stdout
    assert "vendor/lib" in done.stdout
    assert task.read_bytes() == before


@pytest.mark.parametrize(("recipe", "said"), [
    ("git switch -q -c elsewhere", "left branch 'elsewhere' checked out, not 'main'"),
    ("git switch -q --detach", "left detached HEAD checked out"),
    ("git commit -q --allow-empty -m sneaky", "the recipe moved 'main' from "),
])
def test_a_recipe_that_moves_head_is_drift(tmp_path: Path, recipe: str, said: str) -> None:
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-move:\n    {recipe}\n\nverify-ok:\n    echo ok\n"))
    first = repo.add_task(1, notes="verify-cmd: just verify-move")
    second = repo.add_task(2)
    repo.commit_all()
    before = {p: p.read_bytes() for p in (first, second)}
    proc = repo.run("run", "--today", "2026-11-30", "--json")
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [(r["task_id"], r["verdict"]) for r in results] == [("TASK-1", "drift"),
                                                                ("TASK-2", "skipped")]
    assert said in results[0]["reason"]
    # No verdict was committed anywhere, and no task file was touched.
    assert not any(s.startswith("loop-verify:") for s in
                   repo.git("log", "--all", "--format=%s").splitlines())
    assert all(p.read_bytes() == b for p, b in before.items())


def test_a_file_name_that_is_not_utf8_is_drift_not_a_traceback(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile=(
        "verify-odd:\n    python3 -c \"open(b'\\\\xff.txt', 'w').close()\"\n"))
    repo.add_task(1, notes="verify-cmd: just verify-odd")
    repo.commit_all()
    assert (repo.root / os.fsdecode(b"\xff.txt")).exists() is False
    first = repo.run("run", "--today", "2026-11-30")
    assert first.returncode == 1, first.stderr
    assert "Traceback" not in first.stderr
    assert first.stdout.startswith("drift    app TASK-1")
    assert "\\xff.txt" in first.stdout
    again = repo.run("run", "--today", "2026-11-30")
    assert again.returncode == 3, again.stderr
    # the repository's line, then the run's closing line
    assert again.stdout.splitlines()[0] == "skipped  app: work tree not clean: \\xff.txt"
    assert again.stdout.splitlines()[1].startswith("1 skipped in ")
    verdicts = [a["verdict"] for a in repo.history()]
    assert verdicts == ["drift", "skipped"]


def hidden_change_is_drift(repo: VerifyRepo, recipe: str) -> None:
    """TASK-1 runs `recipe`, which changes README.md where `git status` does not look: its
    verdict is drift, TASK-2 is skipped, and neither task file is touched."""
    first = repo.add_task(1, notes=f"verify-cmd: just {recipe}")
    second = repo.add_task(2)
    repo.commit_all()
    before = {p: p.read_bytes() for p in (first, second)}
    proc = repo.run("run", *TODAY, "--json")
    results = json.loads(proc.stdout)["results"]
    assert [(r["task_id"], r["verdict"]) for r in results] == [("TASK-1", "drift"),
                                                                ("TASK-2", "skipped")], results
    assert "README.md" in results[0]["reason"]
    assert all(p.read_bytes() == b for p, b in before.items())


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_recipe_that_hides_its_change_from_git_status_is_drift(
        tmp_path: Path, flag: str) -> None:
    # The recipe marks a tracked file so that `git status` no longer looks at it, then changes
    # it: the checkout is not the branch's any more, and the next recipe must not run on it.
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-hide:\n    git update-index {flag} README.md\n"
        "    echo LOCAL >> README.md\n\nverify-ok:\n    echo ok\n"))
    hidden_change_is_drift(repo, "verify-hide")


def test_a_recipe_that_makes_git_status_ask_a_lying_fsmonitor_is_drift(tmp_path: Path) -> None:
    # core.fsmonitor names a program `git status` asks what changed; the recipe installs one
    # that always answers "nothing" (in .git/, where no status looks), then changes a file.
    repo = make_verify_repo(tmp_path, justfile=(
        "verify-lie:\n"
        "    printf '#!/bin/sh\\nprintf \"tok\\\\0\"\\n' > .git/lie && chmod +x .git/lie\n"
        "    git config core.fsmonitor \"$PWD/.git/lie\"\n"
        "    git config core.fsmonitorHookVersion 2\n"
        "    git update-index --fsmonitor && git status --porcelain\n"
        "    echo LOCAL >> README.md\n\nverify-ok:\n    echo ok\n"))
    hidden_change_is_drift(repo, "verify-lie")
