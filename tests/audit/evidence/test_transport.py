"""The transport fingerprint: a change made during the run to how a remote (or GitHub) is reached
never passes (UNVERIFIED, naming the setting), closeout runs the git `begin` ran, and GitHub is
called only as `begin` recorded. Each attack is one test; the honest controls still pass."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    commit,
    enterprise_remote,
    env_with,
    gh_release,
    git,
    isolate_git,
    make_repo_with_remote,
    run_cli,
)
from pytest_httpserver import HTTPServer
from werkzeug import Response

from audit.evidence.seal.transport import fingerprint, ssh_config_files, transport_env
from audit.judge.seal import transport_changes
from jobs.git.hardened import environment

OWNER_NAME = "octo/widgets"


@pytest.fixture
def global_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return isolate_git(monkeypatch, tmp_path)


def armed(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    clone, bare = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(clone), "--run-dir", str(run_dir), env=env)
    assert done.returncode == 0, done.stderr
    return clone, bare, run_dir


def closeout(run_dir: Path, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json", env=env)
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def changed(report: dict[str, Any]) -> str:
    return " | ".join(f["reason"] for f in report["findings"]
                      if f["kind"] == "transport-changed" and f["verdict"] == "UNVERIFIED")


# --- git's configuration ------------------------------------------------------------------------

def test_http_proxy_in_the_global_gitconfig_is_unverified(
        tmp_path: Path, global_config: Path) -> None:
    _clone, _bare, run_dir = armed(tmp_path)
    global_config.write_text("[http]\n\tproxy = http://127.0.0.1:9/\n")
    code, report = closeout(run_dir)
    assert code == 3
    assert "global config of " in changed(report) and ": http.proxy: set since begin" in \
        changed(report)


def test_every_transport_key_of_the_spec_is_fingerprinted_and_no_other(
        tmp_path: Path, global_config: Path) -> None:
    """SPEC: `url.*`, `remote.*`, `http.*`, `https.*`, `core.sshCommand`, `core.gitProxy`,
    `ssh.*`, `protocol.*`, `credential.*` of git's global configuration."""
    clone, _ = make_repo_with_remote(tmp_path)
    git_bin = shutil.which("git")
    assert git_bin
    plain = fingerprint([str(clone)], git=git_bin, salt="s")["settings"]
    global_config.write_text(
        "[url \"/x\"]\n\tinsteadOf = /y\n[remote \"o\"]\n\turl = /z\n"
        "[http]\n\tsslVerify = false\n[https]\n\tproxy = p\n"
        "[core]\n\tsshCommand = s\n\tgitProxy = g\n\teditor = vi\n"
        "[ssh]\n\tvariant = simple\n[protocol]\n\tallow = always\n"
        "[credential]\n\thelper = h\n[user]\n\tname = n\n")
    now = fingerprint([str(clone)], git=git_bin, salt="s")["settings"]
    added = {name.rsplit(": ", 1)[-1] for name in set(now) - set(plain)}
    assert added == {"url./x.insteadof", "remote.o.url", "http.sslverify", "https.proxy",
                     "core.sshcommand", "core.gitproxy", "ssh.variant", "protocol.allow",
                     "credential.helper"}


def test_http_proxy_through_an_include_of_the_global_gitconfig_is_unverified(
        tmp_path: Path, global_config: Path) -> None:
    included = tmp_path / "included.gitconfig"
    included.write_text("")
    global_config.write_text(f"[include]\n\tpath = {included}\n")
    _clone, _bare, run_dir = armed(tmp_path)
    included.write_text("[http]\n\tproxy = http://127.0.0.1:9/\n")
    code, report = closeout(run_dir)
    assert code == 3 and "http.proxy: set since begin" in changed(report)


def test_a_remote_url_proxy_in_the_global_gitconfig_is_unverified(
        tmp_path: Path, global_config: Path) -> None:
    _clone, bare, run_dir = armed(tmp_path)
    global_config.write_text(f'[remote "{bare}"]\n\tproxy = http://127.0.0.1:9/\n')
    code, report = closeout(run_dir)
    assert code == 3 and f"remote.{bare}.proxy: set since begin" in changed(report)


# --- the environment ----------------------------------------------------------------------------

def test_http_proxy_in_closeouts_environment_is_unverified(
        tmp_path: Path, global_config: Path) -> None:
    _clone, _bare, run_dir = armed(tmp_path)
    code, report = closeout(run_dir, env_with(http_proxy="http://127.0.0.1:9/"))
    assert code == 3 and "environment http_proxy: set since begin" in changed(report)


