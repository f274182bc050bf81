"""The review reads what it cannot trust (task titles, recipe output, ledger rows another machine
may have written, task files of any size) and shows it as text: controls escaped, no file read
outside the state directory, only the head of a task file read for its title."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from project import ROOT
from verify_helpers import make_verify_repo

TODAY = ("--today", "2026-11-30")


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


def test_a_runs_row_another_machine_wrote_is_shown_as_text_and_a_malformed_one_stops_nothing(
        tmp_path: Path) -> None:
    # A runs row's verdict counts went into the HTML page as they were (`<img onerror=…>` ran in
    # the owner's browser), and its counts keys and exit code into the Markdown report; a row
    # whose counts were not a JSON object ended `review` and `history --runs` with an
    # unexpected error: one bad row hid every run.
    import sqlite3

    repo = make_verify_repo(tmp_path, tasks=[1])
    assert repo.run("run", *TODAY).returncode == 0
    hostile = [
        ("h1", '{"fail": "<img src=x onerror=alert(1)>", "<script>k</script>": 2}', 1),
        ("h2", '{"pass": 1}', "<b>code</b>"),
        ("h3", "[1, 2]", 0),
        ("h4", "not json", 0),
    ]
    with sqlite3.connect(repo.state_dir / "ledger.db") as db:
        for n, (run_id, counts, exit_code) in enumerate(hostile, start=1):
            db.execute("INSERT INTO runs VALUES (?, 'other', NULL, 'manual', ?, ?, ?, ?)",
                       (run_id, f"2026-11-2{n} 07:30:00.000000", f"2026-11-2{n} 07:31:00.000000",
                        exit_code, counts))

    for fmt in ("markdown", "html"):
        out = tmp_path / f"review.{fmt}"
        done = repo.run("review", "--config", str(repo.config_path), "--format", fmt,
                        "--since", "2026-11-01", "--until", "2026-11-30", "--out", str(out))
        assert done.returncode == 0, done.stderr
        report = out.read_text(encoding="utf-8")
        assert "<img" not in report and "<script>k" not in report and "<b>code" not in report
        assert "&lt;script&gt;k" in report, fmt
    listed = repo.run("history", "--runs")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 5
