"""loop-verify against careless configuration and environments (third adversarial round): what
a configuration file or a shell can hand it that it must refuse up front, clearly, rather than
fail on later. Real repositories with bare remotes, real `just`."""

from __future__ import annotations

from pathlib import Path

from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


def test_a_duration_too_large_for_the_clock_is_a_configuration_error(tmp_path: Path) -> None:
    # YAML reads a long number as an int, which passed every check and then overflowed the
    # claim's expiry (timedelta) in every run: each repository an "unexpected OverflowError".
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"timeout": 10**26})
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    done = repo.run("run", *TODAY)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"loop-verify: {repo.config_path}:"), lines
    assert "timeout: bad duration" in lines[0] and "at most 100 years" in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert task.read_bytes() == before and repo.head() == head
    assert not (repo.state_dir / "ledger.db").exists()

    # The same limit on the command line.
    repo.config_path.write_text(repo.config_path.read_text().replace(str(10**26), "10s"))
    done = repo.run("run", *TODAY, "--timeout", "99999999999999999999h")
    assert done.returncode == 2 and "--timeout" in done.stderr, done.stderr
    assert task.read_bytes() == before

    # The longest limit taken works end to end: claim, recipe, verdict commit.
    repo.config_path.write_text(repo.config_path.read_text().replace(
        "timeout: 10s", f"timeout: {100 * 365 * 86400}"))
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
