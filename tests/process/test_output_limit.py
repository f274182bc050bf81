"""A recipe's output file keeps at most `output_limit` of its output: the head and the tail, with
one line between saying how many bytes were dropped (SPEC, "Where and how a recipe runs").
A full disk is named, with what filled it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project import ROOT
from runner_helpers import JUST, recipe, write_justfile
from verify_helpers import make_verify_repo

from jobs.process.recipe import run_recipe

LIMIT = 64 << 10
SEQ = 400_000  # `seq 1 400000` prints 2,888,895 bytes


def _seq(n: int) -> bytes:
    return b"".join(f"{i}\n".encode() for i in range(1, n + 1))


def _run(tmp_path: Path, line: str, limit: int = LIMIT) -> tuple[int | None, str, bytes]:
    jf = write_justfile(tmp_path, recipe("verify-out", line))
    out = tmp_path / "out" / "verify-out.log"
    res = run_recipe(tmp_path, jf, "verify-out", timeout=30, kill_grace=1, just=JUST,
                     output_path=out, output_limit=limit)
    assert res.error is None, res.error
    return res.exit_code, res.tail, out.read_bytes()


def test_output_over_the_limit_keeps_its_head_and_tail_and_says_what_was_dropped(
        tmp_path: Path) -> None:
    code, tail, kept = _run(tmp_path, f"@seq 1 {SEQ}")
    full = _seq(SEQ)
    assert code == 0
    head, rest = kept[:LIMIT // 2], kept[LIMIT // 2:]
    assert head == full[:LIMIT // 2]
    marker, _, end = rest.partition(b"]\n")
    dropped = len(full) - LIMIT
    # The marker is a line of its own, also when the head ends mid-line.
    assert marker.startswith(b"[loop-verify: " if head.endswith(b"\n") else b"\n[loop-verify: ")
    assert f"{dropped} bytes of output dropped here".encode() in marker
    assert end == full[-(LIMIT - LIMIT // 2):]
    assert len(kept) < LIMIT + 200
    assert tail.endswith(f"{SEQ - 1}\n{SEQ}")


def test_output_within_the_limit_is_kept_whole(tmp_path: Path) -> None:
    code, _tail, kept = _run(tmp_path, "@seq 1 5000")
    assert code == 0 and kept == _seq(5000)
    code, _tail, kept = _run(tmp_path, f"@head -c {LIMIT} /dev/zero")
    assert kept == b"\0" * LIMIT  # exactly the limit: nothing dropped


def test_one_write_far_over_the_limit_and_a_failing_exit(tmp_path: Path) -> None:
    # A single chunk larger than the whole limit, then the recipe fails: its exit code stands,
    # the tail is the output's end.
    code, tail, kept = _run(tmp_path, f"@{sys.executable} -c \"import sys; "
                            "sys.stdout.write('x' * 5_000_000 + '\\\\nlast words\\\\n'); "
                            "sys.stdout.flush(); sys.exit(4)\"")
    assert code == 4
    assert kept.startswith(b"x" * (LIMIT // 2) + b"\n[loop-verify: ")
    assert kept.endswith(b"\nlast words\nerror: recipe `verify-out` failed on line 2 with exit "
                         b"code 4\n") and len(kept) < LIMIT + 200
    assert tail.splitlines()[-2:] == ["last words", "error: recipe `verify-out` failed on line 2 "
                                      "with exit code 4"]


def test_a_recipe_printing_far_more_than_the_limit_keeps_its_pass(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, extra_config={"output_limit": "64KiB"},
                            justfile=f"verify-noisy:\n    @seq 1 {SEQ}\n")
    repo.add_task(1, notes="verify-cmd: just verify-noisy")
    repo.commit_all("task")
    code, data = repo.run_json("run", "--today", "2026-11-30")
    assert code == 0, data
    [result] = data["results"]
    assert result["verdict"] == "pass"
    assert os.path.getsize(result["output_path"]) < LIMIT + 200


def _mount_namespace_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


# loop-verify with a 2 MiB tmpfs as its state folder, in a mount namespace of its own (nothing is
# left mounted whatever happens); HOG bytes of it taken by a file first.
_SMALL_STATE = """set -e
mount -t tmpfs -o size=2m tmpfs "$STATE"
if [ "$HOG" != 0 ]; then head -c "$HOG" /dev/zero > "$STATE/hog.bin" 2>/dev/null || true; fi
exec "$PYTHON" -m jobs.main run --config "$CONFIG" --today 2026-11-30
"""


@pytest.mark.skipif(not _mount_namespace_available(),
                    reason="needs unshare and a mount namespace of its own (tmpfs)")
@pytest.mark.parametrize("hog", [0, 4 << 20])
def test_a_small_state_file_system(tmp_path: Path, hog: int) -> None:
    # 3 MB of output on a 2 MiB file system: with the output capped the recipe keeps its pass;
    # with the file system already full, the error names what filled it.
    state = tmp_path / "state"
    state.mkdir()
    repo = make_verify_repo(tmp_path, justfile=f"verify-noisy:\n    @seq 1 {SEQ}\n",
                            extra_config={"state_dir": str(state), "output_limit": "256KiB",
                                          "log_file": str(tmp_path / "log.jsonl"),
                                          "ledger": f"sqlite:///{tmp_path / 'ledger.db'}"})
    repo.add_task(1, notes="verify-cmd: just verify-noisy")
    repo.commit_all("task")
    env = dict(os.environ, STATE=str(state), HOG=str(hog), PYTHON=sys.executable,
               CONFIG=str(repo.config_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(["unshare", "-rm", "sh", "-c", _SMALL_STATE], cwd=repo.root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    if not hog:
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("pass     app TASK-1"), done.stdout
        return
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("error    app TASK-1"), done.stdout
    assert "its file system is full" in done.stdout
    assert f"the largest files under {state}: hog.bin (" in done.stdout, done.stdout
