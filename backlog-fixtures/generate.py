#!/usr/bin/env python3
"""Regenerate the Backlog.md fixture repositories with the real `backlog` CLI.

    python backlog-fixtures/generate.py [--out DIR] [--only CASE ...]   (default: this folder,
                                                                        every case)

Writes, under DIR:

  demo/backlog/                the demo's tasks TASK-1..7, all made with `backlog task
                               create/edit`; TASK-7 moved to completed/ by `backlog task complete`
  cases/custom-statuses/backlog/   statuses ["Backlog", "Doing", "Verified"] (set in config.yml)
  cases/custom-prefix/backlog/     `backlog init --task-prefix ops` (OPS-1, OPS-1.1) and a
                               task-9 file the CLI's `ops-*.md` glob ignores (a task to us)
  cases/edge/backlog/          CLI tasks plus hand-written files the CLI reads but never writes:
                               CRLF + flow labels, BOM, no final newline, legacy notes without
                               markers, unknown keys / lowercase id / `@` assignee / folded title,
                               a task in completed/, a draft
  cases/broken/backlog/        one good CLI task and the files a reader must report, not crash on:
                               no frontmatter, invalid YAML, scalar labels, no id, duplicate ids
                               (also TASK-10 vs completed TASK-010), an uppercase file name the
                               CLI's glob ignores (a task to us), bytes that are not UTF-8, an
                               empty file

Each repository is built in a temporary git work tree (`git init`, `backlog init --defaults
--integration-mode none`) and its `backlog/` folder is copied here. So that the committed files
do not change on every run, every `created_date`/`updated_date` the CLI stamped (the current UTC
minute) is then replaced with a fixed value: created '2026-11-20 09:00', updated '2026-11-20
09:30' (same quoting and position, so the files are otherwise exactly what the CLI wrote). The
`backlog/.locks/` folder the CLI leaves behind is not copied.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CREATED = "2026-11-20 09:00"
UPDATED = "2026-11-20 09:30"


def find_backlog() -> str:
    for candidate in (shutil.which("backlog"), ROOT / ".npm-prefix/node_modules/.bin/backlog"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    sys.exit("generate.py: the backlog CLI is not installed (make setup)")


class Repo:
    def __init__(self, cli: str, path: Path) -> None:
        self.cli = cli
        self.path = path
        path.mkdir(parents=True)
        self._run(["git", "init", "-q", "-b", "main"])

    def _run(self, argv: list[str]) -> str:
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("BACKLOG_CWD", None)
        proc = subprocess.run(argv, cwd=self.path, capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=120, check=False)
        if proc.returncode != 0:
            sys.exit(f"generate.py: {' '.join(argv)} failed ({proc.returncode}):\n"
                     f"{proc.stdout}{proc.stderr}")
        return proc.stdout

    def backlog(self, *args: str) -> str:
        return self._run([self.cli, *args])

    def create(self, title: str, *args: str) -> str:
        out = self.backlog("task", "create", title, *args, "--plain")
        m = re.search(r"Task ([A-Z]+-\d+(?:\.\d+)*)", out)
        if m is None:
            sys.exit(f"generate.py: no task id in: {out}")
        return m.group(1)

    def write(self, rel: str, data: bytes) -> None:
        path = self.path / "backlog" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def normalize_dates(backlog: Path) -> None:
    for path in sorted(backlog.rglob("*.md")):
        data = path.read_bytes()
        new = re.sub(rb"^(created_date: ')\d{4}-\d{2}-\d{2} \d{2}:\d{2}(')",
                     rb"\g<1>" + CREATED.encode() + rb"\g<2>", data, flags=re.MULTILINE)
        new = re.sub(rb"^(updated_date: ')\d{4}-\d{2}-\d{2} \d{2}:\d{2}(')",
                     rb"\g<1>" + UPDATED.encode() + rb"\g<2>", new, flags=re.MULTILINE)
        if new != data:
            path.write_bytes(new)


def build(cli: str, work: Path, out: Path, name: str, make: Callable[[Repo], None],
          *init_args: str) -> None:
    repo = Repo(cli, work / name.replace("/", "-"))
    repo.backlog("init", "Loop Verify Fixture", "--defaults", "--integration-mode", "none",
                 *init_args)
    make(repo)
    target = out / name / "backlog"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(repo.path / "backlog", target, symlinks=True,
                    ignore=shutil.ignore_patterns(".locks"))
    normalize_dates(target)
    print(f"generated {target.relative_to(out)}")


def demo(repo: Repo) -> None:
    tasks = [
        ("Rotate disk alerts", ["verify:2026-11-01", "infra"], "just verify-disk", "Done"),
        ("Nightly backup restore", ["verify:2026-11-15"], "just verify-backup", "Done"),
        ("Cache warmup", ["verify:2026-11-20"], "just verify-slow", "Done"),
        ("Quarterly capacity review", ["verify:2099-01-01"], "just verify-capacity", "Done"),
        ("Hostile command", ["verify:2026-11-01"], "just verify-disk; touch pwned", "Done"),
        ("Still in progress", ["verify:2026-11-01"], "just verify-disk", "In Progress"),
        ("Log rotation", ["verify:2026-11-10"], "just verify-logs", "Done"),
    ]
    for title, labels, cmd, status in tasks:
        task_id = repo.create(title, "-d", f"{title}: landed by a loop; proof comes later.")
        label_args = [a for label in labels for a in ("--add-label", label)]
        repo.backlog("task", "edit", task_id, "-s", status, *label_args,
                     "--notes", f"verify-cmd: {cmd}")
    repo.backlog("task", "complete", "7")


def custom_statuses(repo: Repo) -> None:
    config = repo.path / "backlog" / "config.yml"
    text = config.read_text()
    text = text.replace('statuses: ["To Do", "In Progress", "Done"]',
                        'statuses: ["Backlog", "Doing", "Verified"]')
    text = text.replace('default_status: "To Do"', 'default_status: "Backlog"')
    config.write_text(text)
    one = repo.create("Rotate disk alerts", "-s", "Verified", "-l", "verify:2026-11-01",
                      "--notes", "verify-cmd: just verify-disk")
    repo.backlog("task", "edit", one, "--append-notes", "checked by hand once")
    two = repo.create("Half done", "-s", "Doing", "-l", "verify:2026-11-01",
                      "--notes", "verify-cmd: just verify-disk")
    repo.backlog("task", "edit", two, "--add-label", "infra")


def custom_prefix(repo: Repo) -> None:
    one = repo.create("Rotate disk alerts", "-l", "verify:2026-11-01")
    repo.backlog("task", "edit", one, "-s", "Done", "--notes", "verify-cmd: just verify-disk")
    two = repo.create("Subtask of one", "-p", one, "-l", "verify:2026-11-01")
    repo.backlog("task", "edit", two, "-s", "Done", "--notes", "- verify-cmd: just verify-sub")
    # the CLI's glob is "ops-*.md": it never shows this task-9 file, but the SPEC's `*.md` does
    repo.write("tasks/task-9 - Other-prefix.md",
               b"---\nid: TASK-9\ntitle: Other prefix\nstatus: Done\nlabels:\n"
               b"  - 'verify:2026-11-01'\n---\n")


def edge(repo: Repo) -> None:
    one = repo.create("Made by the CLI", "-d", "A normal task.", "--ac", "works")
    repo.backlog("task", "edit", one, "-s", "Done", "--add-label", "verify:2026-11-01",
                 "--notes", "verify-cmd: just verify-disk")
    repo.backlog("task", "create", "An idea", "--draft", "--plain")
    repo.write("tasks/task-2 - Crlf-flow.md", (
        "---\nid: TASK-2\ntitle: CRLF with flow labels\nstatus: Done\nassignee: []\n"
        "created_date: '2026-11-01 08:00'\nupdated_date: '2026-11-02 09:00'\n"
        "labels: [verify:2026-11-01, \"infra\", 'a b']\ndependencies: []\n---\n\n"
        "## Description\n\n<!-- SECTION:DESCRIPTION:BEGIN -->\nWindows line endings.\n"
        "<!-- SECTION:DESCRIPTION:END -->\n\n## Implementation Notes\n\n"
        "<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-disk\n"
        "<!-- SECTION:NOTES:END -->\n").replace("\n", "\r\n").encode())
    repo.write("tasks/task-3 - Bom.md", (
        "\ufeff---\nid: TASK-3\ntitle: Starts with a BOM\nstatus: Done\nassignee: []\n"
        "created_date: '2026-11-01 08:00'\nupdated_date: '2026-11-02 09:00'\nlabels:\n"
        "  - 'verify:2026-11-01'\ndependencies: []\n---\n\n## Implementation Notes\n\n"
        "<!-- SECTION:NOTES:BEGIN -->\n- verify-cmd: just verify-disk\n"
        "<!-- SECTION:NOTES:END -->\n").encode())
    repo.write("tasks/task-4 - No-final-newline.md", (
        b"---\nid: TASK-4\ntitle: No newline at the end\nstatus: Done\nassignee: []\n"
        b"created_date: '2026-11-01 08:00'\nlabels: [\"verify:2026-11-02\"]\n"
        b"dependencies: []\n---\n\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n"
        b"verify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->"))
    repo.write("tasks/task-5 - Legacy-notes.md", (
        b"---\nid: TASK-5\ntitle: Legacy notes\nstatus: Done\nassignee: []\n"
        b"created_date: '2026-11-01 08:00'\nupdated_date: 2026-11-02\nlabels:\n"
        b"- verify:2026-11-01\n- docs\ndependencies: []\n---\n\n## Description\n\n"
        b"Written before markers existed.\n\n## Implementation Notes\n\n"
        b"verify-cmd: just verify-disk\n\n## My Custom Section\n\nStays where it is.\n"))
    repo.write("tasks/task-6 - Hand-keys.md", (
        b"---\ntitle: >-\n  A long title folded by a person who likes folded titles in YAML\n"
        b"  frontmatter, for no reason\nid: task-6\nstatus: done  # lower case\n"
        b"assignee: @alice\nowner: someone\nverify_cmd: just verify-disk\n"
        b"created_date: 2026-11-01\nlabels: [verify:2026-11-01]\n---\n"
        b"verify-cmd: just verify-disk\n"))
    repo.write("tasks/task-7 - Zero-padded.md", (
        b"---\nid: TASK-007\ntitle: Zero padded id\nstatus: To Do\nassignee: []\n"
        b"created_date: '2026-11-01 08:00'\nlabels: []\ndependencies: []\n---\n\n\n"))
    repo.write("completed/task-8 - In-completed.md", (
        b"---\nid: TASK-8\ntitle: Completed and due\nstatus: Done\nassignee: []\n"
        b"created_date: '2026-11-01 08:00'\nupdated_date: '2026-11-02 09:00'\nlabels:\n"
        b"  - 'verify:2026-11-01'\ndependencies: []\n---\n\n## Implementation Notes\n\n"
        b"<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-logs\n"
        b"<!-- SECTION:NOTES:END -->\n"))


def broken(repo: Repo) -> None:
    one = repo.create("Good task", "-l", "verify:2026-11-01")
    repo.backlog("task", "edit", one, "-s", "Done", "--notes", "verify-cmd: just verify-disk")
    head = "---\nid: {id}\ntitle: {title}\nstatus: Done\n"
    repo.write("tasks/task-2 - No-frontmatter.md", b"# Just a heading\n\nverify-cmd: x\n")
    repo.write("tasks/task-3 - Invalid-yaml.md",
               (head.format(id="TASK-3", title="Broken: yaml: here") + "---\n").encode())
    repo.write("tasks/task-4 - Scalar-labels.md",
               (head.format(id="TASK-4", title="Scalar") + "labels: verify:2026-11-06\n---\n"
                ).encode())
    repo.write("tasks/task-5 - No-id.md", b"---\ntitle: No id\nstatus: Done\n---\n")
    for suffix in ("A", "B"):
        repo.write(f"tasks/task-6 - Dup-{suffix}.md",
                   (head.format(id="TASK-6", title=f"Dup {suffix}") + "---\n").encode())
    repo.write("tasks/TASK-7 - Upper.md",
               (head.format(id="TASK-7", title="Invisible to the CLI") + "---\n").encode())
    repo.write("tasks/task-8 - Not-utf8.md",
               (head.format(id="TASK-8", title="Caf") .encode() + b"\xe9\n---\n"))
    repo.write("tasks/task-9 - Empty.md", b"")
    repo.write("tasks/task-10 - Ten.md",
               (head.format(id="TASK-10", title="Ten") + "---\n").encode())
    repo.write("completed/task-010 - Padded-ten.md",
               (head.format(id="TASK-010", title="Padded ten") + "---\n").encode())


# Each case: its folder under the output, how it is made, extra `backlog init` arguments.
CASES: dict[str, tuple[Callable[[Repo], None], tuple[str, ...]]] = {
    "demo": (demo, ()),
    "cases/custom-statuses": (custom_statuses, ()),
    "cases/custom-prefix": (custom_prefix, ("--task-prefix", "ops")),
    "cases/edge": (edge, ()),
    "cases/broken": (broken, ()),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--only", action="append", choices=sorted(CASES), metavar="CASE",
                        help="make only this case (repeatable); default: every case")
    args = parser.parse_args()
    cli = find_backlog()
    out: Path = args.out.resolve()
    with tempfile.TemporaryDirectory(prefix="backlog-fixtures-") as tmp:
        work = Path(tmp)
        for name, (make, init_args) in CASES.items():
            if args.only is None or name in args.only:
                build(cli, work, out, name, make, *init_args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
