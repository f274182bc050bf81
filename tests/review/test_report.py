"""`loop-verify review` on a ledger made by real runs: what it shows, in HTML and Markdown, and
what each filter keeps; audit runs recorded by a real closeout."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from inprocess import loop_verify
from project import ROOT
from review_helpers import HOSTILE_OUTPUT, ReviewWorld, plain_ledger, review_text
from verify_helpers import git, make_verify_repo

from jobs.ledger.audits import AuditRun, ensure_audit_tables, insert_audit_run
from jobs.ledger.model import Attempt, Run
from jobs.ledger.runs import save_run


def verdicts(world: ReviewWorld) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for a in world.attempts:
        out.setdefault(str(a["verdict"]), []).append(a)
    return out


def test_the_runs_made_every_verdict_the_review_colours(world: ReviewWorld) -> None:
    seen = verdicts(world)
    assert {"pass", "fail", "timeout", "drift", "error"} <= set(seen)
    # The hook refused one verdict commit: that failure has no commit in the ledger.
    assert any(a["commit_sha"] is None for a in seen["fail"])


def test_html_shows_timeline_failures_audits_and_escapes(world: ReviewWorld) -> None:
    out = world.base / "review.html"
    done = world.review("--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"review written to {out}" in done.stderr
    page = out.read_text(encoding="utf-8")
    # Self-contained: one script (the page's filters, allowed by its hash alone), no external
    # reference of any kind.
    assert page.lower().count("<script") == 1 and "<script>(function () {" in page
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/]+=*'\"", page)
    assert not re.search(r"""(src|href)=["']?(https?:)?//(?!github\.com)""", page)
    assert "default-src 'none'" in page
    # The timeline: a row per repository and task, coloured cells for every verdict.
    timeline = page[page.index('id="timeline"'):page.index('id="failures"')]
    for verdict in ("pass", "fail", "timeout", "drift"):
        assert f'class="v-{verdict}" title=' in timeline, verdict
    # The library task failed and errored on one day: its cell shows the worse, its title both.
    assert re.search(r'class="v-fail" title="1 error, 1 fail"', timeline)
    assert "TASK-4 — Drifting check" in timeline
    # The hostile title and output are text.
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt; disk check" in page
    assert "&lt;script&gt;alert(&#x27;output&#x27;)&lt;/script&gt;" in page
    failures = page[page.index('id="failures"'):page.index('id="audits"')]
    assert "`just verify-hostile` exited 3 after" in failures
    assert "disk usage 97% over 90%" in failures
    assert "timed out after" in failures
    assert "no verdict commit in the ledger (edit restored)" in failures
    hostile = next(a for a in world.attempts
                   if a["recipe"] == "verify-hostile" and a["commit_sha"])
    assert str(hostile["commit_sha"])[:12] in failures
    assert str(hostile["output_path"]) in failures
    # The audit: failing finding, charter, run directory, repositories.
    audits = page[page.index('id="audits"'):]
    assert "Audit runs (1)" in audits
    assert 'class="bad">UNGRANTED<' in audits
    assert "a push the log never saw" in audits
    assert str(world.run_dir) in audits and str(world.audit_repo) in audits
    assert "audit: " in audits and "1 failing" in audits


def test_markdown_has_the_same_content_escaped(world: ReviewWorld) -> None:
    done = world.review("--format", "markdown")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("# loop-jobs incident review")
    # Outside code fences (where Markdown shows everything as text) no tag survives.
    fences = re.findall(r"^(`{3,})text\n(.*?)\n\1$", text, flags=re.S | re.M)
    prose = re.sub(r"^(`{3,})text\n.*?\n\1$", "", text, flags=re.S | re.M)
    assert "<script" not in prose and "<" not in prose.replace("<!--", "")
    assert any(HOSTILE_OUTPUT in body for _fence, body in fences)
    assert r'&lt;script&gt;alert\("title"\)&lt;/script&gt; disk check' in prose
    for verdict in ("1 pass", "fail", "1 timeout", "1 drift", "1 error"):
        assert verdict in prose
    assert "### fail: app TASK-2" in prose and "### fail: lib TASK-1" in prose
    assert "disk usage 97% over 90%" in text
    assert "no verdict commit in the ledger" in prose
    assert "### audit fail" in prose and "**UNGRANTED**" in prose


