"""The failure summary goes exactly where `backlog task edit --append-notes` puts it (the real,
pinned CLI), and a fenced code block is text (SPEC, "Verdicts and what they write").

Two comparisons with the CLI:

* layouts built for each case, in files shaped as the CLI writes them: our edit and the CLI's
  are byte for byte the same;
* real task files from the corpora (../shared/corpora/backlog, skipped when absent): the CLI
  rewrites a hand-written body when it edits notes (docs/verify.md names how), so the check is
  that it reads our file exactly as its own: the CLI appending one more note to each gives the
  same bytes. Where its edit only inserted lines, ours must be byte for byte its edit too.
"""

from __future__ import annotations

import difflib
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from backlog_helpers import CONFIG_YML, backlog_cli, make_backlog, run_cli
from project import CORPORA

from jobs.backlog.edit import append_notes, set_updated_date
from jobs.backlog.frontmatter import FRONTMATTER_RE

SUMMARY = ("verify-failed 2026-11-30T07:30:12Z: `just verify-disk` exited 1 after 12.4s "
           "(timeout 30m)\nlast lines of output:\n    disk usage 97% > 90%\n"
           "full output: /state/runs/x/app-TASK-1.log")
LATER = "a later note, appended by the CLI to both files"

HEAD = """---
id: TASK-{n}
title: Layout {n}
status: Done
assignee: []
created_date: '2026-11-01 08:00'
updated_date: '2026-11-01 08:00'
labels:
  - 'verify:2026-11-01'
dependencies: []
---

"""
DESCRIPTION = ("## Description\n\n<!-- SECTION:DESCRIPTION:BEGIN -->\n{text}\n"
               "<!-- SECTION:DESCRIPTION:END -->\n")
AC = "## Acceptance Criteria\n<!-- AC:BEGIN -->\n- [ ] #1 It works\n<!-- AC:END -->\n"
NOTES = ("## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-disk\n"
         "<!-- SECTION:NOTES:END -->\n")
FENCED_NOTES = ("The notes look like this:\n\n```markdown\n## Implementation Notes\n\n"
                "<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-example\n"
                "<!-- SECTION:NOTES:END -->\n```")
FENCED_PLAN = ("A plan is written so:\n\n```\n## Implementation Plan\n"
               "<!-- SECTION:PLAN:BEGIN -->\n1. Do it\n<!-- SECTION:PLAN:END -->\n```")

# Bodies the CLI and loop-verify must edit to the same bytes.
LAYOUTS = {
    # The Description shows the notes markers in a code block: the summary goes into the real
    # notes (the CLI: the Description's markers hide what it shows).
    "description shows notes markers": DESCRIPTION.format(text=FENCED_NOTES) + "\n" + AC + "\n"
    + NOTES,
    # ... and with no notes yet, a new section after the Acceptance Criteria.
    "description shows notes markers, no notes": DESCRIPTION.format(text=FENCED_NOTES) + "\n"
    + AC,
    # A fenced Plan example is not a plan: no notes section is written into it.
    "description shows a plan": DESCRIPTION.format(text=FENCED_PLAN) + "\n" + AC,
    # Notes markers under `## Notes` (a real corpus file does this): the CLI makes a new section.
    "markers under ## Notes": DESCRIPTION.format(text="d") + "\n" + AC + "\n## Notes\n\n"
    "<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->\n",
    # ... under no heading at all.
    "markers under no heading": DESCRIPTION.format(text="d") + "\n<!-- SECTION:NOTES:BEGIN -->\n"
    "verify-cmd: just verify-disk\n<!-- SECTION:NOTES:END -->\n",
    # ... under another section's heading, before a Final Summary.
    "markers under a custom heading": DESCRIPTION.format(text="d") + "\n## Known pitfalls\n\n"
    "<!-- SECTION:NOTES:BEGIN -->\n- careful\n<!-- SECTION:NOTES:END -->\n\n## Final Summary\n\n"
    "<!-- SECTION:FINAL_SUMMARY:BEGIN -->\nShipped.\n<!-- SECTION:FINAL_SUMMARY:END -->\n",
    # A fenced code block in the notes themselves: the summary goes after it.
    "code in the notes": DESCRIPTION.format(text="d") + "\n## Implementation Notes\n\n"
    "<!-- SECTION:NOTES:BEGIN -->\nverify-cmd: just verify-disk\n\n```sh\n## not a heading\n"
    "```\n<!-- SECTION:NOTES:END -->\n",
    # Empty notes markers: the summary goes between them.
    "empty notes": DESCRIPTION.format(text="d") + "\n## Implementation Notes\n\n"
    "<!-- SECTION:NOTES:BEGIN -->\n<!-- SECTION:NOTES:END -->\n",
    # No notes: after the Plan, before Comments, before the Final Summary.
    "plan then comments": DESCRIPTION.format(text="d") + "\n" + AC + "\n## Implementation Plan\n"
    "\n<!-- SECTION:PLAN:BEGIN -->\n1. a\n<!-- SECTION:PLAN:END -->\n\n## Comments\n\n"
    "<!-- COMMENTS:BEGIN -->\nauthor: bot\ncreated: 2026-11-01 08:00\n---\nok\n---\n"
    "<!-- COMMENTS:END -->\n",
    "final summary only": DESCRIPTION.format(text="d") + "\n## Final Summary\n\n"
    "<!-- SECTION:FINAL_SUMMARY:BEGIN -->\nShipped.\n<!-- SECTION:FINAL_SUMMARY:END -->\n",
}


