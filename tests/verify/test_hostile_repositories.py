"""A hostile corpus of `verify-cmd` lines and label/frontmatter tricks: none of them runs anything.

Every case lives in one repository as its own task, and one `loop-verify run` process judges them
all. The repository's justfile holds recipes that leave a marker file when invoked (with and
without parameters), a second justfile outside the repository does the same, and every shell
payload would leave its own marker. Afterwards: no marker anywhere, every hostile task refused
(or, where the label is no `verify:` label at all, ignored), every hostile task file byte-identical,
no commit touching one of them, the remote unchanged. Control tasks in the legitimate forms must
pass, so a rule that refused everything would fail this test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from verify_helpers import TASK, make_verify_repo

TODAY = ("--today", "2026-11-30")
LABEL = "\n  - 'verify:2026-11-01'"
REFUSED, IGNORED = "refused", "ignored"


@dataclass(frozen=True)
class Case:
    why: str
    notes: str = "verify-cmd: just verify-x"
    labels: str = LABEL
    expect: str = REFUSED
    # Replaces the whole file when set (frontmatter tricks); same placeholders as notes.
    raw: str | None = None


# Placeholders: {M} the marker folder, {N} the case's own number, {EVIL} a justfile outside the
# repository, {EVILDIR} its folder. Replaced with str.replace (some lines hold braces).
CMD_CASES = [
    Case("semicolon", "verify-cmd: just verify-x; touch {M}/pwned-{N}"),
    Case("and-and", "verify-cmd: just verify-x && touch {M}/pwned-{N}"),
    Case("or-or", "verify-cmd: just verify-nope || touch {M}/pwned-{N}"),
    Case("pipe", "verify-cmd: just verify-x | tee {M}/pwned-{N}"),
    Case("background", "verify-cmd: just verify-x & touch {M}/pwned-{N}"),
    Case("redirect", "verify-cmd: just verify-x > {M}/pwned-{N}"),
    Case("command substitution in the name", "verify-cmd: just verify-$(touch {M}/pwned-{N})"),
    Case("backticks in the name", "verify-cmd: just verify-`touch {M}/pwned-{N}`"),
    Case("command substitution as an argument",
         "verify-cmd: just verify-x $(touch {M}/pwned-{N})"),
    Case("substitution instead of just", "verify-cmd: $(touch {M}/pwned-{N})"),
    Case("bare carriage return", "verify-cmd: just verify-x\rtouch {M}/pwned-{N}"),
    Case("unicode line separator", "verify-cmd: just verify-x\u2028touch {M}/pwned-{N}"),
    Case("NUL byte", "verify-cmd: just verify-x\x00; touch {M}/pwned-{N}"),
    Case("line continuation", "verify-cmd: just verify-x \\\n  && touch {M}/pwned-{N}"),
    Case("tab inside", "verify-cmd: just verify-x\ttouch {M}/pwned-{N}"),
    Case("sh -c", "verify-cmd: sh -c 'just verify-x; touch {M}/pwned-{N}'"),
    Case("bash -c", 'verify-cmd: bash -c "touch {M}/pwned-{N}"'),
    Case("env", "verify-cmd: env just verify-x"),
    Case("env -S", "verify-cmd: env -S 'touch {M}/pwned-{N}'"),
    Case("absolute just", "verify-cmd: /usr/bin/just verify-x"),
    Case("another program", "verify-cmd: make verify-x"),
    Case("--justfile", "verify-cmd: just --justfile {EVIL} verify-x"),
    Case("-f", "verify-cmd: just -f {EVIL} verify-x"),
    Case("--working-directory", "verify-cmd: just --working-directory {EVILDIR} verify-x"),
    Case("-d", "verify-cmd: just -d {EVILDIR} verify-x"),
    Case("--set", "verify-cmd: just --set arg pwned verify-p"),
    Case("--dotenv-path", "verify-cmd: just --dotenv-path {EVILDIR}/.env verify-x"),
    Case("--shell", "verify-cmd: just --shell sh --shell-arg -c verify-x"),
    Case("option after the recipe", "verify-cmd: just verify-x --dry-run"),
    Case("extra argument", "verify-cmd: just verify-p pwned"),
    Case("second recipe", "verify-cmd: just verify-x verify-y"),
    Case("override assignment", "verify-cmd: just arg=pwned verify-p"),
    Case("slash and dot-dot", "verify-cmd: just verify-x/../verify-y"),
    Case("leading dot-dot", "verify-cmd: just ../verify-x"),
    Case("path to the recipe", "verify-cmd: just ./verify-x"),
    Case("module path", "verify-cmd: just verify-m::verify-x"),
    Case("leading dash in the name", "verify-cmd: just -verify-x"),
    Case("double dash", "verify-cmd: just -- verify-x"),
    Case("dash after verify-", "verify-cmd: just verify--x"),
    Case("underscore after verify-", "verify-cmd: just verify-_x"),
    Case("empty name", "verify-cmd: just verify-"),
    Case("no recipe", "verify-cmd: just"),
    Case("empty command", "verify-cmd:"),
    Case("glob", "verify-cmd: just verify-*"),
    Case("brace expansion", "verify-cmd: just verify-{x,y}"),
    Case("single quotes", "verify-cmd: just 'verify-x'"),
    Case("double quotes", 'verify-cmd: just "verify-x"'),
    Case("inline code", "verify-cmd: `just verify-x`"),
    Case("trailing colon", "verify-cmd: just verify-x:"),
    Case("trailing comment", "verify-cmd: just verify-x # nightly"),
    Case("trailing space", "verify-cmd: just verify-x "),
    Case("trailing semicolon", "verify-cmd: just verify-x;"),
    Case("U+2010 hyphen in the name", "verify-cmd: just verify\u2010x"),
    Case("U+2011 non-breaking hyphen", "verify-cmd: just verify\u2011x"),
    Case("fullwidth just", "verify-cmd: \uff4a\uff55\uff53\uff54 verify-x"),
    Case("fullwidth recipe letters", "verify-cmd: just verify-\uff58"),
    Case("Cyrillic e in the recipe", "verify-cmd: just v\u0435rify-x"),
    Case("Cyrillic e in the key", "v\u0435rify-cmd: just verify-x"),
    Case("zero-width space at the end", "verify-cmd: just verify-x\u200b"),
    Case("zero-width space before the name", "verify-cmd: just \u200bverify-x"),
    Case("no-break space", "verify-cmd:\u00a0just verify-x"),
    Case("tab after the key", "verify-cmd:\tjust verify-x"),
    Case("leading tab", "\tverify-cmd: just verify-x"),
    Case("double space", "verify-cmd: just  verify-x"),
    Case("no space after the key", "verify-cmd:just verify-x"),
    Case("space before the colon", "verify-cmd : just verify-x"),
    Case("upper-case key", "VERIFY-CMD: just verify-x"),
    Case("capitalised key", "Verify-cmd: just verify-x"),
    Case("asterisk list marker", "* verify-cmd: just verify-x"),
    Case("nested list marker", "- - verify-cmd: just verify-x"),
    Case("block quote", "> verify-cmd: just verify-x"),
    Case("inside an HTML comment", "<!-- verify-cmd: just verify-x -->"),
    Case("two verify-cmd lines", "verify-cmd: just verify-ok\nverify-cmd: just verify-x"),
    Case("two identical verify-cmd lines",
         "verify-cmd: just verify-x\n- verify-cmd: just verify-x"),
    Case("no verify-cmd at all", "run just verify-x by hand"),
]

LABEL_CASES = [
    Case("label smuggling a second line", labels='\n  - "verify:2026-11-01\\nrm -rf {M}"'),
    Case("label with an escaped newline at the end", labels='\n  - "verify:2026-11-01\\n"'),
    Case("single-quoted backslash-n", labels="\n  - 'verify:2026-11-01\\n'"),
    Case("multi-line plain label", labels="\n  - verify:2026-11-01\n    touch {M}/pwned-{N}"),
    Case("block scalar label", labels="\n  - |\n    verify:2026-11-01\n    touch {M}/pwned-{N}"),
    Case("two verify labels", labels=LABEL + "\n  - 'verify:2026-11-02'"),
    Case("the same verify label twice", labels=LABEL + LABEL),
    Case("second verify label forging a line of output",
         labels=LABEL + '\n  - "verify:x\\npass     app TASK-1  just verify-ok"'),
    Case("bad calendar date", labels="\n  - 'verify:2026-02-30'"),
    Case("month 13", labels="\n  - 'verify:2026-13-01'"),
    Case("year zero", labels="\n  - 'verify:0000-01-01'"),
    Case("short day", labels="\n  - 'verify:2026-11-1'"),
    Case("no dashes", labels="\n  - 'verify:20261101'"),
    Case("space after the colon", labels="\n  - 'verify: 2026-11-01'"),
    Case("trailing space", labels="\n  - 'verify:2026-11-01 '"),
    Case("date and time", labels="\n  - 'verify:2026-11-01T07:30'"),
    Case("Arabic-Indic digits", labels="\n  - 'verify:\u0662\u0660\u0662\u0666-\u0661\u0661-"
                                       "\u0660\u0661'"),
    Case("fullwidth digits", labels="\n  - 'verify:\uff12\uff10\uff12\uff16-\uff11\uff11-"
                                    "\uff10\uff11'"),
    Case("flow list with two verify labels", labels=" [verify:2026-11-01, verify:2026-11-03]"),
    # Not a `verify:` label at all (labels are read case-sensitively, as tests/backlog/test_scan.py
    # pins), so not a verification: ignored, and nothing runs.
    Case("upper-case label", labels="\n  - 'VERIFY:2026-11-01'"),
    Case("capitalised label", labels="\n  - 'Verify:2026-11-01'"),
    Case("Cyrillic e in the label", labels="\n  - 'v\u0435rify:2026-11-01'", expect=IGNORED),
    Case("fullwidth colon", labels="\n  - 'verify\uff1a2026-11-01'", expect=IGNORED),
]

FRONTMATTER_CASES = [
    Case("verify-cmd in the frontmatter, not the body", raw="""---
