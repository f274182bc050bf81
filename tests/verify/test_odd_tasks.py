"""Issue 9 item 2: one odd but valid task file is that task's problem alone, never the run's.

Real repositories, real `just`, `loop-verify run` as a real process: frontmatters with quoted keys
are read and edited losslessly, a complex key or a flow mapping is read and refused as that task's
`error` (file untouched), and the other tasks are verified. Anything unexpected while handling one
task is that task's `error`; anything unexpected outside a task is one line, a log event, exit 3.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from verify_helpers import make_verify_repo

from jobs import main as cli

TODAY = ("--today", "2026-11-30")
BODY = "\n## Notes\n\nverify-cmd: just verify-ok\n"
HEAD = "---\nid: TASK-{n}\ntitle: Odd {n}\nstatus: Done\nupdated_date: '2026-11-01 08:00'\n"
ODD = {n: text.replace("{n}", str(n)) for n, text in {
    1: HEAD + "'labels':\n  - 'verify:2026-11-01'\n  - keep\n---\n" + BODY,
    2: HEAD + '"labels": [keep, "verify:2026-11-01"]\n---\n' + BODY,
    3: HEAD + "? labels\n: ['verify:2026-11-01']\n---\n" + BODY,
    4: "---\n{id: TASK-4, title: Odd 4, status: Done, labels: ['verify:2026-11-01']}\n---\n" + BODY,
    5: HEAD + "labels: &l ['verify:2026-11-01']\nalso: *l\n---\n" + BODY,
    6: HEAD.replace("updated_date: '2026-11-01 08:00'\n", "updated_date:\n")
    + "labels: ['verify:2026-11-01']\n---\n" + BODY,
}.items()}


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_odd_but_valid_frontmatter_is_read_and_never_stops_the_run(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[7])
    paths = {}
    for n, text in ODD.items():
        paths[n] = repo.root / "backlog" / "tasks" / f"task-{n} - Odd-{n}.md"
        paths[n].write_text(text)
    repo.commit_all("odd tasks")

    listed = repo.run("list", *TODAY, "--json")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    states = {t["id"]: t["state"] for t in json.loads(listed.stdout)["tasks"]}
    assert states == {f"TASK-{n}": "due" for n in [*ODD, 7]}

    proc = repo.run("run", *TODAY)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 3, proc.stdout + proc.stderr
    verdicts = {a["task_id"]: a for a in repo.history()}
    # Quoted keys and a bare `updated_date:` are edited, and only where the verdict must.
    for n in (1, 2, 6, 7):
        assert verdicts[f"TASK-{n}"]["verdict"] == "pass", verdicts[f"TASK-{n}"]
    after = paths[1].read_text()
    assert changed_lines(ODD[1], after) == [
        "-updated_date: '2026-11-01 08:00'", "+" + after.splitlines()[4],
        "-  - 'verify:2026-11-01'"]
    assert after.splitlines()[4].startswith("updated_date: '20")
    assert paths[2].read_text().splitlines()[5] == '"labels": [keep]'
    assert "updated_date: '" in paths[6].read_text().splitlines()[4]
    # A complex key, a flow mapping and aliases are read but not edited: that task's error.
    for n in (3, 4, 5):
        att = verdicts[f"TASK-{n}"]
        assert att["verdict"] == "error", att
        assert "cannot edit the task file safely" in att["reason"], att
        assert paths[n].read_text() == ODD[n]
    assert repo.status() == ""


def test_an_unexpected_fault_in_one_task_is_that_tasks_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    from jobs.verify.rules import transition as verdicts

    real = verdicts.apply

    def faulty(data: bytes, *args: object, **kw: object) -> bytes:
        if b"id: TASK-1\n" in data:
            raise ZeroDivisionError("injected fault")
        return real(data, *args, **kw)  # type: ignore[arg-type]

    # Fault injection: no real input is known to make the edit raise this any more.
    monkeypatch.setattr(verdicts, "apply", faulty)
    rc = cli.main(["run", "--config", str(repo.config_path), *TODAY])
    assert rc == 3
    verdicts_seen = {a["task_id"]: a for a in repo.history()}
    assert verdicts_seen["TASK-1"]["verdict"] == "error"
    assert "ZeroDivisionError" in verdicts_seen["TASK-1"]["reason"]
    assert verdicts_seen["TASK-2"]["verdict"] == "pass"
    events = [e for e in repo.log_events() if e.get("task") == "TASK-1"]
    assert any(e.get("exc_type") == "ZeroDivisionError" for e in events), events


def test_an_unexpected_fault_outside_a_task_is_one_line_and_exit_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1])
    from jobs.verify import run as verify

    def broken(*args: object, **kw: object) -> None:
        raise KeyError("injected")

    monkeypatch.setattr(verify, "run_once", broken)
    rc = cli.main(["run", "--config", str(repo.config_path), *TODAY])
    err = capsys.readouterr().err
    assert rc == 3
    assert err.count("\n") == 1 and "KeyError" in err and "Traceback" not in err, err
    assert any(e.get("event") == "cli.unexpected_error" and e.get("exc_type") == "KeyError"
               for e in repo.log_events())
