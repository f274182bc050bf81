"""The seal where the run cannot reach it (docs/audit-trust.md): a PostgreSQL ledger written by
an insert-only role, and the run directory and ledger owned by another Unix user than the run's
(a user this test creates when it runs as root; skipped otherwise)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from audit_helpers import commit, git, isolate_git, make_repo_with_remote, rev, run_cli
from pg_helpers import PgServer

from audit.evidence.rundir import BEFORE, PUSH_LOG
from jobs.ledger.audits import ensure_audit_tables
from jobs.ledger.seals import ensure_seal_tables
from jobs.ledger.store import Ledger


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


# --- PostgreSQL, insert only ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def postgres() -> Iterator[PgServer]:
    server = PgServer()
    try:
        yield server
    finally:
        server.close()


def insert_only(server: PgServer) -> str:
    """The ledger's tables made by their owner, and a role that may only read and insert: the
    URL the auditor seals with."""
    owner = Ledger(server.url())
    ensure_audit_tables(owner.engine)
    ensure_seal_tables(owner.engine)
    with owner.engine.begin() as conn:
        conn.exec_driver_sql("DROP ROLE IF EXISTS sealer")
        conn.exec_driver_sql("CREATE ROLE sealer LOGIN")
        conn.exec_driver_sql("GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO sealer")
        conn.exec_driver_sql("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO sealer")
    owner.close()
    return server.url().replace("://loop@", "://sealer@")


def test_the_seal_works_in_postgresql_under_an_insert_only_role(
        tmp_path: Path, postgres: PgServer) -> None:
    url = insert_only(postgres)
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\nledger: {url}\n")
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    given = ("--config", str(config))
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir), *given).returncode == 0
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir),
                   *given).returncode == 0
    commit(clone, "src/x.py", "x = 1\n", "logged")
    git(clone, "push", "-q", "origin", "main")
    passed = run_cli("closeout", "--run-dir", str(run_dir), "--json", *given)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    # The run rewrites its files: TAMPERED, from the rows it cannot change.
    (run_dir / PUSH_LOG).write_text("")
    tampered = run_cli("closeout", "--run-dir", str(run_dir), "--json", *given)
    assert tampered.returncode == 1
    assert {f["kind"] for f in json.loads(tampered.stdout)["findings"]} >= {"push-log-row"}
    # With the role's credentials, nothing sealed can be rewritten or removed.
    engine = sa.create_engine(url)
    for statement in ("UPDATE audit_arms SET before_sha256 = 'x'", "DELETE FROM audit_pushes"):
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"), \
                engine.begin() as conn:
            conn.exec_driver_sql(statement)
    engine.dispose()


# --- another Unix user --------------------------------------------------------------------------

def as_user(user: str, *argv: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True,
                          env=env, check=False)


@pytest.fixture
def run_user() -> Iterator[str]:
    """A Unix user of the test's own for the audited run (the test, root, is the auditor)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the test creates the run's own Unix user")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are needed to create and act as the run's user")
    name = f"lpa-run-{secrets.token_hex(4)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def test_a_run_as_another_user_cannot_edit_the_evidence_and_is_audited(
        run_user: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The auditor (root here) owns its virtualenv, the run directory and the ledger; the run's
    user owns its clone and can push, and reaches the audit only through `record-push` run as
    the auditor (the `sudo -u <auditor>` door). Its edit of the before-snapshot is refused by
    the file system, and closeout judges its pushes."""
    base = Path(tempfile.mkdtemp(prefix="loop-pi-trust-"))
    try:
        os.chmod(base, 0o755)
        work = base / "run-user"
        work.mkdir()
        clone, bare = make_repo_with_remote(work)
        home = work / "home"
        home.mkdir()
        subprocess.run(["chown", "-R", f"{run_user}:", str(work)], check=True)
        auditor = base / "auditor"
        auditor.mkdir(mode=0o755)
        state = auditor / "state"
        global_config = auditor / "gitconfig"
        # The auditor reads repositories another user owns.
        global_config.write_text("[safe]\n\tdirectory = *\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
        monkeypatch.setenv("XDG_STATE_HOME", str(state))
        run_dir = auditor / "run"
        assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0

        run_env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
                   "GIT_CONFIG_GLOBAL": "/dev/null",
                   **{k: v for k, v in os.environ.items() if k.startswith(("GIT_AUTHOR_",
                                                                         "GIT_COMMITTER_"))}}
        old = rev(clone, "HEAD")
        (clone / "src.py").write_text("x = 1\n")
        for argv in (["git", "-C", str(clone), "add", "src.py"],
                     ["git", "-C", str(clone), "commit", "-q", "-m", "the run's work"],
                     ["git", "-C", str(clone), "push", "-q", "origin", "main"]):
            done = as_user(run_user, *argv, env=run_env)
            assert done.returncode == 0, done.stderr
        new = rev(clone, "HEAD")
        # The door: record-push run as the auditor.
        logged = run_cli("record-push", "--repo", str(clone), "--ref", "refs/heads/main",
                         "--old", old, "--new", new, "--run-dir", str(run_dir))
        assert logged.returncode == 0, logged.stderr

        # The run's user cannot touch the evidence: the file system refuses.
        ledger = state / "loop-jobs" / "ledger.db"
        for argv in (["sh", "-c", f"printf '{{}}' > '{run_dir / BEFORE}'"],
                     ["rm", "-f", str(run_dir / PUSH_LOG)],
                     ["sh", "-c", f"printf x >> '{ledger}'"]):
            refused = as_user(run_user, *argv, env=run_env)
            assert refused.returncode != 0
            assert "Permission denied" in refused.stderr
        passed = run_cli("closeout", "--run-dir", str(run_dir), "--json")
        assert passed.returncode == 0, passed.stdout + passed.stderr

        # A push around the door is still caught.
        (clone / "more.py").write_text("y = 2\n")
        for argv in (["git", "-C", str(clone), "add", "more.py"],
                     ["git", "-C", str(clone), "commit", "-q", "-m", "around the door"],
                     ["git", "-C", str(clone), "push", "-q", "origin", "main"]):
            assert as_user(run_user, *argv, env=run_env).returncode == 0
        assert run_cli("closeout", "--run-dir", str(run_dir)).returncode == 1
        assert rev(bare, "refs/heads/main") == rev(clone, "HEAD")
    finally:
        shutil.rmtree(base, ignore_errors=True)
