"""`make demo`: loop-verify and loop-pi-audit on the bundled demo backlog, in a scratch folder.

It copies backlog-fixtures/demo into a fresh git repository with a bare remote and a justfile
whose recipes pass, fail and hang, runs the real commands and shows what they did. It exits
non-zero only when something did not happen the way the demo says it should.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "backlog-fixtures" / "demo" / "backlog"
# LOOP_JOBS_DEMO_DIR: where a test runs the demo (tests/test_demo.py), beside a user's own.
SCRATCH = Path(os.environ.get("LOOP_JOBS_DEMO_DIR") or ROOT / "demo-run")
BIN = Path(sys.executable).parent
# Colour only on a terminal (and not under NO_COLOR): piped or logged, the output stays plain.
COLOUR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
STYLES = {"bold": "1", "cyan": "36", "dim": "2", "red": "31"}


def say(text: str = "", style: str | None = None) -> None:
    if style and COLOUR:
        text = f"\033[{STYLES[style]}m{text}\033[0m"
    print(text, flush=True)

JUSTFILE = """\
# Recipes the demo tasks name: two pass, one fails, one hangs past the timeout.
verify-disk:
    @echo "disk usage 61% (limit 90%)"

verify-logs:
    @echo "log rotation ran at 03:00"

verify-backup:
    @echo "restoring last night's backup..."
    @echo "checksum mismatch in block 4711" >&2
    @exit 2

verify-slow:
    @echo "warming the cache (this never finishes)"
    sleep 600
"""

CHARTER = """\
# Charter: demo/app loop1
session: demo-session
authority: release-please demo/app
"""


def show(title: str) -> None:
    say()
    say(f"── {title} " + "─" * max(0, 76 - len(title)), "bold")


def run(argv: list[str], cwd: Path, *, expect: set[int] | None = None,
        env: dict[str, str] | None = None, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    shown = " ".join(a if " " not in a else repr(a) for a in argv)
    say(f"$ {shown}", "cyan")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})
    if not quiet:
        for stream in (proc.stdout, proc.stderr):
            if stream.strip():
                say(stream.rstrip())
    say(f"(exit {proc.returncode})", "dim")
    if expect is not None and proc.returncode not in expect:
        say(f"demo: expected exit {sorted(expect)}, got {proc.returncode}", "red")
        raise SystemExit(1)
    return proc


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def main() -> int:
    if not FIXTURE.is_dir():
        say(f"demo: {FIXTURE} is missing", "red")
        return 1
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir()
    # The bare remote is named after the app: the review names the repository by it.
    bare, app, state, run_dir = (SCRATCH / "app.git", SCRATCH / "app", SCRATCH / "state",
                                 SCRATCH / "run")
    env = {"GIT_AUTHOR_NAME": "Demo Agent", "GIT_AUTHOR_EMAIL": "agent@demo.invalid",
           "GIT_COMMITTER_NAME": "Demo Agent", "GIT_COMMITTER_EMAIL": "agent@demo.invalid"}
    os.environ.update(env)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(app)], check=True)
    git(app, "remote", "add", "origin", str(bare))
    shutil.copytree(FIXTURE, app / "backlog")
    (app / "justfile").write_text(JUSTFILE)
    (app / "README.md").write_text("# demo app\n")
    git(app, "add", "-A")
    git(app, "commit", "-q", "-m", "demo: app with a backlog of verifications")
    git(app, "push", "-q", "origin", "main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    config = SCRATCH / "config.yaml"
    # `ledger:` set, so loop-pi-audit records its closeouts where loop-verify records verdicts.
    config.write_text(f"repos:\n  - path: {app}\ntimeout: 3s\nkill_grace: 1s\n"
                      f"timezone: UTC\nstate_dir: {state}\n"
                      f"ledger: sqlite:///{state / 'ledger.db'}\n")
    charter = SCRATCH / "charter.md"
    charter.write_text(CHARTER)
    verify = [str(BIN / "loop-verify")]
    audit = [str(BIN / "loop-pi-audit")]
    cfg = ["--config", str(config)]
    say(f"demo repository: {app}\nbare remote:     {bare}\nconfig:          {config}")

    show("loop-pi-audit: arm the run (snapshot every ref, tag and release; log pushes)")
    # --config everywhere: begin seals the arm, and the hook each push, in the demo's own ledger,
    # the one closeout checks them against (never the default one under ~/.local/state).
    run([*audit, "begin", str(app), "--charter", str(charter), "--run-dir", str(run_dir), *cfg],
        app, expect={0})
    run([*audit, "hook", "install", str(app), "--run-dir", str(run_dir), *cfg], app, expect={0})

    show("loop-verify list: every task with a verify: label")
    run([*verify, "list", *cfg, "--today", "2026-11-30"], app, expect={0})

    show("loop-verify run: two pass, one fails, one hangs and is killed after 3s")
    run([*verify, "run", *cfg, "--today", "2026-11-30"], app, expect={1})

    show("what changed: one commit per verdict, backlog/ only, nothing pushed")
    say(git(app, "log", "--stat", "--format=%h %s", "-n", "5").rstrip())
    failed = next((app / "backlog" / "tasks").glob("task-2 *.md"))
    say()
    say(f"{failed.relative_to(app)} after the failure:", "bold")
    say(failed.read_text().rstrip())
    if shutil.which("backlog"):
        say("\nThe Backlog.md CLI reads the verdicts back:")
        run(["backlog", "task", "list", "--plain"], app, expect={0},
            env={"NO_COLOR": "1"})
    ahead = git(app, "rev-list", "--count", "origin/main..main").strip()
    say(f"\ncommits not on the remote: {ahead} (loop-verify never pushes)")

    show("loop-verify history: the ledger")
    run([*verify, "history", *cfg], app, expect={0})

    show("the loop pushes its work through git (the pre-push hook logs it)")
    run(["git", "push", "origin", "main"], app, expect={0})
    run([*audit, "closeout", "--run-dir", str(run_dir), "--charter", str(charter), *cfg], app,
        expect={0})

    show("someone pushes around the hook: the audit cannot explain it and fails")
    (app / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
    git(app, "add", "deploy.sh")
    git(app, "commit", "-q", "-m", "sneak in a deploy script")
    run(["git", "push", "--no-verify", "origin", "main"], app, expect={0})
    run([*audit, "closeout", "--run-dir", str(run_dir), "--charter", str(charter), *cfg], app,
        expect={1})

    show("loop-verify review: one report of these runs and audits")
    review = SCRATCH / "review.html"
    run([*verify, "review", *cfg, "--out", str(review)], app, expect={0})
    run([*verify, "review", *cfg, "--out", str(SCRATCH / "review.md"), "--format", "markdown"],
        app, expect={0})
    page = review.read_text(encoding="utf-8")
    if "verify-backup" not in page or "UNGRANTED" not in page:
        say("demo: the review misses the failed verification or the audit", "red")
        return 1

    show("done")
    say(f"The review of these runs: {review} (open it in a browser; no network "
        f"needed)\n            and as Markdown: {SCRATCH / 'review.md'}")
    say(f"Everything is in {SCRATCH}; run `make demo` again to start afresh.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