def test_git_config_global_in_closeouts_environment_is_unverified(
        tmp_path: Path, global_config: Path) -> None:
    _clone, _bare, run_dir = armed(tmp_path)
    other = tmp_path / "other.gitconfig"
    other.write_text("[http]\n\tproxy = http://127.0.0.1:9/\n")
    code, report = closeout(run_dir, env_with(GIT_CONFIG_GLOBAL=str(other)))
    assert code == 3
    assert "environment GIT_CONFIG_GLOBAL: changed since begin" in changed(report)


def test_a_proxy_set_identically_at_begin_and_closeout_passes(
        tmp_path: Path, global_config: Path) -> None:
    env = env_with(http_proxy="http://127.0.0.1:9/", HTTPS_PROXY="http://127.0.0.1:9/")
    global_config.write_text("[http]\n\tproxy = http://127.0.0.1:9/\n")
    clone, _bare, run_dir = armed(tmp_path, env)
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/x.py", "x = 1\n", "logged")
    git(clone, "push", "-q", "origin", "main")
    code, report = closeout(run_dir, env)
    assert code == 0, report
    assert changed(report) == ""


# --- the git that answers -----------------------------------------------------------------------

def frozen_git(tmp_path: Path, bare: Path) -> tuple[Path, Path]:
    """A copy of the bare remote as it is now, and a folder holding a `git` that answers for
    the real remote with that copy."""
    frozen = tmp_path / "frozen.git"
    shutil.copytree(bare, frozen)
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "shim"
    folder.mkdir()
    shim = folder / "git"
    shim.write_text(
        "#!/bin/sh\n"
        'for a; do shift; if [ "$a" = "' + str(bare) + '" ]; then set -- "$@" "'
        + str(frozen) + '"; else set -- "$@" "$a"; fi; done\n'
        f'exec "{real}" "$@"\n')
    shim.chmod(0o755)
    return frozen, folder


def test_git_exec_path_in_closeouts_environment_cannot_choose_who_answers(
        tmp_path: Path, global_config: Path) -> None:
    """Attack: GIT_EXEC_PATH names a folder whose `git` serves a copy of the remote frozen at
    the arm (git puts that folder first on the PATH of the upload-pack it runs), hiding an
    unlogged push."""
    clone, bare, run_dir = armed(tmp_path)
    _frozen, folder = frozen_git(tmp_path, bare)
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    code, report = closeout(run_dir, env_with(GIT_EXEC_PATH=str(folder)))
    assert code == 1
    assert "UNGRANTED" in [f["verdict"] for f in report["findings"] if f["kind"] == "commit"]
    assert "environment GIT_EXEC_PATH: set since begin" in changed(report)


def test_a_git_earlier_on_path_at_closeout_is_not_the_git_that_runs(
        tmp_path: Path, global_config: Path) -> None:
    """Attack: a `git` put first on PATH during the run answers with the frozen copy."""
    clone, bare, run_dir = armed(tmp_path)
    _frozen, folder = frozen_git(tmp_path, bare)
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    code, report = closeout(run_dir, env_with(PATH=f"{folder}{os.pathsep}{os.environ['PATH']}"))
    assert code == 1
    assert "UNGRANTED" in [f["verdict"] for f in report["findings"] if f["kind"] == "commit"]


