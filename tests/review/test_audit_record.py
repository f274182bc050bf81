"""loop-pi-audit records its runs in loop-verify's ledger (closeout, compare --run-dir), and a
ledger it cannot write never changes the audit's verdict."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from audit_helpers import commit, env_with, git, isolate_git, make_repo_with_remote, run_cli
from project import ROOT

from audit.evidence.rundir import AFTER, BEFORE


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def armed_with_unlogged_push(tmp_path: Path, config: Path | None = None,
                             env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """A run armed with `config` (else the default lookup): its ledger holds the seal."""
    clone, bare = make_repo_with_remote(tmp_path)
    (tmp_path / "bare-path").write_text(str(bare))
    run_dir = tmp_path / "run"
    given = ["--config", str(config)] if config is not None else []
    begun = run_cli("begin", str(clone), "--run-dir", str(run_dir), *given, env=env)
    assert begun.returncode == 0, begun.stderr
    commit(clone, "src/x.py", "x = 1\n", "feat: unlogged")
    git(clone, "push", "-q", "origin", "HEAD:main")
    return clone, run_dir


def config_with(tmp_path: Path, ledger: str | None) -> Path:
    config = tmp_path / "loop-jobs.yaml"
    lines = [f"state_dir: {tmp_path / 'state'}"] + ([f"ledger: {ledger}"] if ledger else [])
    config.write_text("\n".join(lines) + "\n")
    return config


def recorded(ledger: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(ledger) as db:
        runs = db.execute("SELECT id, command, run_dir, repos, verdict, exit_code, "
                          "findings_total, findings_failing, machine FROM audit_runs").fetchall()
        findings = db.execute("SELECT audit_run_id, ref, kind, verdict, reason "
                              "FROM audit_findings ORDER BY position").fetchall()
    return [*runs, *findings]


def test_closeout_records_the_run_and_its_findings(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    config = config_with(tmp_path, f"sqlite:///{ledger}")
    clone, run_dir = armed_with_unlogged_push(tmp_path, config)
    closed = run_cli("closeout", "--run-dir", str(run_dir), "--config", str(config), "--json")
    assert closed.returncode == 1, closed.stderr
    assert closed.stderr == ""
    report = json.loads(closed.stdout)
    rows = recorded(ledger)
    run = rows[0]
    assert run[1:8] == ("closeout", str(run_dir.resolve()), run[3], "fail", 1,
                        len(report["findings"]), len(report["findings"]))
    # Each repository with its remotes' URLs, for the review's links.
    bare = (tmp_path / "bare-path").read_text()
    assert json.loads(str(run[3])) == {str(clone.resolve()): {"origin": bare}}
    assert run[8]  # the machine: config's machine:, else the host name
    kinds = [(r[1], r[2], r[3]) for r in rows[1:]]
    assert ("refs/heads/main", "commit", "UNGRANTED") in kinds
    assert len(kinds) == len(report["findings"])


def test_the_config_from_the_environment_is_used(tmp_path: Path) -> None:
    ledger = tmp_path / "env-ledger.db"
    config = config_with(tmp_path, f"sqlite:///{ledger}")
    _clone, run_dir = armed_with_unlogged_push(tmp_path, env=env_with(
        LOOP_JOBS_CONFIG=str(config)))
    closed = run_cli("closeout", "--run-dir", str(run_dir),
                     env=env_with(LOOP_JOBS_CONFIG=str(config)))
    assert closed.returncode == 1
    assert recorded(ledger)[0][1] == "closeout"


def test_no_ledger_key_records_in_the_default_ledger_under_state_dir(tmp_path: Path) -> None:
    """Audits are always recorded (the seal lives there): without `ledger:`, in the default
    SQLite file in `state_dir`."""
    config = config_with(tmp_path, None)
    _clone, run_dir = armed_with_unlogged_push(tmp_path, config)
    closed = run_cli("closeout", "--run-dir", str(run_dir), "--config", str(config))
    assert closed.returncode == 1 and closed.stderr == ""
    rows = recorded(tmp_path / "state" / "ledger.db")
    assert rows[0][1:3] == ("closeout", str(run_dir.resolve()))


def test_unwritable_ledger_cannot_check_the_seal_and_says_so(tmp_path: Path) -> None:
    """A ledger that cannot be opened at closeout: the seals cannot be checked (UNVERIFIED,
    never a pass), the audit cannot be recorded (a warning), and nothing else changes."""
    _clone, run_dir = armed_with_unlogged_push(tmp_path)
    # A folder under /proc cannot be made, not even by root.
    config = config_with(tmp_path, "sqlite:////proc/no-such-place/ledger.db")
    broken = run_cli("closeout", "--run-dir", str(run_dir), "--config", str(config), "--json")
    plain = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert broken.returncode == plain.returncode == 1
    findings = json.loads(broken.stdout)["findings"]
    unchecked = [f for f in findings if f["kind"] == "seal-unchecked"]
    assert len(unchecked) == 1 and unchecked[0]["verdict"] == "UNVERIFIED"
    assert "could not check the run's seals" in unchecked[0]["reason"]
    assert [f for f in findings if f["kind"] != "seal-unchecked"] == json.loads(
        plain.stdout)["findings"]
    assert "loop-pi-audit: warning: audit not recorded in the ledger" in broken.stderr
    assert "the audit's verdict stands" in broken.stderr
    assert "Traceback" not in broken.stderr
    log = [json.loads(line) for line in
           (tmp_path / "state" / "loop-jobs.jsonl").read_text().splitlines()]
    assert any(e["event"] == "audit.ledger_unwritable" for e in log)
    # A config that cannot be read at all is a usage error: the seal cannot even be looked for.
    bad = tmp_path / "bad.yaml"
    bad.write_text("ledger: [not, a, url\n")
    worse = run_cli("closeout", "--run-dir", str(run_dir), "--config", str(bad), "--json")
    assert worse.returncode == 2 and worse.stdout == ""
    assert "bad.yaml" in worse.stderr


def test_compare_with_run_dir_records_without_it_not(tmp_path: Path) -> None:
    _clone, run_dir = armed_with_unlogged_push(tmp_path)
    closed = run_cli("closeout", "--run-dir", str(run_dir))
    assert closed.returncode == 1
    ledger = tmp_path / "ledger.db"
    config = config_with(tmp_path, f"sqlite:///{ledger}")
    bare = run_cli("compare", str(run_dir / BEFORE), str(run_dir / AFTER), "--config",
                   str(config))
    assert bare.returncode == 1 and not ledger.exists()
    done = run_cli("compare", str(run_dir / BEFORE), str(run_dir / AFTER), "--config",
                   str(config), "--run-dir", str(run_dir))
    assert done.returncode == 1, done.stderr
    rows = recorded(ledger)
    assert rows[0][1:3] == ("compare", str(run_dir.resolve()))


def test_a_run_of_logged_commits_is_one_finding_with_its_count(tmp_path: Path) -> None:
    clone, _bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    ledger = tmp_path / "ledger.db"
    config = config_with(tmp_path, f"sqlite:///{ledger}")
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir), "--config",
                   str(config)).returncode == 0
    old = git(clone, "rev-parse", "HEAD").strip()
    shas = [commit(clone, f"src/{n}.py", f"n = {n}\n", f"feat: step {n}") for n in range(3)]
    git(clone, "push", "-q", "origin", "HEAD:main")
    logged = run_cli("record-push", "--repo", str(clone), "--ref", "refs/heads/main", "--old",
                     old, "--new", shas[-1], "--run-dir", str(run_dir), "--config", str(config))
    assert logged.returncode == 0, logged.stderr
    closed = run_cli("closeout", "--run-dir", str(run_dir), "--config", str(config))
    assert closed.returncode == 0, closed.stdout + closed.stderr
    with sqlite3.connect(ledger) as db:
        grouped = db.execute("SELECT count, first, last, verdict FROM audit_findings "
                             "WHERE kind = 'commit'").fetchall()
    assert grouped == [(3, shas[0], shas[-1], "PUSH_LOGGED")]
    review = subprocess.run(
        [sys.executable, "-m", "jobs.main", "review", "--config", str(config), "--format",
         "markdown"], capture_output=True, text=True, check=False,
        env=env_with(PYTHONPATH=str(ROOT)))
    assert review.returncode == 0, review.stderr
    assert f"3 commits `{shas[0][:12]}`..`{shas[-1][:12]}` PUSH\\_LOGGED" in review.stdout