def test_filters_by_repo_task_verdict_and_window(world: ReviewWorld) -> None:
    def md(*args: str) -> str:
        done = world.review("--format", "markdown", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    by_name = md("--repo", "app")
    assert "| app | TASK-1" in by_name and "| app | TASK-" in by_name
    assert "Library check" not in by_name
    by_path = md("--repo", str(world.lib.root))
    assert "Library check" in by_path and "Passing check" not in by_path
    # The audit run touched neither repository.
    assert "Audit runs (0)" in by_path
    task = md("--repo", "app", "--task", "TASK-3")
    assert "Slow check" in task and "Passing check" not in task
    failed = md("--verdict", "fail")
    assert "Drifting check" not in failed and "Library check" in failed
    assert "### audit fail" in failed  # an audit run's verdict is filtered alike
    timeouts = md("--verdict", "timeout")
    assert "Slow check" in timeouts and "Audit runs (0)" in timeouts
    later = md("--since", "2100-01-01", "--until", "2100-01-31")
    assert "No verify attempts in this window." in later
    assert "No audit run recorded in this window." in later


def test_bad_options_are_one_line_and_exit_2(world: ReviewWorld) -> None:
    for args in (["--since", "yesterday"], ["--verdict", "maybe"],
                 ["--since", "2026-12-02", "--until", "2026-12-01"]):
        done = world.review(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_links_to_github_and_enterprise(world: ReviewWorld, tmp_path: Path) -> None:
    app_head = next(a["commit_sha"] for a in verdicts(world)["pass"] if a["commit_sha"])
    git(world.app.root, "remote", "set-url", "origin", "https://github.com/acme/app.git")
    git(world.lib.root, "remote", "set-url", "origin", "git@ghe.example.com:acme/lib.git")
    try:
        done = world.review("--format", "html", env={"GITHUB_API_URL":
                                                     "https://ghe.example.com/api/v3"})
        assert done.returncode == 0, done.stderr
        # Passes are listed with their commits, linked like a failure's.
        assert f"https://github.com/acme/app/commit/{app_head}" in done.stdout
        hostile = next(a for a in world.attempts
                       if a["recipe"] == "verify-hostile" and a["commit_sha"])
        assert f'href="https://github.com/acme/app/commit/{hostile["commit_sha"]}"' in done.stdout
        plain = world.review("--format", "html")
        # Without GITHUB_API_URL the enterprise host is not GitHub: the sha alone. (The
        # repository keeps the identity its runs recorded, whatever its remote says now.)
        assert 'href="https://ghe.example.com' not in plain.stdout
    finally:
        git(world.app.root, "remote", "set-url", "origin", str(world.app.bare))
        git(world.lib.root, "remote", "set-url", "origin", str(world.lib.bare))


def test_output_elsewhere_is_said_not_dropped(world: ReviewWorld, tmp_path: Path) -> None:
    hostile = next(a for a in world.attempts
                   if a["recipe"] == "verify-hostile" and a["output_path"])
    output = Path(str(hostile["output_path"]))
    kept = tmp_path / "kept.log"
    output.rename(kept)
    try:
        done = world.review("--format", "markdown")
        # The ledger says which machine ran it (this one): the file is gone, not elsewhere.
        assert f"the output file {output} no longer exists on this machine" in done.stdout
    finally:
        kept.rename(output)


def test_machine_column_when_the_ledger_has_one(world: ReviewWorld, tmp_path: Path) -> None:
    # Another change adds `machine` to the ledger; the review reads it when it is there.
    copy = tmp_path / "ledger.db"
    copy.write_bytes(world.ledger.read_bytes())
    with sqlite3.connect(copy) as db:
        if "machine" not in {r[1] for r in db.execute("PRAGMA table_info(attempts)")}:
            db.execute("ALTER TABLE attempts ADD COLUMN machine VARCHAR(255)")
        db.execute("UPDATE attempts SET machine = 'studio-mac'")
        db.execute("UPDATE attempts SET machine = 'far-away' WHERE recipe = 'verify-hostile'")
    config = tmp_path / "config.yaml"
    config.write_text(world.config.read_text().replace(str(world.ledger), str(copy)))
    far = world.review("--config", str(config), "--format", "markdown", "--machine", "far-away")
    assert "### fail: app TASK-2" in far.stdout
    assert r"on another machine \(far-away\)" in far.stdout
    assert "Slow check" not in far.stdout
    near = world.review("--config", str(config), "--format", "markdown", "--machine",
                        "studio-mac")
    assert "Slow check" in near.stdout
    assert "disk check" not in near.stdout  # the hostile task's title: all its rows are far away
    with sqlite3.connect(copy) as db:
        names = {r[1] for r in db.execute("PRAGMA index_list(attempts)")}
    assert {"ix_attempts_task_id", "ix_attempts_verdict", "ix_attempts_machine"} <= names


def test_filters_in_html_too(world: ReviewWorld) -> None:
    done = world.review("--repo", "app", "--task", "TASK-3")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    timeline = page[page.index('id="timeline"'):page.index('id="failures"')]
    assert "TASK-3 — Slow check" in timeline and "Passing check" not in timeline
    assert "Library check" not in page
    assert "repository <code>app</code> · task <code>TASK-3</code>" in page
    failures = page[page.index('id="failures"'):page.index('id="audits"')]
    # Today's timeout, and one two mornings ago (the earlier mornings' attempts).
    assert failures.count('<article class="failure') == 2 and "timed out after" in failures
    by_machine = world.review("--machine", "no-such-machine")
    assert "No verify attempts in this window." in by_machine.stdout
    assert "No audit run recorded in this window." in by_machine.stdout


def test_a_ledger_that_cannot_be_opened_is_one_line_and_exit_3(tmp_path: Path) -> None:
    from inprocess import loop_verify

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the ledger's folder should be\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"ledger: sqlite:///{blocker / 'ledger.db'}\nstate_dir: {tmp_path / 's'}\n")
    done = loop_verify(["review", "--config", str(config), "--out", str(tmp_path / "r.html")])
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("loop-verify: cannot open the ledger ")
    assert "Traceback" not in done.stderr and not (tmp_path / "r.html").exists()


def test_markdown_answers_the_morning_questions(world: ReviewWorld) -> None:
    from datetime import timedelta

    from review_helpers import NO_RUN_DAYS_AGO, SECOND

    done = world.review("--format", "markdown")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    missing = (world.now - timedelta(days=NO_RUN_DAYS_AGO)).date().isoformat()
    since = (world.now - timedelta(days=2)).date().isoformat()
    # Did it run: the runs, each day without one in bold, counted in the summary.
    assert "- did it run: " in text and "**1 day(s) without a run**" in text
    assert f"| {missing} | **no run {missing}** |" in text
    assert f"| exit 1 | {SECOND} | manual |" in text
    # What failed, since when: the task's own summary in a fence.
    assert f"still failing since {since} \\(3 mornings\\)" in text
    assert "Summary, as the task carries it:" in text
    # Why not checked: every kind with its reason.
    for verdict, words in (("refused", "malformed verify-cmd"), ("skipped", "work tree not clean"),
                           ("locked", "another loop-verify holds"), ("interrupted", "stop"),
                           ("error", "cannot start just")):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"| {verdict} |")
                    and words in ln)
        assert line.count("|") == 6, line
    # One group for both clones of app; the passes as a list per task.
    assert "| app-clone |" not in text and "app-clone TASK" not in text
    assert "## Passes (" in text and "- app TASK-0 — Clone-only check: 1 pass(es)" in text


