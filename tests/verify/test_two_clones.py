"""Two clones of one repository on one machine sharing one ledger, their remotes spelled
differently (SPEC "Several machines"): each due verification runs once, the other clone says
"verified already", and `review` shows one repository."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from review_helpers import review_text
from verify_helpers import CRASHER, ROOT, VerifyRepo, git, make_verify_repo, verify_argv

from jobs.config.load import load_config
from jobs.ledger import claims
from jobs.ledger.model import Attempt, EditState, Verdict
from jobs.ledger.store import Ledger
from jobs.verify.claims import RepoClaims

TODAY = ("--today", "2026-11-30")


def second_clone(repo: VerifyRepo, base: Path) -> Path:
    other = base / "other" / "app"
    other.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(repo.bare), str(other)], check=True)
    return other


def both_in_config(repo: VerifyRepo, other: Path) -> None:
    config = yaml.safe_load(repo.config_path.read_text())
    config["repos"].append({"path": str(other)})
    repo.config_path.write_text(yaml.safe_dump(config))


def set_url(root: Path, url: str) -> None:
    # The URL the identity is read from; nothing in a run reaches the remote.
    subprocess.run(["git", "-C", str(root), "remote", "set-url", "origin", url], check=True)


SPELLINGS = [
    ("git@github.com:Owner/App.git", "https://github.com/owner/app"),
    ("https://github.com/Owner/App.git/", "https://github.com/owner/app/"),
    ("ssh://git@github.com:22/Owner/App.git", "git@github.com:owner/app"),
    ("ssh://git@ssh.github.com:443/Owner/App.git", "https://www.github.com/owner/app"),
    ("ssh://git@github.com/owner/app", "ssh://git@ssh.github.com:443/owner/app.git"),
    ("ssh://git@git.example.com:22/team/app.git", "git+ssh://git@git.example.com/team/app"),
    ("git+ssh://git@git.example.com:22/team/app", "git@git.example.com:team/app.git"),
]


@pytest.mark.parametrize(("first", "second"), SPELLINGS)
def test_two_clones_verify_a_task_once(tmp_path: Path, first: str, second: str) -> None:
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> {count}\n",
                            tasks=[1])
    other = second_clone(repo, tmp_path)
    both_in_config(repo, other)
    set_url(repo.root, first)
    set_url(other, second)
    code, data = repo.run_json("run", *TODAY)
    assert count.read_text() == "ran\n", data
    verdicts = sorted((r["verdict"], r.get("reason") or "") for r in data["results"])
    assert [v for v, _ in verdicts] == ["pass", "skipped"], data
    assert verdicts[1][1].startswith("verified already at "), data
    assert code == 0, data


@pytest.mark.parametrize("spell", [lambda bare: f"file://{bare}/",
                                   lambda bare: f"file://localhost{quote(str(bare))}"],
                         ids=["file-url", "percent-encoded"])
def test_a_local_path_and_a_file_url_are_one_repository(tmp_path: Path,
                                                        spell: Callable[[Path], str]) -> None:
    tmp_path = tmp_path / "Mobile Documents"  # a folder name with a space, as iCloud's
    tmp_path.mkdir()
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> '{count}'\n",
                            tasks=[1])
    other = second_clone(repo, tmp_path)
    set_url(other, spell(repo.bare))
    second = VerifyRepo(other, repo.bare, repo.state_dir, tmp_path / "other.yaml")
    config = yaml.safe_load(repo.config_path.read_text())
    config["repos"] = [{"path": str(other)}]
    second.config_path.write_text(yaml.safe_dump(config))
    assert repo.run("run", *TODAY).returncode == 0
    again = second.run("run", *TODAY)
    assert again.stdout.startswith("skipped  app TASK-1  just verify-ok: verified already at "), \
        again.stdout + again.stderr
    assert count.read_text() == "ran\n"


@pytest.mark.parametrize("finished", [True, False])
def test_a_claim_an_earlier_version_took_still_holds(tmp_path: Path, finished: bool) -> None:
    """Upgrading changed the identity of `git@github.com:Owner/App.git` (now lower case): a claim
    taken under the old spelling, finished or live, still keeps the task from running again."""
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> {count}\n",
                            tasks=[1])
    set_url(repo.root, "git@github.com:Owner/App.git")
    path = "backlog/tasks/task-1 - Task-1.md"
    blob = repo.git("rev-parse", f"HEAD:{path}").strip()
    config = load_config(repo.config_path)
    old = "github.com/Owner/App"
    ledger = Ledger(config.ledger, machine="oldbox")
    try:
        claim = claims.Claim(claims.claim_key(old, "TASK-1", "2026-11-01", blob), old, "TASK-1",
                             "2026-11-01", "20261130T063000Z-00000000", "oldbox")
        assert claims.take(ledger, claim, repo="/elsewhere/app", ttl=3600) is None
        if finished:
            claims.settle(ledger, claim, Attempt(
                run_id=claim.run_id, started_at=datetime.now(UTC), repo="/elsewhere/app",
                verdict=Verdict.PASS, edit_state=EditState.COMMITTED))
    finally:
        ledger.close()
    code, data = repo.run_json("run", *TODAY)
    [skipped] = data["results"]
    assert skipped["verdict"] == "skipped", data
    want = "verified by oldbox at " if finished else "claimed by oldbox at "
    assert skipped["reason"].startswith(want), data
    assert not count.exists()
    assert code == 0, data


def test_review_shows_both_clones_as_one_repository(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    other = second_clone(repo, tmp_path)
    both_in_config(repo, other)
    set_url(repo.root, "git@github.com:Acme/App.git")
    set_url(other, "https://github.com/acme/app/")
    assert repo.run("run", *TODAY).returncode == 0
    text = review_text(repo.config_path, "--since", "2026-11-01")
    # One timeline row: the pass in one clone, "verified already" in the other.
    rows = [line for line in text.splitlines() if "TASK-1 — Task 1 | `" in line]
    assert len(rows) == 1 and rows[0].startswith("| app |"), text
    assert rows[0].endswith("| 1 skipped, 1 pass |"), text


def test_a_crash_in_one_clone_is_recovered_there_and_never_by_the_other(tmp_path: Path) -> None:
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> {count}\n",
                            tasks=[1])
    other = second_clone(repo, tmp_path)
    set_url(repo.root, "git@github.com:Acme/App.git")
    set_url(other, "https://github.com/acme/app")
    second = VerifyRepo(other, repo.bare, repo.state_dir, tmp_path / "other.yaml")
    config = yaml.safe_load(repo.config_path.read_text())
    config["repos"] = [{"path": str(other)}]
    second.config_path.write_text(yaml.safe_dump(config))
    # The first clone's run is killed after it wrote its verdict, before git ran.
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, *verify_argv(repo, "run", *TODAY)[3:]],
        cwd=repo.root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CRASH_AT": "commit", "CRASH_NTH": "1"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    edited = repo.status()
    assert edited != ""
    # The other clone neither runs it nor touches the pending edit or its claim.
    code, data = second.run_json("run", *TODAY)
    [skipped] = data["results"]
    assert skipped["reason"].startswith("claimed by "), data
    assert code == 0 and count.read_text() == "ran\n", data
    assert repo.status() == edited and second.status() == ""
    assert [a["edit_state"] for a in repo.history() if a["repo"] == str(repo.root)] == ["pending"]
    # The first clone's next run commits it; the other then finds it verified already.
    again = repo.run("run", *TODAY)
    assert again.returncode == 0, again.stdout + again.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    last = second.run("run", *TODAY)
    assert last.stdout.startswith("skipped  app TASK-1  just verify-ok: verified already at "), \
        last.stdout + last.stderr
    assert count.read_text() == "ran\n"


def test_recovery_finds_its_own_clones_claim_of_the_dead_run(tmp_path: Path) -> None:
    """One run took the task in both clones (their task files differ: two keys) and died in the
    second: recovering that clone's pending edit settles its claim, never the other clone's."""
    repo = make_verify_repo(tmp_path, tasks=[1])
    other = second_clone(repo, tmp_path)
    path = "backlog/tasks/task-1 - Task-1.md"
    with (other / path).open("a") as f:
        f.write("\nA note only this clone has.\n")
    subprocess.run(["git", "-C", str(other), "commit", "-qam", "note"], check=True)
    config = load_config(repo.config_path)
    ledger = Ledger(config.ledger, machine=config.machine)
    run = "20261130T073000Z-0a1b2c3d"
    try:
        taken = {}
        for root in (repo.root, other):
            claim = RepoClaims(ledger, root, "main", 3600).take("TASK-1", "2026-11-01", path, run)
            assert isinstance(claim, claims.Claim)
            taken[root] = claim
        assert taken[repo.root].key != taken[other].key
        pending = Attempt(run_id=run, started_at=datetime.now(UTC), repo="", verdict=Verdict.PASS,
                          task_id="TASK-1", label_date="2026-11-01")
        for root, claim in taken.items():
            found = RepoClaims(ledger, root, "main", 3600).recovered(pending)
            assert found is not None and found.key == claim.key, root
    finally:
        ledger.close()


def test_a_crash_in_the_first_of_two_listed_clones_is_recovered_once(tmp_path: Path) -> None:
    count = tmp_path / "count"
    repo = make_verify_repo(tmp_path, justfile=f"verify-ok:\n    echo ran >> {count}\n",
                            tasks=[1])
    other = second_clone(repo, tmp_path)
    both_in_config(repo, other)
    set_url(repo.root, "ssh://git@github.com:22/Acme/App")
    set_url(other, "https://github.com/acme/app.git")
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, *verify_argv(repo, "run", *TODAY)[3:]],
        cwd=repo.root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CRASH_AT": "commit", "CRASH_NTH": "1"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    code, data = repo.run_json("run", *TODAY)
    assert code == 0, data
    reasons = sorted(r.get("reason") or "" for r in data["results"])
    assert len(reasons) == 2 and "interrupted run" in reasons[0], reasons
    assert reasons[1].startswith("verified already at "), reasons
    assert count.read_text() == "ran\n"
    assert repo.status() == "" and git(other, "status", "--porcelain") == ""
