"""The run directory's evidence against its seal in the ledger: each attack a run acting as the
auditor's own Unix user can make on the arm, the before-snapshot, the charter, the push log and
the report files, and the honest runs that still pass (SPEC "Evidence the run cannot make")."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import (
    ZERO,
    commit,
    env_with,
    git,
    isolate_git,
    make_repo_with_remote,
    rev,
    run_cli,
)

from audit.evidence.rundir import AFTER, BEFORE, PUSH_LOG, REPORT_JSON, REPORT_TXT

ARMED = "armed "


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def begin(*args: str) -> str:
    """`begin`, which must succeed; its last line (the `armed` line)."""
    done = run_cli("begin", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def closeout(run_dir: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("closeout", "--run-dir", str(run_dir), "--json", *extra)
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def kinds(report: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report["findings"]:
        out.setdefault(f["kind"], []).append(f["verdict"])
    return out


def reasons(report: dict[str, Any], kind: str) -> str:
    return " | ".join(f["reason"] for f in report["findings"] if f["kind"] == kind)


def ledger_file(tmp_path: Path) -> Path:
    """The default ledger (tests/audit/conftest.py puts $XDG_STATE_HOME in the test's folder)."""
    return tmp_path / ".state" / "loop-jobs" / "ledger.db"


def edit_before(run_dir: Path, change: Any) -> None:
    before = json.loads((run_dir / BEFORE).read_text())
    change(before)
    (run_dir / BEFORE).write_text(json.dumps(before, indent=2, sort_keys=True) + "\n")


# --- the arm ------------------------------------------------------------------------------------

def test_begin_prints_the_armed_line_writes_the_arm_record_and_inserts_its_row(
        tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: o/n loop1\n")
    line = begin(str(clone), "--run-dir", str(run_dir), "--charter", str(charter))
    digest = hashlib.sha256((run_dir / BEFORE).read_bytes()).hexdigest()
    charter_digest = hashlib.sha256(charter.read_bytes()).hexdigest()
    arm = json.loads((run_dir / "audit-arm.json").read_text())
    assert line == (f"armed {run_dir} before={digest} charter={charter_digest} "
                    f"transport={arm['transport_sha256']}")
    assert arm["before_sha256"] == digest and arm["kind"] == "begin"
    assert arm["transport"]["git"]["path"] == shutil.which("git")
    with sqlite3.connect(ledger_file(tmp_path)) as db:
        rows = db.execute("SELECT run_dir, kind, before_sha256, charter_sha256, "
                          "transport_sha256 FROM audit_arms").fetchall()
    assert rows == [(str(run_dir.resolve()), "begin", digest, charter_digest,
                     arm["transport_sha256"])]
    # The fingerprint keeps digests of settings, never their values.
    assert "gitconfig-global" not in json.dumps(list(arm["transport"]["settings"].values()))


def test_a_second_begin_before_closeout_cannot_rearm_a_force_push(tmp_path: Path) -> None:
    """Attack: main force-pushed during the run, then `begin` run again just before closeout
    so that the rewrite is the new starting point: "no remote changes"."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    git(clone, "commit", "-q", "--amend", "-m", "rewritten")
    git(clone, "push", "-q", "--force", "origin", "main")
    again = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert again.returncode == 2
    assert f"{run_dir}: already armed at " in again.stderr
    assert "use a new run directory" in again.stderr
    code, report = closeout(run_dir)
    assert code == 1
    assert "NON_FAST_FORWARD" in kinds(report)["branch-moved"]


def test_a_before_snapshot_the_ledger_never_sealed_is_refused_in_the_spec_words(
        tmp_path: Path) -> None:
    """SPEC: `begin` refuses with "already armed at <time>; use a new run directory" when the
    run directory holds a before-snapshot, even one the ledger never saw."""
    import re

    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / BEFORE).write_text("{}\n")
    again = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert again.returncode == 2
    assert re.search(r"already armed at \S+; use a new run directory", again.stderr), again.stderr


def test_a_begin_after_deleting_the_run_files_is_still_refused(tmp_path: Path) -> None:
    """Attack: delete the run directory's files and arm it afresh; the ledger remembers."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    shutil.rmtree(run_dir)
    again = run_cli("begin", str(clone), "--run-dir", str(run_dir))
    assert again.returncode == 2 and "already armed at " in again.stderr
    assert not (run_dir / BEFORE).exists()
    # And closeout of the emptied directory says the sealed snapshot is gone.
    run_dir.mkdir()
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}
    assert "audit-before.json is gone" in reasons(report, "before-changed")


def test_a_run_directory_replaced_by_a_link_to_one_armed_afresh_is_tampered(
        tmp_path: Path) -> None:
    """Attack: main force-pushed, then the armed run directory moved aside and its name made a
    symbolic link to a directory the run armed after the push (the ledger names a run directory
    by its real path, so that begin was no second arm of it): closeout of the harness's path
    judged the fresh arm, "no remote changes". Also with the link one folder up, and with the
    harness's own path reaching the run directory through a link (as /tmp does on macOS)."""
    for layout in ("dir", "parent", "linked"):
        base = tmp_path / layout
        clone, _ = make_repo_with_remote(base)
        real = base / "real"
        real.mkdir()
        runs = base / "runs"
        if layout == "linked":
            runs.symlink_to(real)
        else:
            runs.mkdir()
        run_dir = runs / "loop7"
        begin(str(clone), "--run-dir", str(run_dir))
        git(clone, "commit", "-q", "--amend", "-m", "rewritten")
        git(clone, "push", "-q", "--force", "origin", "main")
        fresh = base / "fresh" / "loop7"
        begin(str(clone), "--run-dir", str(fresh))
        if layout == "parent":
            runs.rename(base / "runs-armed")
            runs.symlink_to(fresh.parent)
        else:
            moved = (real if layout == "linked" else runs) / "loop7"
            moved.rename(moved.with_name("loop7-armed"))
            moved.symlink_to(fresh)
        code, report = closeout(run_dir)
        assert code == 1, layout
        assert kinds(report)["arm-moved"] == ["TAMPERED"], layout
        assert "was armed at " in reasons(report, "arm-moved")


def test_two_begin_rows_for_one_run_directory_are_tampered(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    with sqlite3.connect(ledger_file(tmp_path)) as db:
        db.execute("INSERT INTO audit_arms (run_dir, kind, extends, armed_at, machine, "
                   "before_sha256, charter_sha256, transport_sha256, transport) SELECT run_dir, "
                   "kind, extends, armed_at, machine, before_sha256, charter_sha256, "
                   "transport_sha256, transport FROM audit_arms")
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report)["arm-repeated"] == ["TAMPERED"]


def test_a_run_directory_the_ledger_never_saw_armed_is_tampered(tmp_path: Path) -> None:
    """A before-snapshot put in place by hand (`snapshot --out`) has no seal."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert run_cli("snapshot", "--out", str(run_dir / BEFORE), str(clone)).returncode == 0
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"arm-missing": ["TAMPERED"]}
    assert "never saw this run directory armed" in reasons(report, "arm-missing")


def test_begin_and_closeout_given_different_ledgers_name_the_configuration_to_give(
        tmp_path: Path) -> None:
    """What `make demo` once did: begin sealed in the default ledger, closeout read another."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    other = tmp_path / "other.yaml"
    other.write_text(f"ledger: sqlite:///{tmp_path / 'other.db'}\n")
    code, report = closeout(run_dir, "--config", str(other))
    assert code == 1 and kinds(report) == {"arm-missing": ["TAMPERED"]}
    why = reasons(report, "arm-missing")
    assert f"audit-arm.json says it was armed in sqlite:///{ledger_file(tmp_path)}" in why
    assert "--config" in why
    # The configuration begin used finds the seal: the run passes.
    assert closeout(run_dir)[0] == 0


def test_a_hook_that_would_seal_in_another_ledger_than_the_arm_is_warned_of(
        tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    own = tmp_path / "own.yaml"
    own.write_text(f"ledger: sqlite:///{tmp_path / 'own.db'}\n")
    begin(str(clone), "--run-dir", str(run_dir), "--config", str(own))
    elsewhere = run_cli("hook", "install", str(clone), "--run-dir", str(run_dir))
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert (f"armed in sqlite:///{tmp_path / 'own.db'} (audit-arm.json), but this hook seals "
            f"in sqlite:///{ledger_file(tmp_path)}") in elsewhere.stderr
    assert "--config" in elsewhere.stderr
    same = run_cli("hook", "install", str(clone), "--run-dir", str(run_dir), "--config", str(own))
    assert same.returncode == 0 and "armed in" not in same.stderr


def test_a_push_recorded_in_another_ledger_than_the_arm_is_warned_of(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    own = tmp_path / "own.yaml"
    own.write_text(f"ledger: sqlite:///{tmp_path / 'own.db'}\n")
    begin(str(clone), "--run-dir", str(run_dir), "--config", str(own))
    push = ("record-push", "--repo", str(clone), "--remote", "origin", "--ref",
            "refs/heads/main", "--old", ZERO, "--new", "1" * 40, "--run-dir", str(run_dir))
    elsewhere = run_cli(*push)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert f"was armed in sqlite:///{tmp_path / 'own.db'} (audit-arm.json)" in elsewhere.stderr
    same = run_cli(*push, "--config", str(own))
    assert same.returncode == 0 and "armed in" not in same.stderr


# --- the before-snapshot and the charter --------------------------------------------------------

def test_the_new_tip_written_into_the_before_snapshot_is_tampered(tmp_path: Path) -> None:
    """Attack: an unlogged push, then its tip written into audit-before.json."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    tip = rev(clone, "HEAD")
    key = str(clone.resolve())

    def forge(before: dict[str, Any]) -> None:
        refs = before["repos"][key]["remotes"]["origin"]["refs"]
        refs["refs/heads/main"] = refs["HEAD"] = tip

    edit_before(run_dir, forge)
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}
    assert "audit-before.json changed since it was sealed" in reasons(report, "before-changed")


def test_a_repository_dropped_from_the_before_snapshot_is_tampered(tmp_path: Path) -> None:
    """Attack: `add` a second repository, push to it unlogged, drop its entry."""
    clone, _ = make_repo_with_remote(tmp_path)
    other, _ = make_repo_with_remote(tmp_path, "other")
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    added = run_cli("add", str(other), "--run-dir", str(run_dir))
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[-1].startswith(ARMED)
    commit(other, "src/x.py", "x = 1\n", "unlogged")
    git(other, "push", "-q", "origin", "main")
    edit_before(run_dir, lambda before: before["repos"].pop(str(other.resolve())))
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}


def test_the_after_snapshots_tags_copied_into_the_before_snapshot_are_tampered(
        tmp_path: Path) -> None:
    """Attack: a tag pushed unlogged, then the after-snapshot's remotes, tags and releases
    copied into the before-snapshot so that nothing differs."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    git(clone, "tag", "v9")
    git(clone, "push", "-q", "origin", "v9")
    assert closeout(run_dir)[0] == 1  # writes the after-snapshot
    after = json.loads((run_dir / AFTER).read_text())
    key = str(clone.resolve())

    def copy(before: dict[str, Any]) -> None:
        for part in ("tags", "releases"):
            before["repos"][key][part] = after["repos"][key][part]
        before["repos"][key]["remotes"]["origin"]["refs"] = \
            after["repos"][key]["remotes"]["origin"]["refs"]

    edit_before(run_dir, copy)
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}


def test_a_before_snapshot_edited_into_nonsense_is_tampered_not_malformed(
        tmp_path: Path) -> None:
    """Checked against its seal before its form is judged: exit 1, not 2."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    (run_dir / BEFORE).write_text("{not json\n")
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}


def test_a_charter_edited_with_the_snapshots_charter_hash_is_tampered(tmp_path: Path) -> None:
    """Attack: grant more authority by editing the charter and the hash the snapshot records."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    charter = tmp_path / "charter.md"
    charter.write_text("# Charter: acme/widgets loop1\n")
    begin(str(clone), "--run-dir", str(run_dir), "--charter", str(charter))
    charter.write_text("# Charter: acme/widgets loop1\nauthority: release-please acme/widgets\n")
    digest = hashlib.sha256(charter.read_bytes()).hexdigest()
    edit_before(run_dir, lambda before: before.update(charter_sha256=digest))
    code, report = closeout(run_dir, "--charter", str(charter))
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}


def test_expect_before_catches_an_arm_row_rewritten_with_the_snapshot(tmp_path: Path) -> None:
    """What a process of the same user can still do: rewrite the SQLite ledger's row together
    with the snapshot. A harness that kept begin's digest catches it with --expect-before."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    line = begin(str(clone), "--run-dir", str(run_dir))
    kept = line.split(" before=")[1].split()[0]
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    assert closeout(run_dir, "--expect-before", kept)[0] == 1  # the honest check fails the push
    shutil.copy(run_dir / AFTER, run_dir / BEFORE)
    forged = hashlib.sha256((run_dir / BEFORE).read_bytes()).hexdigest()
    with sqlite3.connect(ledger_file(tmp_path)) as db:
        db.execute("UPDATE audit_arms SET before_sha256 = ?", (forged,))
    assert closeout(run_dir)[0] == 0  # the limit, said in docs/audit-trust.md
    code, report = closeout(run_dir, "--expect-before", kept)
    assert code == 1 and kinds(report) == {"before-changed": ["TAMPERED"]}
    assert "--expect-before" in reasons(report, "before-changed")
    bad = run_cli("closeout", "--run-dir", str(run_dir), "--expect-before", "abc")
    assert bad.returncode == 2 and "64 hex digits" in bad.stderr


def test_an_empty_before_snapshot_is_malformed(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"taken_at": "2026-11-30T07:00:00Z", "charter_sha256": None,
                                 "repos": {}}))
    after = tmp_path / "after.json"
    assert run_cli("snapshot", "--out", str(after), str(clone)).returncode == 0
    done = run_cli("compare", str(empty), str(after))
    assert done.returncode == 2 and "holds no repository" in done.stderr


# --- the push log -------------------------------------------------------------------------------

def test_a_push_log_line_written_by_hand_covers_nothing(tmp_path: Path) -> None:
    """Attack: an unlogged push, then a line for it appended to push-log.jsonl by hand."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    old = rev(clone, "HEAD")
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    line = {"repo": str(clone.resolve()), "remote": "origin", "ref": "refs/heads/main",
            "old": old, "new": rev(clone, "HEAD"), "at": "2026-11-30T07:00:00Z",
            "source": "record-push"}
    (run_dir / PUSH_LOG).write_text(json.dumps(line, sort_keys=True,
                                               separators=(",", ":")) + "\n")
    code, report = closeout(run_dir)
    assert code == 1
    assert "push-log line 1 was never recorded in the ledger" in reasons(
        report, "push-log-line")
    assert kinds(report)["commit"] == ["UNGRANTED"]


def test_deleting_the_push_log_after_a_logged_rewrite_hides_nothing(tmp_path: Path) -> None:
    """Attack: main pushed and force-pushed back (both logged, the rewrite fails), then
    push-log.jsonl deleted: main is where it started, and the log that showed the rewrite is
    gone."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    start = rev(clone, "HEAD")
    commit(clone, "src/x.py", "x = 1\n", "pushed, then taken back")
    git(clone, "push", "-q", "origin", "main")
    moved = rev(clone, "HEAD")
    git(clone, "reset", "-q", "--hard", start)
    git(clone, "push", "-q", "--force", "origin", "main")
    for old, new in ((start, moved), (moved, start)):
        done = run_cli("record-push", "--repo", str(clone), "--ref", "refs/heads/main",
                       "--old", old, "--new", new, "--run-dir", str(run_dir))
        assert done.returncode == 0, done.stderr
    assert closeout(run_dir)[0] == 1  # the logged rewrite fails
    (run_dir / PUSH_LOG).unlink()
    code, report = closeout(run_dir)
    assert code == 1 and kinds(report)["push-log-row"] == ["TAMPERED", "TAMPERED"]
    assert "is missing from push-log.jsonl" in reasons(report, "push-log-row")


def test_a_push_sealed_while_the_ledger_was_down_is_unverified(tmp_path: Path) -> None:
    """The hook lets a push go when the ledger cannot be reached, marks its line unsealed, and
    what only that line covers cannot pass."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    down = tmp_path / "down.yaml"
    down.write_text("ledger: sqlite:////proc/no-such-place/ledger.db\n")
    commit(clone, "src/x.py", "x = 1\n", "pushed while the ledger was down")
    pushed = git(clone, "push", "-q", "origin", "main",
                 env=env_with(LOOP_JOBS_CONFIG=str(down)))
    assert pushed == ""
    line = json.loads((run_dir / PUSH_LOG).read_text())
    assert line["sealed"] is False
    code, report = closeout(run_dir)
    assert code == 3
    assert kinds(report)["commit"] == ["UNVERIFIED"]
    assert "only a push-log line written while the ledger could not be reached" in reasons(
        report, "commit")


def test_an_honest_run_through_the_hook_passes_and_report_reprints_it(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    line = begin(str(clone), "--run-dir", str(run_dir))
    assert run_cli("hook", "install", str(clone), "--run-dir", str(run_dir)).returncode == 0
    commit(clone, "src/x.py", "x = 1\n", "logged by the hook")
    git(clone, "push", "-q", "origin", "main", "main:refs/heads/topic")
    git(clone, "push", "-q", "origin", ":refs/heads/topic")
    with sqlite3.connect(ledger_file(tmp_path)) as db:
        sealed = [r[0] for r in db.execute("SELECT line FROM audit_pushes ORDER BY id")]
    assert sealed == (run_dir / PUSH_LOG).read_text().splitlines() and len(sealed) == 3
    kept = line.split(" before=")[1].split()[0]
    code, report = closeout(run_dir, "--expect-before", kept)
    assert code == 0, report
    assert set(kinds(report)) == {"branch-moved", "ref-moved", "commit"}
    shown = run_cli("report", "--run-dir", str(run_dir))
    assert shown.returncode == 0 and shown.stdout == (run_dir / REPORT_TXT).read_text()


# --- the report files ---------------------------------------------------------------------------

def test_report_files_rewritten_by_the_run_are_tampered(tmp_path: Path) -> None:
    """Attack: a failing closeout's report files rewritten to a pass; `report` re-printed
    them with exit 0."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    commit(clone, "src/x.py", "x = 1\n", "unlogged")
    git(clone, "push", "-q", "origin", "main")
    code, _ = closeout(run_dir)
    assert code == 1
    recorded = (run_dir / REPORT_TXT).read_text()
    (run_dir / REPORT_TXT).write_text("audit: no remote changes\n")
    (run_dir / REPORT_JSON).write_text('{"findings": [], "ok": true, "verdict": "pass"}\n')
    shown = run_cli("report", "--run-dir", str(run_dir))
    assert shown.returncode == 1
    assert shown.stdout.startswith(recorded)
    assert shown.stdout.splitlines()[-1].startswith(
        f"TAMPERED: {REPORT_TXT} and {REPORT_JSON} in {run_dir} differ from the report the "
        "ledger recorded at ")
    # Report files where the ledger holds no closeout at all are not the audit's either.
    fresh = tmp_path / "fresh"
    begin(str(clone), "--run-dir", str(fresh))
    (fresh / REPORT_TXT).write_text("audit: no remote changes\n")
    shown = run_cli("report", "--run-dir", str(fresh))
    assert shown.returncode == 1 and shown.stdout.startswith("TAMPERED: the ledger ")


def test_zero_sha_pushes_seal_like_any_other(tmp_path: Path) -> None:
    """A branch created and deleted through record-push: both lines sealed, both matched."""
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    head = rev(clone, "HEAD")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/tmp")
    git(clone, "push", "-q", "origin", ":refs/heads/tmp")
    for old, new in ((ZERO, head), (head, ZERO)):
        assert run_cli("record-push", "--repo", str(clone), "--ref", "refs/heads/tmp", "--old",
                       old, "--new", new, "--run-dir", str(run_dir)).returncode == 0
    code, report = closeout(run_dir)
    assert code == 0 and report["findings"] == []


def test_an_unreadable_transport_fingerprint_is_unverified(tmp_path: Path) -> None:
    clone, _ = make_repo_with_remote(tmp_path)
    run_dir = tmp_path / "run"
    begin(str(clone), "--run-dir", str(run_dir))
    with sqlite3.connect(ledger_file(tmp_path)) as db:
        db.execute("UPDATE audit_arms SET transport = 'not json'")
    code, report = closeout(run_dir)
    assert code == 3
    assert "the transport fingerprint sealed at begin is unreadable" in reasons(
        report, "transport-changed")
