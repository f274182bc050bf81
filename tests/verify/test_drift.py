"""loop-verify against careless configuration and environments (third adversarial round): what
a configuration file or a shell can hand it that it must refuse up front, clearly, rather than
fail on later. Real repositories with bare remotes, real `just`."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from verify_helpers import make_verify_repo

from jobs.main import main
from jobs.schedule.units import unit_settings

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


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.parametrize("variable", ["HOME", "XDG_STATE_HOME"])
def test_a_carriage_return_in_the_environment_cannot_add_a_directive_to_the_units(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str) -> None:
    # systemd ends a unit's line at CR as well as LF: a $HOME holding "\rExecStartPre=..." was
    # written into WorkingDirectory= and Environment=, and systemd read a second directive
    # that runs a program of the value's choosing before every scheduled run.
    evil = tmp_path / "dir\rExecStartPre=/nonexistent/injected"
    evil.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv(variable, str(evil))
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\n", encoding="utf-8")
    units = tmp_path / "xdg-config" / "systemd" / "user"

    for argv in (["install", "systemd", "--config", str(config)],
                 ["install", "systemd", "--config", str(config), "--print"],
                 ["install", "launchagent", "--config", str(config), "--print"]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "", argv
        lines = err.strip().splitlines()
        assert len(lines) == 1 and f"${variable}" in lines[0], lines
        assert "line break or another control character" in lines[0]
        assert not units.exists()

    # Quotes, backslashes, `$`, `%` and spaces are not line breaks: they are written so that
    # systemd reads them back as they are.
    odd = tmp_path / 'a "b" \\c $d 5% e'
    odd.mkdir()
    monkeypatch.setenv(variable, str(odd))
    assert main(["install", "systemd", "--config", str(config)]) == 0
    service = units / "loop-verify.service"
    settings = unit_settings(service.read_text(encoding="utf-8"))
    env = dict(w.replace("%%", "%").split("=", 1) for w in shlex.split(settings["Environment"]))
    assert env[variable] == str(odd)
    if SYSTEMD_ANALYZE is None:
        pytest.skip("systemd-analyze is not installed (.ci/run installs the systemd package)")
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(service)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("text", "key", "line", "first"), [
    ("timeout: 30m\nkill_grace: 5s\ntimeout: 1s\n", "timeout", 3, 1),
    ("timeout: 30m\n'timeout': 1s\n", "timeout", 2, 1),
    ("repos:\n  - path: {app}\n    timeout: 1h\n    timeout: 1s\n", "repos[0].timeout", 4, 3),
])
def test_a_key_written_twice_in_the_configuration_is_refused(
        tmp_path: Path, text: str, key: str, line: int, first: int) -> None:
    # PyYAML keeps the last of two equal keys without a word, so a `timeout: 1s` forgotten
    # further down silently replaced the one the owner reads, and every recipe timed out.
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.config_path.write_text(text.format(app=repo.root), encoding="utf-8")
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    for verb in ("run", "list"):
        done = repo.run(verb, *TODAY, "--repo", str(repo.root))
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines == [f"loop-verify: {repo.config_path}:{line}: {key}: repeated key "
                         f"(first on line {first}) (got '1s')"], lines
    assert task.read_bytes() == before and repo.head() == head


HIDDEN = ("\x1b", "\x07", "\r", "\x00", "\u202e", "\x9b")


def test_the_review_shows_control_characters_from_tasks_and_output_instead_of_passing_them_on(
        tmp_path: Path) -> None:
    # A task title or a recipe's output holding terminal escapes (a colour, a window title, a
    # screen clear; `\r` that overwrites a line) or a right-to-left override went into the
    # Markdown report as they were: `cat review.md` ran them on the reader's terminal, and the
    # override reversed what followed it on the line, in the HTML page too.
    justfile = ("verify-colour:\n"
                "    printf 'ok\\n\\033[31mred\\033[0m FAILED\\rPASSED\\n\\033]0;pwned\\007'\n"
                "    exit 1\n")
    repo = make_verify_repo(tmp_path, justfile=justfile)
    path = repo.add_task(1, notes="verify-cmd: just verify-colour")
    text = path.read_text(encoding="utf-8").replace(
        "title: Task 1", 'title: "T\\e]0;pwned\\a\\e[2J\\u202eliaf\\x9b"')
    path.write_text(text, encoding="utf-8")
    repo.commit_all()
    assert repo.run("run", *TODAY).returncode == 1

    for fmt in ("markdown", "html"):
        out = tmp_path / f"review.{fmt}"
        done = repo.run("review", "--config", str(repo.config_path), "--format", fmt,
                        "--out", str(out))
        assert done.returncode == 0, done.stderr
        report = out.read_text(encoding="utf-8")
        assert "TASK-1" in report and "liaf" in report
        assert [ch for ch in HIDDEN if ch in report] == [], fmt
        # Shown, not dropped: the reader sees that the text held them.
        assert "\\x1b" in report and "\\u202e" in report and "FAILED\\rPASSED" in report


def test_run_list_and_history_show_c1_controls_and_bidi_overrides_escaped(
        tmp_path: Path) -> None:
    # `one_line` escaped C0 controls but let the C1 ones through (U+009B is CSI, a terminal's
    # escape sequence in one character) and the bidirectional overrides, which reverse the rest
    # of the line: a file name a recipe leaves, or a task file's own name, reached the terminal.
    csi, rlo = "\x9b", "\u202e"
    name = f"a{csi}2J{rlo}txt.b"
    justfile = f"verify-mk:\n    touch '{name}'\n"
    repo = make_verify_repo(tmp_path, justfile=justfile)
    repo.add_task(1, notes="verify-cmd: just verify-mk")
    broken = repo.root / "backlog" / "tasks" / f"task-9 - x{csi}31m{rlo}gnp.md"
    broken.write_text("---\nid: [\n---\n", encoding="utf-8")
    repo.commit_all()

    outputs = [repo.run("list", *TODAY), repo.run("run", *TODAY), repo.run("history")]
    assert [p.returncode for p in outputs] == [0, 1, 0], [p.stderr for p in outputs]
    for proc in outputs:
        assert csi not in proc.stdout and rlo not in proc.stdout, proc.stdout
    assert "x\\x9b31m\\u202egnp.md" in outputs[0].stdout
    for proc in outputs[1:]:
        assert "a\\x9b2J\\u202etxt.b" in proc.stdout, proc.stdout


def test_a_failure_summary_writes_c1_controls_and_bidi_overrides_as_replacement_characters(
        tmp_path: Path) -> None:
    # The summary replaced C0 controls with U+FFFD but kept the C1 ones (U+009B, a terminal's
    # CSI) and the bidirectional overrides: a recipe's output put them into the task file, where
    # `cat` or `backlog task view` acts on them and an override reverses the summary's text.
    justfile = ("verify-odd:\n"
                "    printf 'a\\302\\2332J b\\342\\200\\256deliaf c\\342\\201\\246d\\n'\n"
                "    exit 1\n")
    repo = make_verify_repo(tmp_path, justfile=justfile)
    path = repo.add_task(1, notes="verify-cmd: just verify-odd")
    repo.commit_all()
    assert repo.run("run", *TODAY).returncode == 1
    text = path.read_text(encoding="utf-8")
    assert "exited 1" in text
    assert "    a\ufffd2J b\ufffddeliaf c\ufffdd\n" in text, text
    assert not {"\x9b", "\u202e", "\u2066"} & set(text)


def test_a_repository_where_git_cannot_name_the_committer_is_skipped_before_any_recipe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A scheduled job often has no global git config and no GIT_* identity. Every recipe due
    # there ran, and then every verdict's commit failed ("Author identity unknown"): an hour of
    # recipes for verdicts that could not land, again each morning for the newly due ones.
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.git("config", "user.useConfigOnly", "true")  # no guess from the host name either
    home = tmp_path / "empty-home"
    home.mkdir()
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "EMAIL", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    for args in (("--dry-run",), ()):
        done = repo.run("run", *TODAY, *args)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "skipped  app: cannot take a commit: git cannot name the committer: fatal: " \
            "no email was given" in done.stdout, done.stdout
    assert not list(repo.state_dir.glob("runs/*/*.log")), "a recipe ran"
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""

    repo.git("config", "user.name", "Owner")
    repo.git("config", "user.email", "owner@example.invalid")
    done = repo.run("run", *TODAY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"


@pytest.mark.parametrize(("args", "option"), [
    (("--until", "0001-01-01"), "--until"),             # the default window starts 30 days before
    (("--until", "9999-12-31"), "--until"),             # a whole day: it ends the day after
    (("--since", "0001-01-01", "--until", "2026-12-01"), "--since"),
    (("--since", "0001-01-01T00:00:00+05:00", "--until", "2026-12-01"), "--since"),
])
def test_a_review_window_beyond_the_calendar_is_a_usage_error(
        tmp_path: Path, args: tuple[str, ...], option: str) -> None:
    # Dates at the ends of the calendar overflowed the window's arithmetic: "unexpected error:
    # OverflowError: date value out of range", exit 3 (could not check) for a typo.
    repo = make_verify_repo(tmp_path, tasks=[1])
    out = tmp_path / "review.html"
    done = repo.run("review", "--config", str(repo.config_path), "--out", str(out), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"loop-verify: {option}: "), lines
    assert "unexpected" not in lines[0] and not out.exists()

    # The widest window taken still makes a report.
    done = repo.run("review", "--config", str(repo.config_path), "--out", str(out),
                    "--since", "0002-01-01", "--until", "9998-12-30")
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_paths_that_look_like_template_placeholders_are_written_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The templates were filled one placeholder after another, so a value holding the text of a
    # later one (a folder named `@ON_CALENDAR@`) was filled in again, and a value holding one the
    # templates do not know (`@X@`) failed the install as a broken template.
    home = tmp_path / "home @STOP_TIMEOUT@"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    folder = tmp_path / "conf @ON_CALENDAR@ @X@"
    folder.mkdir()
    config = folder / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state @HOME@'}\n", encoding="utf-8")

    assert main(["install", "systemd", "--config", str(config)]) == 0, capsys.readouterr().err
    service = tmp_path / "xdg-config" / "systemd" / "user" / "loop-verify.service"
    settings = unit_settings(service.read_text(encoding="utf-8"))
    assert settings["WorkingDirectory"] == str(home)
    assert shlex.split(settings["ExecStart"])[-1] == str(config)
    capsys.readouterr()

    assert main(["install", "launchagent", "--config", str(config), "--print"]) == 0
    plist = plistlib.loads(capsys.readouterr().out.encode("utf-8"))
    assert plist["ProgramArguments"][-1] == str(config)
    assert plist["WorkingDirectory"] == str(home)
    assert plist["StandardOutPath"].startswith(str(tmp_path / "state @HOME@"))


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


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_log_file_that_cannot_be_written_is_one_line_not_a_traceback_per_event(
        tmp_path: Path) -> None:
    # A full disk under the log file (here /dev/full, where every write fails with ENOSPC):
    # logging printed "--- Logging error ---" and a traceback to stderr for every event.
    repo = make_verify_repo(tmp_path, tasks=[1], extra_config={"log_file": "/dev/full"})
    done = repo.run("run", *TODAY, process=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("pass     app TASK-1  just verify-ok")
    assert done.stderr.splitlines() == [
        "loop-verify: cannot write the log file /dev/full: No space left on device; the events "
        "of this run may be missing from it"], done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    done = repo.run("history", process=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def _mount_namespace_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


# Runs loop-verify with a small tmpfs mounted over state_dir, in a mount namespace of its own
# (so nothing is left mounted, whatever happens); FILL=1 fills it before the run.
_SMALL_STATE = """set -e
mount -t tmpfs -o size=2m tmpfs "$STATE"
if [ "$FILL" = 1 ]; then cat /dev/zero > "$STATE/fill" 2>/dev/null || true; fi
exec "$PYTHON" -m jobs.main run --config "$CONFIG" --today 2026-11-30
"""


@pytest.mark.skipif(not _mount_namespace_available(),
                    reason="needs unshare and a mount namespace of its own (tmpfs)")
@pytest.mark.parametrize("fill", [True, False])
def test_a_full_state_directory_never_reopens_a_task(tmp_path: Path, fill: bool) -> None:
    # With state_dir's file system full, `just` could not write the recipe's output (it exits
    # 101), nor could `head` in a chatty recipe on a nearly full one: each due task was
    # reopened as failed, the machine's fault written into every task.
    justfile = ("verify-ok:\n    echo all good\n\n"
                "verify-chatty:\n    head -c 4000000 /dev/zero | tr '\\0' x\n")
    state = tmp_path / "state"
    state.mkdir()
    repo = make_verify_repo(tmp_path, justfile=justfile, extra_config={
        "state_dir": str(state), "log_file": str(tmp_path / "log.jsonl"),
        "ledger": f"sqlite:///{tmp_path / 'ledger.db'}"})
    repo.add_task(1, notes="verify-cmd: just verify-ok" if fill
                  else "verify-cmd: just verify-chatty")
    repo.commit_all()
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()

    env = dict(os.environ, STATE=str(state), FILL="1" if fill else "0", PYTHON=sys.executable,
               CONFIG=str(repo.config_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(["unshare", "-rm", "sh", "-c", _SMALL_STATE], cwd=repo.root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("error    app TASK-1"), done.stdout
    assert ("its file system is full" in done.stdout), done.stdout
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""


def test_a_local_time_zone_no_clock_can_hold_is_a_usage_error(tmp_path: Path) -> None:
    # glibc reads TZ=UTC+99 as an offset of 99 hours, which no datetime can hold: without a
    # configured `timezone` every command died with "unexpected error: ValueError: offset must
    # be a timedelta strictly between ...", exit 3, naming neither TZ nor what to do.
    probe = subprocess.run([sys.executable, "-c", "import datetime as d; d.datetime.now()"
                            ".astimezone()"], env=dict(os.environ, TZ="UTC+99"),
                           capture_output=True, check=False)
    if probe.returncode == 0:
        pytest.skip("this C library keeps TZ=UTC+99 within a day of UTC")
    repo = make_verify_repo(tmp_path, tasks=[1])
    repo.config_path.write_text(repo.config_path.read_text().replace("timezone: UTC\n", ""))
    assert "timezone" not in repo.config_path.read_text()
    for verb in ("list", "run"):
        done = repo.run(verb, *TODAY, env={"TZ": "UTC+99"}, process=True)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.splitlines() == [
            "loop-verify: $TZ: 'UTC+99' gives a local time zone no clock can hold (an offset "
            "of a day or more); fix $TZ or set `timezone:` in the configuration"], done.stderr
    done = repo.run("run", *TODAY, "--dry-run", env={"TZ": "UTC+5"}, process=True)
    assert done.returncode == 0, done.stderr


def test_the_review_reads_no_file_a_ledger_row_points_outside_the_state_directory(
        tmp_path: Path) -> None:
    # The review embedded the last 64 KiB of whatever file a failing row's output_path named:
    # anyone who can write the shared ledger (another machine of a PostgreSQL ledger, with this
    # machine's name) could make the next incident report carry ~/.ssh/id_ed25519.
    import sqlite3

    justfile = "verify-bad:\n    echo own output\n    exit 1\n"
    repo = make_verify_repo(tmp_path, justfile=justfile)
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.add_task(2, notes="verify-cmd: just verify-bad")
    repo.commit_all()
    assert repo.run("run", *TODAY).returncode == 1
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nTOPSECRET\n")
    inside = repo.state_dir / "runs" / "elsewhere.log"
    inside.symlink_to(secret)  # a link from inside the state directory out of it
    with sqlite3.connect(repo.state_dir / "ledger.db") as db:
        db.execute("UPDATE attempts SET output_path = ? WHERE task_id = 'TASK-1'", (str(secret),))
        db.execute("UPDATE attempts SET output_path = ? WHERE task_id = 'TASK-2'", (str(inside),))

    for fmt in ("markdown", "html"):
        out = tmp_path / f"review.{fmt}"
        done = repo.run("review", "--config", str(repo.config_path), "--format", fmt,
                        "--out", str(out))
        assert done.returncode == 0, done.stderr
        report = out.read_text(encoding="utf-8")
        assert "TASK-1" in report and "TASK-2" in report
        assert "TOPSECRET" not in report and "PRIVATE KEY" not in report, fmt
        assert "is not in this machine&#x27;s state directory" in report or \
            "is not in this machine's state directory" in report


@pytest.mark.parametrize("target", ["/dev/zero", "../../outside.yml"])
def test_a_backlog_config_that_links_out_of_the_repository_is_not_read(
        tmp_path: Path, target: str) -> None:
    # Git keeps symbolic links: a repository whose backlog/config.yml links to /dev/zero made
    # `list` and `run` read it until memory ran out (task files were already refused so).
    repo = make_verify_repo(tmp_path, tasks=[1])
    (tmp_path / "outside.yml").write_text("statuses: [A, Done]\n")
    config = repo.root / "backlog" / "config.yml"
    config.unlink()
    config.symlink_to(target)
    repo.commit_all()
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    before, head = task.read_bytes(), repo.head()
    reason = f"{config}: symbolic link to outside the repository"

    done = subprocess.run(["sh", "-c", 'ulimit -v 1000000; exec "$@"', "sh", sys.executable,
                           "-m", "jobs.main", "list", "--config", str(repo.config_path), *TODAY],
                          capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert f"unreadable {reason}" in done.stdout, done.stdout + done.stderr
    done = repo.run("run", *TODAY)
    assert done.returncode == 3 and f"skipped  app: {reason}" in done.stdout, done.stdout
    assert task.read_bytes() == before and repo.head() == head


@pytest.mark.parametrize("closed", [">&-", "2>&-", ">&- 2>&-", "<&- >&- 2>&-"])
def test_a_run_started_with_its_standard_streams_closed_still_verifies_and_tells_the_truth(
        tmp_path: Path, closed: str) -> None:
    # Started with stdout closed (a supervisor or a script's `>&-`), Python has no sys.stdout:
    # the first printed line raised AttributeError after the verdict commit, the repository was
    # recorded as an unexpected error and `run` exited 3 for a pass; with stderr closed too,
    # nothing was verified at all.
    repo = make_verify_repo(tmp_path, tasks=[1])
    script = f'exec "$@" {closed}'
    done = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "jobs.main", "run",
                           "--config", str(repo.config_path), *TODAY],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
    events = [e["event"] for e in repo.log_events()]
    assert "verify.passed" in events and not [e for e in events if "unexpected" in e], events


def test_the_review_writes_through_a_link_or_into_a_fifo_never_replacing_them(
        tmp_path: Path) -> None:
    # `--out` was replaced atomically by a new regular file whatever it was: a link to the
    # shared reports folder became a file of its own, and, as root, `--out /dev/stdout` or
    # `--out /dev/null` replaced the device node for the whole machine. (Shown here with a
    # link and a FIFO: the old code would have destroyed a real device node.)
    import threading

    repo = make_verify_repo(tmp_path, tasks=[1])
    assert repo.run("run", *TODAY).returncode == 0
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "latest.html").write_text("old report\n")
    link = tmp_path / "review.html"
    link.symlink_to(reports / "latest.html")
    done = repo.run("review", "--config", str(repo.config_path), "--out", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(reports / "latest.html")
    assert (reports / "latest.html").read_text(encoding="utf-8").startswith("<!doctype html>")

    fifo = tmp_path / "review.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(fifo, os.O_WRONLY)  # the reader sees EOF only once this closes too
    os.set_blocking(reader, True)
    got: list[bytes] = []

    def read_all() -> None:
        while chunk := os.read(reader, 65536):
            got.append(chunk)

    thread = threading.Thread(target=read_all)
    thread.start()
    try:
        done = repo.run("review", "--config", str(repo.config_path), "--format", "markdown",
                        "--out", str(fifo))
    finally:
        os.close(keep_open)
        thread.join(timeout=30)
        os.close(reader)
    assert done.returncode == 0, done.stderr
    assert fifo.is_fifo(), "the FIFO was replaced by a file"
    assert b"".join(got).startswith(b"# loop-jobs incident review")


def test_the_review_reads_only_the_head_of_a_task_file_for_its_title(tmp_path: Path) -> None:
    # The title was looked for in the first 8 KiB of the task file, after reading all of it: a
    # task file of gigabytes (git holds any size) took the review's memory with it.
    repo = make_verify_repo(tmp_path, tasks=[1])
    assert repo.run("run", *TODAY).returncode == 0
    task = repo.root / "backlog" / "tasks" / "task-1 - Task-1.md"
    head = task.read_bytes()
    with open(task, "r+b") as fh:
        fh.truncate(3 << 30)  # sparse: 3 GiB long, no disk used
    out = tmp_path / "review.md"
    done = subprocess.run(
        ["sh", "-c", 'ulimit -v 1500000; exec "$@"', "sh", sys.executable, "-m", "jobs.main",
         "review", "--config", str(repo.config_path), "--format", "markdown", "--out", str(out)],
        capture_output=True, text=True, timeout=60, check=False,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    task.write_bytes(head)
    assert done.returncode == 0, done.stderr
    assert "TASK-1 — Task 1" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_relative_path_entry_never_starts_the_repositorys_own_git_or_just(
        tmp_path: Path, dry_run: bool) -> None:
    # PATH=":/usr/bin..." (a stray colon: `PATH=$EXTRA:$PATH` with EXTRA empty) makes the
    # working directory the first place to look, and git and just are started in the
    # repository: its own executable `git` or `just` ran instead, even for `run --dry-run`.
    real_git, real_just = shutil.which("git"), shutil.which("just")
    assert real_git and real_just
    marker = tmp_path / "impostor-ran"
    repo = make_verify_repo(tmp_path / "base", tasks=[1])
    for name, real in (("git", real_git), ("just", real_just)):
        impostor = repo.root / name
        impostor.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexec '{real}' \"$@\"\n")
        impostor.chmod(0o755)
    repo.commit_all()

    env = {"PATH": ":" + os.environ["PATH"]}
    done = repo.run("run", *TODAY, *(("--dry-run",) if dry_run else ()), env=env, process=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()
    if not dry_run:
        assert repo.subjects()[0] == "loop-verify: TASK-1 passed (just verify-ok)"