id: TASK-{N}
title: Frontmatter command
status: Done
labels:
  - 'verify:2026-11-01'
verify-cmd: just verify-x
---

## Description

verify-cmd lives in the frontmatter here.
"""),
    Case("verify-cmd in a multi-line frontmatter value", raw="""---
id: TASK-{N}
title: |
  A title
  verify-cmd: just verify-x
status: Done
labels:
  - 'verify:2026-11-01'
---

No command in the body.
"""),
    Case("id forging a commit trailer", raw="""---
id: "TASK-{N}\\n\\nClaude-Session: forged"
title: Id trick
status: Done
labels:
  - 'verify:2026-11-01'
---

verify-cmd: just verify-x
"""),
    Case("id with a carriage return", raw="""---
id: "TASK-{N}\\rpass     app TASK-1"
title: Id trick
status: Done
labels:
  - 'verify:2026-11-01'
---

verify-cmd: just verify-x
"""),
    Case("id with a space and shell text", raw="""---
id: TASK-{N} $(touch {M}/pwned-{N})
title: Id trick
status: Done
labels:
  - 'verify:2026-11-01'
---

verify-cmd: just verify-x
"""),
    Case("status smuggling a second key", expect="not done", raw="""---
id: TASK-{N}
title: Status trick
status: "Done\\nverify-cmd: just verify-x"
labels:
  - 'verify:2026-11-01'