def test_a_replaced_git_executable_is_unverified(tmp_path: Path, global_config: Path) -> None:
    """The git begin recorded is hashed again at closeout."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    own = folder / "git"
    own.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    own.chmod(0o755)
    env = env_with(PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
    _clone, _bare, run_dir = armed(tmp_path, env)
    own.write_text(f'#!/bin/sh\n# replaced during the run\nexec "{real}" "$@"\n')
    code, report = closeout(run_dir, env)
    assert code == 3 and f"the git executable {own} is not the file begin ran" in changed(report)


# --- GitHub ---------------------------------------------------------------------------------------

class _Answer(BaseHTTPRequestHandler):
    """Whatever is asked, an empty list: a proxy (or API) the run controls."""

    asked: list[str] = []

    def do_GET(self) -> None:  # the name http.server calls
        type(self).asked.append(self.path)
        body = b"[]"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def liar() -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []
    handler = type("Liar", (_Answer,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def github_run(tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
               ) -> tuple[Path, list[dict[str, Any]], str]:
    clone, bare = make_repo_with_remote(tmp_path)
    api = enterprise_remote(clone, bare, httpserver, monkeypatch, OWNER_NAME)
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("no_proxy", "")
    served: list[dict[str, Any]] = []
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/releases").respond_with_handler(
        lambda request: Response(json.dumps(served), content_type="application/json"))
    httpserver.expect_request(f"/api/v3/repos/{OWNER_NAME}/activity").respond_with_json([])
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    # During the run a release is made that nothing grants.
    served.append(gh_release(api, OWNER_NAME, 7, "v9.9.9", author="octocat"))
    return run_dir, served, api


def test_a_proxy_for_the_releases_read_at_closeout_is_unverified(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        liar: tuple[str, list[str]]) -> None:
    """Attack: HTTP_PROXY at closeout sends the GitHub reads to a server that says there is
    no release."""
    run_dir, _served, _api = github_run(tmp_path, httpserver, monkeypatch)
    proxy, asked = liar
    code, report = closeout(run_dir, env_with(HTTP_PROXY=proxy, http_proxy=proxy))
    assert code == 3
    assert "environment HTTP_PROXY: set since begin" in changed(report)
    unavailable = [f["reason"] for f in report["findings"] if f["kind"] == "releases-unavailable"]
    assert unavailable and "GitHub was not called" in unavailable[0]
    assert asked == []  # the token never went to the proxy


def test_github_api_url_on_another_port_at_closeout_is_unverified(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        liar: tuple[str, list[str]]) -> None:
    """Attack: GITHUB_API_URL pointed at another port of the same host, which answers that
    there is no release."""
    run_dir, _served, _api = github_run(tmp_path, httpserver, monkeypatch)
    other, asked = liar
    code, report = closeout(run_dir, env_with(GITHUB_API_URL=f"{other}/api/v3"))
    assert code == 3
    assert "environment GITHUB_API_URL: changed since begin" in changed(report)
    assert asked == []


def test_the_same_github_settings_at_closeout_read_the_release(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir, _served, _api = github_run(tmp_path, httpserver, monkeypatch)
    code, report = closeout(run_dir)
    assert code == 1
    assert [f["verdict"] for f in report["findings"] if f["kind"] == "release-added"] == [
        "UNGRANTED"]


# --- what the fingerprint holds, as plain data -------------------------------------------------

def test_the_transport_environment_is_proxies_ca_bundles_the_api_and_git_but_identity() -> None:
    env = {"http_proxy": "a", "HTTPS_PROXY": "b", "ALL_PROXY": "c", "NO_PROXY": "d",
           "no_proxy": "e", "GIT_SSH_COMMAND": "f", "GIT_EXEC_PATH": "g",
           "GIT_AUTHOR_NAME": "x", "GIT_COMMITTER_EMAIL": "y", "SSL_CERT_FILE": "h",
           "REQUESTS_CA_BUNDLE": "i", "CURL_CA_BUNDLE": "j", "GITHUB_API_URL": "k",
           "HOME": "/home/u", "PATH": "/bin", "GITHUB_TOKEN": "secret"}
    assert set(transport_env(env)) == {
        "http_proxy", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "no_proxy", "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "GITHUB_API_URL"}


def test_git_exec_path_is_never_inherited() -> None:
    for hardened in (False, True):
        env = environment({"GIT_EXEC_PATH": "/tmp/elsewhere", "PATH": "/bin"},
                          hardened=hardened)
        assert "GIT_EXEC_PATH" not in env


def test_transport_changes_name_each_setting() -> None:
    then = {"git": {"path": "/usr/bin/git", "sha256": "a" * 64},
            "settings": {"environment A": "1", "environment B": "2", "environment C": "3"}}
    now = {"git": {"path": "/usr/bin/git", "sha256": "b" * 64},
           "settings": {"environment A": "1", "environment B": "9", "environment D": "4"}}
    assert transport_changes(then, now) == [
        "the git executable /usr/bin/git is not the file begin ran (sha256 aaaaaaaaaaaa…, now "
        "bbbbbbbbbbbb… at /usr/bin/git)",
        "environment B: changed since begin", "environment C: unset since begin",
        "environment D: set since begin"]
    assert transport_changes(then, then) == []


def test_ssh_config_and_its_includes_are_fingerprinted(
        tmp_path: Path, global_config: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh" / "conf.d").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Include conf.d/*.conf\nHost x\n  User y\n")
    (home / ".ssh" / "conf.d" / "a.conf").write_text("Host a\n  ProxyCommand nc %h %p\n")
    assert ssh_config_files(home) == [str(home / ".ssh" / "config"),
                                      str(home / ".ssh" / "conf.d" / "a.conf")]
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    first = fingerprint([], env, salt="s")
    (home / ".ssh" / "conf.d" / "a.conf").write_text("Host a\n  ProxyCommand evil %h %p\n")
    names = transport_changes(first, fingerprint([], env, salt="s"))
    assert names == [f"ssh configuration file {home}/.ssh/conf.d/a.conf: changed since begin"]
