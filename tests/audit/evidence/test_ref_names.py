"""Any name git allows for a ref is read as itself: bytes that are not UTF-8 and Unicode line
separators neither hide one ref behind another nor stop the audit with a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from audit_helpers import (
    Run,
    commit,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
    verdicts,
)

from audit.model import UNGRANTED


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def test_a_ref_name_that_is_not_utf8_cannot_turn_a_violation_into_an_unexpected_error(
        tmp_path: Path) -> None:
    """git allows any byte above 0x7f in a ref name. A branch named `x\\xff` pushed next to an
    unlogged commit made closeout stop with "unexpected error" (exit 3, no after-snapshot, no
    report) instead of failing the commit (exit 1)."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    assert run_cli("begin", str(clone), "--run-dir", str(run_dir)).returncode == 0
    sneaky = commit(clone, "src/x.py", "x\n", "sneak")
    git(clone, "push", "-q", "origin", "main")
    subprocess.run([b"git", b"-C", bytes(clone), b"push", b"-q", b"origin",
                    b"HEAD:refs/heads/x\xff"], check=True)
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads((run_dir / "audit-report.json").read_bytes().decode("utf-8"))
    assert {f["commit"]: f["verdict"] for f in report["findings"] if f["commit"]} == {
        sneaky: UNGRANTED}
    weird = [f for f in report["findings"] if f["ref"].startswith("refs/heads/x")]
    assert len(weird) == 1 and weird[0]["verdict"] == UNGRANTED
    (run_dir / "audit-report.txt").read_bytes().decode("utf-8")
    after = json.loads((run_dir / "audit-after.json").read_bytes().decode("utf-8"))
    assert any(ref.startswith("refs/heads/x") for part in after["repos"].values()
               for ref in part["remotes"]["origin"]["refs"])


def test_a_ref_name_holding_a_unicode_line_separator_cannot_stand_in_for_another(
        tmp_path: Path) -> None:
    """git allows U+2028 (and U+0085) in ref names; Python's splitlines() breaks lines there.
    `refs/heads/feature<U+2028>` holding feature's old tip was read as `refs/heads/feature`, so
    an unlogged force push of feature (and of a tag the same way) left no finding at all. git's
    output is split on newlines only: every ref keeps its own name."""
    run = Run(tmp_path)
    start = rev(run.clone, "HEAD")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/heads/feature")
    git(run.clone, "push", "-q", "origin", "HEAD:refs/tags/v1")
    run.before = run.snapshot()
    commit(run.clone, "deploy.sh", "evil\n", "evil")
    for ref in ("refs/heads/feature", "refs/tags/v1"):
        git(run.clone, "push", "-q", "--no-verify", "origin", f"{start}:{ref}\u2028")
        git(run.clone, "push", "-q", "--force", "origin", f"HEAD:{ref}")
    after = run.snapshot()
    refs = after["repos"][run.key]["remotes"]["origin"]["refs"]
    assert refs["refs/heads/feature"] == rev(run.clone, "HEAD")
    assert refs["refs/heads/feature\u2028"] == start
    found = verdicts(run.judge(after))
    assert found[("refs/heads/feature", "branch-moved")] == UNGRANTED
    assert found[("refs/tags/v1", "tag-moved")] == UNGRANTED
    assert found[("refs/heads/feature\u2028", "branch-added")] == UNGRANTED


def test_a_local_tag_named_with_a_line_separator_is_recorded_not_a_traceback(
        tmp_path: Path) -> None:
    """The same split of `for-each-ref` output made `begin` die on a tag `v1<U+2028>x`
    (`ValueError: not enough values to unpack`, exit 3)."""
    run = Run(tmp_path)
    git(run.clone, "tag", "v1\u2028x")
    run_dir = tmp_path / "run"
    done = run_cli("begin", str(run.clone), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    snap = json.loads((run_dir / "audit-before.json").read_text())
    assert "refs/tags/v1\u2028x" in snap["repos"][run.key]["tags"]["tags"]