def _updated(data: bytes) -> datetime:
    m = re.search(rb"^updated_date: '(\d{4}-\d{2}-\d{2} \d{2}:\d{2})'", data, re.MULTILINE)
    assert m is not None
    return datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _edit_all(jobs: list[tuple[Path, str, tuple[str, ...]]]) -> None:
    """`backlog task edit <id> --append-notes ...` for each (repo, id, notes); a few at once."""
    def one(job: tuple[Path, str, tuple[str, ...]]) -> None:
        root, task_id, notes = job
        args = ["task", "edit", task_id]
        for note in notes:
            args += ["--append-notes", note]
        run_cli(root, args)

    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(one, jobs))


# Bodies the CLI rewrites when it edits their notes (it wraps sections written without markers
# in markers): it must read our edit exactly as its own.
REWRITTEN = {
    # Legacy notes (no markers) run to the next heading the CLI knows, over a custom one.
    "legacy notes and a custom section": "## Description\n\nOld style.\n\n"
    "## Implementation Notes\n\nverify-cmd: just verify-disk\n\n## Test Gaps\n\nnone\n",
    # A legacy Plan swallows a custom section too: the notes come after both.
    "legacy plan and a custom section": "## Description\n\nOld style.\n\n"
    "## Implementation Plan\n\n1. a\n\n## Risks\n\nnone\n\n## Final Summary\n\nDone.\n",
    # A CRLF file: the CLI writes its frontmatter with LF (and its body's last line).
    "crlf, description shows notes markers": (DESCRIPTION.format(text=FENCED_NOTES) + "\n" + AC
                                              + "\n" + NOTES).replace("\n", "\r\n"),
}


def test_each_layout_gets_the_summary_where_the_cli_puts_it(tmp_path: Path) -> None:
    backlog_cli()
    files = {f"tasks/task-{n} - Layout-{n}.md":
             (HEAD.format(n=n).replace("\n", "\r\n") if "\r\n" in body else HEAD.format(n=n))
             + body for n, body in enumerate(LAYOUTS.values(), start=1)}
    root = make_backlog(tmp_path / "repo", files)
    originals = {rel: (root / "backlog" / rel).read_bytes() for rel in files}
    _edit_all([(root, f"TASK-{n}", (SUMMARY,)) for n in range(1, len(files) + 1)])
    for (name, _body), rel in zip(LAYOUTS.items(), files, strict=True):
        cli = (root / "backlog" / rel).read_bytes()
        ours = set_updated_date(append_notes(originals[rel], SUMMARY), _updated(cli))
        assert ours.decode() == cli.decode(), name


# Where the SPEC (fences are text) and the CLI part: the CLI takes a heading or marker shown in
# a fenced code block for structure, and puts the summary into the code block (docs/verify.md).
NAMED = {
    "a code block in a custom section shows a whole notes section": (
        DESCRIPTION.format(text="d") + "\n" + AC + "\n## Example\n\n" + FENCED_NOTES + "\n",
        AC + "\n" + "## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->\n{summary}\n"
        "<!-- SECTION:NOTES:END -->\n\n## Example\n"),
    "a code block in the notes shows the END marker": (
        DESCRIPTION.format(text="d") + "\n## Implementation Notes\n\n<!-- SECTION:NOTES:BEGIN -->"
        "\nverify-cmd: just verify-disk\n\n```\n<!-- SECTION:NOTES:END -->\n```\n"
        "<!-- SECTION:NOTES:END -->\n",
        "```\n<!-- SECTION:NOTES:END -->\n```\n\n{summary}\n<!-- SECTION:NOTES:END -->\n"),
}


@pytest.mark.parametrize("name", list(NAMED))
def test_a_code_block_is_text_where_the_cli_would_take_it_for_structure(name: str) -> None:
    body, expected = NAMED[name]
    out = append_notes((HEAD.format(n=1) + body).encode(), SUMMARY).decode()
    assert expected.format(summary=SUMMARY) in out
    assert out.count(SUMMARY) == 1


# --- the corpora -------------------------------------------------------------------------------

_MARKER = re.compile(r"<!-- SECTION:NOTES:BEGIN -->")