def test_a_run_killed_mid_run_shows_what_it_did_before_it_died(tmp_path: Path) -> None:
    # A run killed by SIGKILL (the OOM killer) never writes its end: its row has no counts, and
    # the review said "nothing due" for a morning that had failed a task before it died.
    hold = tmp_path / "hold"
    os.mkfifo(hold)
    justfile = f"verify-bad:\n    exit 1\n\nverify-held:\n    cat {hold} > /dev/null\n"
    repo = make_verify_repo(tmp_path / "r", justfile=justfile)
    repo.add_task(1, notes="verify-cmd: just verify-bad")
    repo.add_task(2, notes="verify-cmd: just verify-held")
    repo.commit_all("tasks")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "jobs.main", "run", "--config",
                             str(repo.config_path), "--today", "2026-11-30"],
                            cwd=repo.root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        # Opening the FIFO returns once the second recipe reads it: the first one is recorded.
        writer = os.open(hold, os.O_WRONLY)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        os.close(writer)  # the recipe, which outlives the run, ends too
    finally:
        proc.kill()

    for fmt, unfinished in (("markdown", "| not finished |"), ("html", ">not finished<")):
        out = tmp_path / f"review.{fmt}"
        done = repo.run("review", "--config", str(repo.config_path), "--format", fmt,
                        "--out", str(out))
        assert done.returncode == 0, done.stderr
        [row] = [line for line in out.read_text(encoding="utf-8").split("<tr")
                 if unfinished in line] if fmt == "html" else \
            [line for line in out.read_text(encoding="utf-8").splitlines() if unfinished in line]
        assert "nothing due" not in row and "1 fail" in row, row


