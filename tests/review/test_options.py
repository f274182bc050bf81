"""The review's window and `--out`: a window beyond the calendar is a usage error, and `--out` is
written through a symbolic link or into a FIFO, never replacing them."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from review_helpers import plain_ledger, review_text
from verify_helpers import make_verify_repo

from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run

TODAY = ("--today", "2026-11-30")


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


def test_repo_by_the_path_of_one_clone_keeps_every_clone_of_its_repository(
        tmp_path: Path) -> None:
    # `--repo PATH` is "the repository of the clone at that path, with all its clones": the
    # other machine's clone of the same repository (another folder name) was dropped, so its
    # failure vanished from a review of that repository.
    config, ledger = plain_ledger(tmp_path)
    start = datetime(2026, 11, 29, 7, tzinfo=UTC)
    for hour, repo, machine in ((0, "/a/frontend", "mac"), (1, "/b/webapp", "pi")):
        ledger.save(Attempt(f"r{hour}", start + timedelta(hours=hour), repo, "fail",
                            task_id="TASK-1", label_date="2026-11-01", machine=machine,
                            exit_code=1, repo_identity="github.com/acme/webapp"))
    ledger.save(Attempt("r9", start, "/c/other", "fail", task_id="TASK-1",
                        label_date="2026-11-01", machine="mac", exit_code=1,
                        repo_identity="github.com/acme/other"))
    ledger.close()
    window = ("--since", "2026-11-29", "--until", "2026-11-29")
    for choice in ("/a/frontend", "frontend", "webapp"):
        text = review_text(config, *window, "--repo", choice)
        assert "## What failed (2)" in text, choice
        assert "on mac" in text and "on pi" in text and "/c/other" not in text, choice


def test_a_day_the_window_cuts_is_no_run_only_when_none_ran_on_the_whole_day(
        tmp_path: Path) -> None:
    # `--since 2026-11-29T12:00 --until 2026-11-30T06:00` (London) and a run at 07:00 every
    # morning: the page said "no run 2026-11-29 – 2026-11-30 (2 days)", both days on which a
    # run happened, just before or after the window's hours.
    config, ledger = plain_ledger(tmp_path, timezone="Europe/London")
    for day in (29, 30):
        start = datetime(2026, 11, day, 7, tzinfo=UTC)
        save_run(ledger, Run(f"r{day}", "mac", "launchd", start,
                             ended_at=start + timedelta(minutes=1), exit_code=0,
                             counts={"pass": 1}))
    ledger.close()
    text = review_text(config, "--since", "2026-11-29T12:00", "--until", "2026-11-30T06:00")
    assert "no run" not in text.replace("– no run.", "")
    assert "a run every day" in text
    # The runs listed are the window's: neither started in it.
    assert "## Runs (0)" in text
    # A day of the window on which none ran at all is still said.
    text = review_text(config, "--since", "2026-11-28T12:00", "--until", "2026-11-30T06:00")
    assert "**no run 2026-11-28**" in text and "1 day(s) without a run" in text