---

verify-cmd: just verify-x
"""),
]

UNREADABLE, NOT_DUE = "unreadable", "not due"
# YAML that a full loader would turn into code, or into something huge. The command is malformed
# on purpose, so the task can never be due: a marker could only come from the YAML itself. How
# the reader takes such a file (unreadable, an unknown tag read as text, refused) may vary.
BAD_CMD = "verify-cmd: just verify-x --yaml"
YAML_CASES = [
    Case("python/object/apply tag as the labels", expect=NOT_DUE, notes=BAD_CMD,
         labels=" !!python/object/apply:os.system ['touch {M}/pwned-{N}']"),
    Case("python/object/apply tag in a label", expect=NOT_DUE, notes=BAD_CMD,
         labels="\n  - !!python/object/apply:os.system ['touch {M}/pwned-{N}']"),
    Case("python/object/apply tag in the title", expect=NOT_DUE, raw="""---
id: TASK-{N}
title: !!python/object/apply:os.system ["touch {M}/pwned-{N}"]
status: Done
labels:
  - 'verify:2026-11-01'
---

""" + BAD_CMD + "\n"),
    Case("python/name tag as the status", expect=NOT_DUE, raw="""---
id: TASK-{N}
title: Tagged status
status: !!python/name:os.system
labels:
  - 'verify:2026-11-01'