def _interesting(text: str) -> str | None:
    """Why this corpus file is worth comparing: its notes are placed by a rule of their own."""
    if FRONTMATTER_RE.match(text) is None:
        return None
    body = FRONTMATTER_RE.sub("", text, count=1)
    for family in ("AC", "DOD"):
        if body.count(f"<!-- {family}:BEGIN -->") != body.count(f"<!-- {family}:END -->"):
            return None  # the CLI refuses to edit a file whose checklist markers do not pair
    fenced = re.findall(r"^[ \t]*(?:```|~~~).*?^[ \t]*(?:```|~~~)", body, re.M | re.S)
    if any(re.search(r"^## |<!--|verify-cmd", f, re.M) for f in fenced):
        return "structure shown in a code block"
    if _MARKER.search(body) and not re.search(
            r"## Implementation Notes\s*\n<!-- SECTION:NOTES:BEGIN -->", body, re.I):
        return "notes markers not under the notes heading"
    if re.search(r"^## Implementation Notes\s*$", body, re.M) and not _MARKER.search(body):
        return "notes without markers"
    if not re.search(r"^## Implementation Notes", body, re.M):
        return "no notes yet"
    return None


def _corpus_sample(limit: int = 12) -> list[tuple[Path, str]]:
    picked: dict[str, list[tuple[Path, str]]] = {}
    for repo in sorted(CORPORA.iterdir()):
        for path in sorted((repo / "backlog" / "tasks").glob("*.md")):
            try:
                why = _interesting(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            if why is not None:
                picked.setdefault(why, []).append((path, why))
    # Every file of the rarest kinds, then the others in turn, up to the limit.
    out: list[tuple[Path, str]] = []
    pools = sorted(picked.values(), key=len)
    while len(out) < limit and any(pools):
        for pool in pools:
            if pool and len(out) < limit:
                out.append(pool.pop(0))
    return out


def _split(data: bytes) -> tuple[str, str]:
    text = data.decode("utf-8")
    m = FRONTMATTER_RE.match(text)
    assert m is not None
    fm = re.sub(r"^updated_date: .*$", "updated_date: …", text[:m.end()], flags=re.M)
    return fm, text[m.end():]


def _reads_alike(tmp_path: Path, cases: list[tuple[str, Path | None, bytes]]) -> list[str]:
    """For each (name, config.yml or None, task file): the CLI appends SUMMARY and LATER to the
    file, and LATER alone to our edit of it; the two results must be the same (but for
    updated_date). Where the CLI's edit only inserted lines into the body, ours must be its edit
    byte for byte. Returns what differs."""
    jobs, pairs = [], []
    for n, (_name, config, original) in enumerate(cases):
        text = original.decode("utf-8")
        m = re.search(r"^id:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", text, re.M)
        assert m is not None
        roots = []
        for side, data in (("theirs", original), ("ours", append_notes(original, SUMMARY))):
            root = make_backlog(tmp_path / f"{n}-{side}", {"tasks/task-x - Case.md": data},
                                config.read_text() if config else CONFIG_YML)
            roots.append(root)
        jobs += [(roots[0], m.group(1), (SUMMARY, LATER)), (roots[1], m.group(1), (LATER,))]
        pairs.append(roots)
    _edit_all(jobs)
    differ = []
    for (name, _config, original), (theirs_root, ours_root) in zip(cases, pairs, strict=True):
        theirs = (theirs_root / "backlog" / "tasks" / "task-x - Case.md").read_bytes()
        ours = (ours_root / "backlog" / "tasks" / "task-x - Case.md").read_bytes()
        if _split(theirs) != _split(ours):
            differ.append(f"{name}:\n" + "\n".join(difflib.unified_diff(
                _split(ours)[1].splitlines(), _split(theirs)[1].splitlines(), lineterm="")))
            continue
        # (A CRLF body is compared as LF: the CLI writes its last line with LF.)
        cli_once = _split(theirs)[1].replace("\r\n", "\n").replace("\n\n" + LATER, "", 1)
        old = _split(original)[1].replace("\r\n", "\n").splitlines()
        ops = difflib.SequenceMatcher(None, old, cli_once.splitlines(), autojunk=False)
        changes = [op for op, *_ in ops.get_opcodes() if op != "equal"]
        if changes == ["insert"]:
            mine = _split(append_notes(original, SUMMARY))[1].replace("\r\n", "\n")
            if mine != cli_once:
                differ.append(f"{name}: the CLI only inserted lines, but elsewhere")
    return differ


def test_the_cli_reads_bodies_it_rewrites_as_its_own(tmp_path: Path) -> None:
    backlog_cli()
    cases = [(name, None, ((HEAD.format(n=1).replace("\n", "\r\n") if "\r\n" in body
                            else HEAD.format(n=1)) + body).encode())
             for name, body in REWRITTEN.items()]
    differ = _reads_alike(tmp_path, cases)
    assert not differ, "\n\n".join(differ)


@pytest.mark.slow
@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"no Backlog.md corpus at {CORPORA} "
                    "(it is only on the development machine)")
def test_the_cli_reads_our_summary_in_corpus_files_as_its_own(tmp_path: Path) -> None:
    backlog_cli()
    sample = _corpus_sample()
    assert len(sample) == 12, sample
    cases = [(f"{path.parent.parent.parent.name}/{path.name} ({why})",
              path.parent.parent / "config.yml" if (path.parent.parent / "config.yml").is_file()
              else None, path.read_bytes()) for path, why in sample]
    differ = _reads_alike(tmp_path, cases)
    assert not differ, "\n\n".join(differ)
