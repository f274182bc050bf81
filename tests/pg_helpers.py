"""A real, throwaway PostgreSQL server for ledger tests: started, stopped and restarted by them."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
import system


def postgres_bin() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One server on a Unix socket in its own folder (as the postgres user when we are root)."""

    def __init__(self) -> None:
        bindir = postgres_bin()
        if bindir is None:
            system.missing("PostgreSQL's server (/usr/lib/postgresql/*/bin)",
                           system.install_command("postgresql"))
        pytest.importorskip("psycopg")
        self.bindir = bindir
        self.base = Path(tempfile.mkdtemp(prefix="loop-jobs-pg-"))
        os.chmod(self.base, 0o755)
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            # The server refuses to run as root: run it as the postgres user in its own folder.
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.base, ignore_errors=True)
                pytest.skip("running as root and there is no postgres user to run the server")
            os.chown(self.base, user.pw_uid, user.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.data, self.port = self.base / "data", free_port()
        subprocess.run([*self.prefix, str(bindir / "initdb"), "-D", str(self.data), "-A", "trust",
                        "-U", "loop", "--no-sync"], check=True, capture_output=True)
        self.start()

    def url(self, **query: str) -> str:
        extra = "".join(f"&{k}={v}" for k, v in query.items())
        return f"postgresql+psycopg://loop@/postgres?host={self.base}&port={self.port}{extra}"

    def _ctl(self, *args: str, check: bool = True) -> None:
        done = subprocess.run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.data),
                               *args], capture_output=True, text=True, timeout=60, check=False)
        if check and done.returncode != 0:
            # What pg_ctl and the server said: a bare exit status tells nothing of why.
            log = self.base / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
            raise AssertionError(f"pg_ctl {' '.join(args)} exited {done.returncode}: "
                                 f"{done.stdout}{done.stderr}\nserver log:\n{tail}")

    def start(self) -> None:
        self._ctl("-w", "-l", str(self.base / "log"), "-o",
                  f"-k {self.base} -p {self.port} -c listen_addresses='' -c fsync=off", "start")

    def stop(self) -> None:
        self._ctl("-w", "-m", "fast", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self._ctl("-m", "immediate", "stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)
