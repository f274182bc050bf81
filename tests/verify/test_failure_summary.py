"""Regression checks from a review of loop-verify against the SPEC's letter."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from verify_helpers import ROOT, kill_marked, make_verify_repo, marked_pids, start_verify, wait_for

from jobs.config.load import load_config
from jobs.core.durations import parse_duration
from jobs.core.errors import ConfigError
from jobs.main import main as verify_main


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Review Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "review@example.invalid")


def loop_verify(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "jobs.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "nan"])
def test_non_finite_durations_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


@pytest.mark.parametrize("text", [".inf", ".nan", "1.0e+400"])
def test_config_refuses_yaml_infinity_and_nan(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"timeout: {text}\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert "timeout" in str(info.value)


def test_relative_config_path_gives_absolute_paths(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("state_dir: state\nlog_file: logs/x.jsonl\n")
    monkeypatch.chdir(tmp_path)
    config = load_config("conf/config.yaml")
    assert config.state_dir == tmp_path / "conf" / "state"
    assert config.log_file == tmp_path / "conf" / "logs" / "x.jsonl"
    assert config.ledger == f"sqlite:///{tmp_path / 'conf' / 'state' / 'ledger.db'}"


def test_failure_summary_names_an_absolute_output_path_with_a_relative_config(
        tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, extra_config={"state_dir": "state", "repos": [
        {"path": "app"}]})
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.commit_all()
    proc = loop_verify(tmp_path, "run", "--config", "config.yaml", "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    task = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
    line = next(ln for ln in task.splitlines() if ln.startswith("full output: "))
    shown = Path(line.removeprefix("full output: "))
    assert shown.is_absolute() and shown.is_file()
    assert shown.is_relative_to(tmp_path / "state")
    # Another cwd reads the same ledger through the same relative configuration file.
    other = loop_verify(repo.root, "history", "--config", "../config.yaml")
    assert other.returncode == 0 and "fail" in other.stdout


def test_unwritable_log_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log folder should be\n")
    data = yaml.safe_load(repo.config_path.read_text())
    data["log_file"] = str(blocker / "loop-jobs.jsonl")
    repo.config_path.write_text(yaml.safe_dump(data))
    for verb in ("run", "list", "history"):
        proc = repo.run(verb)
        assert proc.returncode == 3, (verb, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith("loop-verify: cannot write the log file ")
        assert len(proc.stderr.strip().splitlines()) == 1
    assert repo.subjects() == ["setup"]


def test_a_justfile_error_keeps_the_summary_shape(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, justfile="verify-ok:\n  echo ok\n\tbroken(((\n")
    repo.add_task(1)
    repo.commit_all()
    proc = repo.run("run", "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    assert repo.subjects()[0] == "loop-verify: TASK-1 failed (just verify-ok)"
    text = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
    notes = text.split("<!-- SECTION:NOTES:BEGIN -->")[1].split("<!-- SECTION:NOTES:END -->")[0]
    lines = notes.strip("\n").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("verify-failed "))
    assert "`just verify-ok` not run: the justfile cannot be read: error:" in lines[start]
    # Everything after the first line of the summary is indented, as the output tail is.
    assert len(lines) > start + 1
    assert all(ln.startswith("    ") for ln in lines[start + 1:])


def test_dates_on_the_command_line_are_yyyy_mm_dd_only(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = str(repo.config_path)
    for text in ("20261130", "2026-W48-1", "2026-334", "2026-02-30"):
        for args in (("run", "--today", text), ("list", "--today", text),
                     ("history", "--since", text)):
            assert verify_main([*args, "--config", config]) == 2, args
            assert "expected a date YYYY-MM-DD" in capsys.readouterr().err
    assert repo.subjects() == ["setup"]


def test_two_repositories_with_one_folder_name_keep_their_own_output(tmp_path: Path) -> None:
    first = make_verify_repo(tmp_path / "a", justfile="verify-bad:\n    echo from-a\n    exit 1\n")
    second = make_verify_repo(tmp_path / "b", justfile="verify-bad:\n    echo from-b\n    exit 1\n")
    for repo in (first, second):
        repo.add_task(1, notes="verify-cmd: just verify-bad")
        repo.commit_all()
    config = tmp_path / "both.yaml"
    config.write_text(yaml.safe_dump({
        "repos": [{"path": str(first.root)}, {"path": str(second.root)}],
        "timezone": "UTC", "state_dir": str(tmp_path / "state")}))
    proc = first.run("run", "--config", str(config), "--today", "2026-11-30")
    assert proc.returncode == 1, proc.stderr
    shown = []
    for repo, said in ((first, "from-a"), (second, "from-b")):
        text = next((repo.root / "backlog" / "tasks").glob("task-1 *.md")).read_text()
        line = next(ln for ln in text.splitlines() if ln.startswith("full output: "))
        out = Path(line.removeprefix("full output: "))
        assert said in out.read_text()
        shown.append(out)
    assert shown[0] != shown[1]


def test_a_symlinked_task_file_is_an_error_not_replaced(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path)
    real = repo.add_task(1, folder="docs")
    link = repo.root / "backlog" / "tasks" / real.name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path("..") / "docs" / real.name)
    repo.commit_all()
    before, head = real.read_bytes(), repo.head()
    proc = repo.run("run", "--today", "2026-11-30")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("error    app TASK-1")
    assert "symbolic link" in proc.stdout
    assert link.is_symlink() and real.read_bytes() == before
    assert repo.head() == head and repo.status() == ""


def test_unknown_user_in_a_path_is_a_config_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    nobody = "~no-such-user-for-loop-verify"
    for text in (f"repos:\n  - path: {nobody}/app\n", f"state_dir: {nobody}/s\n"):
        cfg = tmp_path / "config.yaml"
        cfg.write_text(text)
        with pytest.raises(ConfigError):
            load_config(cfg)
    with pytest.raises(ConfigError):
        load_config(f"{nobody}/config.yaml")
    with pytest.raises(ConfigError):
        load_config(None, env={"LOOP_JOBS_CONFIG": f"{nobody}/config.yaml"})
    (tmp_path / "empty.yaml").write_text("state_dir: state\n")
    for args in (("list", "--repo", f"{nobody}/app"), ("history", "--repo", f"{nobody}/app")):
        assert verify_main([*args, "--config", str(tmp_path / "empty.yaml")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("loop-verify: ") and "cannot expand '~'" in err


@pytest.mark.parametrize("key", ["state_dir", "log_file", "ledger", "timezone"])
def test_a_nul_character_in_a_value_is_a_config_error(tmp_path: Path, key: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f'{key}: "sqlite:///a\\0b"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert key in str(info.value)


def test_list_exits_3_when_a_repository_backlog_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    config = str(repo.config_path)
    assert verify_main(["list", "--config", config, "--today", "2026-11-30"]) == 0
    capsys.readouterr()
    # A broken config.yml (the error has a line) and a repository with no backlog/ at all.
    with (repo.root / "backlog" / "config.yml").open("a") as fh:
        fh.write("statuses: [\n")
    assert verify_main(["list", "--config", config]) == 3
    assert "config.yml:" in capsys.readouterr().out
    plain = tmp_path / "plain"
    subprocess.run(["git", "init", "-q", "-b", "main", str(plain)], check=True)
    assert verify_main(["list", "--config", config, "--repo", str(plain), "--json"]) == 3
    assert "no backlog/ folder" in capsys.readouterr().out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_run_leaves_no_recipe_behind(tmp_path: Path, sig: int) -> None:
    started = tmp_path / "started"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-slow:\n    touch {started}\n    sleep 60\n"))
    task = repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all()
    before, head = task.read_bytes(), repo.head()
    mark = f"review-term-{sig}-{os.getpid()}"
    proc = start_verify(repo, "run", "--today", "2026-11-30", mark=mark, out=tmp_path / "out")
    try:
        wait_for(started, proc)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 3
        # Nothing the recipe started outlives the run it belonged to.
        assert marked_pids(mark) == []
    finally:
        kill_marked(mark)
    out = (tmp_path / "out.stdout").read_text()
    assert out.startswith("interrupted app TASK-1  just verify-slow"), out
    assert task.read_bytes() == before and repo.head() == head and repo.status() == ""


def test_doctor_says_when_git_cannot_name_the_committer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    assert verify_main(["doctor", "--config", str(repo.config_path)]) in (0, 1)
    assert f"ok   repo {repo.root}:" in capsys.readouterr().out
    home = tmp_path / "home"
    home.mkdir()
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{who}_NAME")
        monkeypatch.delenv(f"GIT_{who}_EMAIL")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("EMAIL", raising=False)
    # Some hosts still have a full name and a resolvable domain: git then needs nothing else.
    probe = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=repo.root,
                           capture_output=True, check=False)
    if probe.returncode == 0:
        pytest.skip("git can guess an identity on this host")
    assert verify_main(["doctor", "--config", str(repo.config_path)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL repo {repo.root}: git cannot name the committer" in out


def test_nohup_still_ignores_sighup(tmp_path: Path) -> None:
    started = tmp_path / "started"
    repo = make_verify_repo(tmp_path, justfile=(
        f"verify-slow:\n    touch {started}\n    sleep 60\n"))
    repo.add_task(1, notes="verify-cmd: just verify-slow")
    repo.commit_all()
    mark = f"review-nohup-{os.getpid()}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOOP_VERIFY_TEST_MARK=mark)
    argv = ["nohup", sys.executable, "-m", "jobs.main", "run", "--config", str(repo.config_path),
            "--today", "2026-11-30"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for(started, proc)
        proc.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 3
        assert marked_pids(mark) == []
    finally:
        proc.kill()
        kill_marked(mark)


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


def test_list_prints_a_non_utf8_file_name_escaped(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    odd = repo.root / "backlog" / "tasks" / os.fsdecode(b"task-2 - \xff.md")
    odd.write_bytes(b"")
    # A strict UTF-8 stdout, as on a machine with a real UTF-8 locale.
    proc = repo.run("list", "--today", "2026-11-30", env={"PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0, proc.stderr
    assert "task-2 - \\xff.md: empty file" in proc.stdout