def test_a_run_that_died_before_any_verdict_is_not_nothing_due(tmp_path: Path) -> None:
    # Killed before its first attempt was recorded, a run has no counts; "nothing due" would
    # tell the owner that morning was fine.
    config, ledger = plain_ledger(tmp_path)
    start = datetime(2026, 11, 29, 7, tzinfo=UTC)
    save_run(ledger, Run("died", "mac", "launchd", start))
    save_run(ledger, Run("quiet", "mac", "launchd", start + timedelta(days=1),
                         ended_at=start + timedelta(days=1, seconds=2), exit_code=0))
    ledger.close()
    text = review_text(config, "--since", "2026-11-29", "--until", "2026-11-30")
    [died] = [line for line in text.splitlines() if "| not finished |" in line]
    assert "nothing recorded" in died and "nothing due" not in died
    [quiet] = [line for line in text.splitlines() if line.startswith("| 2026-11-30")]
    assert "nothing due" in quiet
    page = tmp_path / "review.html"
    done = loop_verify(["review", "--config", str(config), "--since", "2026-11-29",
                        "--until", "2026-11-30", "--out", str(page)])
    assert done.returncode == 0, done.stderr
    [row] = [r for r in page.read_text(encoding="utf-8").split("<tr") if ">not finished<" in r]
    assert "nothing recorded" in row and "nothing due" not in row


def test_the_page_can_filter_to_a_failing_audit_when_no_attempt_failed(tmp_path: Path) -> None:
    # Every verify attempt passed and an audit failed: the verdict list offered "pass" alone,
    # so the failing audit could not be the one thing shown.
    config, ledger = plain_ledger(tmp_path)
    start = datetime(2026, 11, 29, 7, tzinfo=UTC)
    ledger.save(Attempt("r", start, "/srv/app", "pass", task_id="TASK-1", machine="here"))
    ensure_audit_tables(ledger.engine)
    insert_audit_run(ledger.engine, AuditRun(start, "closeout", "fail", 1, {"/srv/app": {}},
                                             machine="here"))
    ledger.close()
    page = tmp_path / "review.html"
    done = loop_verify(["review", "--config", str(config), "--since", "2026-11-29",
                        "--until", "2026-11-29", "--out", str(page)])
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    verdicts = html[html.index('id="filter-verdict"'):html.index('id="filter-repo"')]
    assert re.findall(r'<option value="(\w*)">', verdicts) == ["", "fail", "pass"]
    assert 'class="audit fail" data-repo="g0" data-verdicts="fail"' in html