---

""" + BAD_CMD + "\n"),
    Case("exponential aliases", expect=NOT_DUE, raw="""---
id: TASK-{N}
title: Laughs
status: Done
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
labels: [*f, 'verify:2026-11-01']
---

""" + BAD_CMD + "\n"),
]

CASES = CMD_CASES + LABEL_CASES + FRONTMATTER_CASES + YAML_CASES

# Legitimate forms: these must pass, or the corpus above proves nothing.
CONTROLS = {
    "plain": "verify-cmd: just verify-ok",
    "leading spaces": "    verify-cmd: just verify-ctl2",
    "list marker": "- verify-cmd: just verify-ctl3",
    "indented list marker": "  - verify-cmd: just verify-Ctl_4",
    "among other notes": "Deployed on Friday.\n\n- verify-cmd: just verify-5\n\nSee the runbook.",
}
CONTROL_RECIPES = ["verify-ok", "verify-ctl2", "verify-ctl3", "verify-Ctl_4", "verify-5"]


def justfile(markers: Path, control_log: Path) -> str:
    text = ""
    for name in CONTROL_RECIPES:
        text += f"{name}:\n    echo {name} >> {control_log}\n\n"
    for name in ("verify-x", "verify-y", "x", "verify", "verify-_x", "verify--x"):
        text += f"{name}:\n    touch {markers}/recipe-{name}\n\n"
    text += f"verify-p arg='none':\n    touch {markers}/recipe-verify-p\n\n"
    text += f"verify-q *args:\n    touch {markers}/recipe-verify-q\n\n"
    text += f"set positional-arguments\n\nverify-r +args:\n    touch {markers}/recipe-verify-r\n"
    return text


def fill(text: str, n: int, markers: Path, evil: Path) -> str:
    return (text.replace("{M}", str(markers)).replace("{N}", str(n))
            .replace("{EVILDIR}", str(evil.parent)).replace("{EVIL}", str(evil)))


def test_hostile_corpus_runs_nothing(tmp_path: Path) -> None:
    assert len(CASES) >= 30
    markers = tmp_path / "markers"
    markers.mkdir()
    control_log = tmp_path / "controls.log"
    evil = tmp_path / "evil" / "justfile"
    evil.parent.mkdir()
    evil.write_text(f"verify-x:\n    touch {markers}/evil-verify-x\n\n"
                    f"verify-p arg='none':\n    touch {markers}/evil-verify-p\n")
    (evil.parent / ".env").write_text("PWNED=1\n")
    repo = make_verify_repo(tmp_path / "r", justfile=justfile(markers, control_log))

    (repo.root / "backlog" / "tasks").mkdir()
    hostile: dict[str, tuple[Case, Path]] = {}
    for n, case in enumerate(CASES, start=1):
        if case.raw is not None:
            text = fill(case.raw, n, markers, evil)
        else:
            text = TASK.format(n=n, title=f"Hostile {n}", status="Done",
                               labels=fill(case.labels, n, markers, evil),
                               notes=fill(case.notes, n, markers, evil))
        path = repo.root / "backlog" / "tasks" / f"task-{n} - Hostile-{n}.md"
        path.write_bytes(text.encode("utf-8"))
        hostile[f"TASK-{n}"] = (case, path)
    controls: dict[str, Path] = {}
    for i, (why, notes) in enumerate(CONTROLS.items(), start=len(CASES) + 1):
        controls[f"TASK-{i}"] = repo.add_task(i, title=f"Control {why}", notes=notes)
    # A CRLF task file is legitimate too.
    crlf_n = len(CASES) + len(CONTROLS) + 1
    crlf = repo.add_task(crlf_n, title="Control CRLF", notes="verify-cmd: just verify-ctl2")
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    controls[f"TASK-{crlf_n}"] = crlf
    repo.commit_all("hostile corpus")
    before = {tid: path.read_bytes() for tid, (_, path) in hostile.items()}
    remote_before = repo.remote_refs()
    head_before = repo.head()

    code, listing = repo.run_json("list", *TODAY)
    assert code == 0, listing
    # Keyed by the task file's path: a hostile id may be anything.
    listed = {row["path"]: row for row in listing["tasks"]}
    shown = repo.run("list", *TODAY).stdout.splitlines()
    assert len(shown) == len(listing["tasks"]) + len(listing["unreadable"]), shown
    code, data = repo.run_json("run", *TODAY)
    assert code == 0, data

    # Nothing ran: no recipe marker, no payload marker, in the repository or outside it.
    assert sorted(p.name for p in markers.iterdir()) == []
    assert not list(repo.root.rglob("pwned*")) and not list(tmp_path.rglob("pwned*"))
    # The controls ran once each: the rules are not simply refusing everything.
    assert sorted(control_log.read_text().split()) == sorted(CONTROL_RECIPES + ["verify-ctl2"])

    results = {r["task_path"]: r for r in data["results"]}
    wrong = []
    for tid, (case, path) in hostile.items():
        rel = str(path.relative_to(repo.root))
        row, result = listed.get(rel), results.get(rel)
        if case.expect == IGNORED:
            ok = row is None and result is None
        elif case.expect == NOT_DUE:
            ok = ((row is None and result is None)
                  or (row is not None and row["state"] in (REFUSED, "not done")
                      and (result is None or result["verdict"] == REFUSED)))
        elif case.expect == REFUSED:
            ok = (row is not None and row["state"] == REFUSED and bool(row["reason"])
                  and result is not None and result["verdict"] == REFUSED
                  and result["reason"] == row["reason"] and result["commit_sha"] is None)
        else:
            ok = row is not None and row["state"] == case.expect and result is None
        if not ok:
            wrong.append((tid, case.why, row and row["state"], result and result["verdict"]))
        assert path.read_bytes() == before[tid], (tid, case.why)
    assert wrong == []
    # One line per task, whatever its id, labels or lines hold: nothing can forge output.
    assert all("\n" not in (r["reason"] or "") for r in data["results"])
    assert all("\n" not in (row["reason"] or "") for row in listing["tasks"])
    again = repo.run("run", *TODAY)  # as text now; it reports the refusals again, runs nothing
    assert again.returncode == 0, again.stderr
    *lines, closing = again.stdout.splitlines()
    assert len(lines) == sum(r["verdict"] == REFUSED for r in data["results"]), again.stdout
    assert re.fullmatch(r"\d+ refused in \d+\.\ds", closing), closing
    assert not any(r["verdict"] not in (REFUSED, "pass") for r in data["results"])
    assert {rel for rel, r in results.items() if r["verdict"] == "pass"} == {
        str(p.relative_to(repo.root)) for p in controls.values()}

    # Exactly one commit per control, each touching only its own task file; none for the rest.
    log = repo.git("log", "--format=%x00%s", "--name-only", f"{head_before}..HEAD")
    commits = [[line for line in c.strip().split("\n") if line]
               for c in log.split("\0") if c.strip()]
    assert len(commits) == len(controls)
    touched = {subject.removeprefix("loop-verify: ").split(" ")[0]: files
               for subject, *files in commits}
    assert touched == {tid: [str(p.relative_to(repo.root))] for tid, p in controls.items()}
    assert repo.remote_refs() == remote_before
    assert repo.status() == ""
    # The ledger agrees: every hostile task refused, none with an edit.
    attempts = repo.history()
    refused = {a["task_path"] for a in attempts if a["verdict"] == REFUSED}
    assert refused == {str(p.relative_to(repo.root)) for c, p in hostile.values()
                       if c.expect == REFUSED} | {
        rel for rel, r in results.items() if r["verdict"] == REFUSED}
    assert all(a["edit_state"] == "none" for a in attempts if a["verdict"] == REFUSED)
    assert any(e["event"] == "verify.refused" for e in repo.log_events())
    assert sorted(p.name for p in markers.iterdir()) == []  # the second run ran nothing either
