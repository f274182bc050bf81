"""The recipe runner: how `just` is started, what it sees, what comes back (real `just`)."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

import pytest
from runner_helpers import JUST, PYTHON, after, recipe, write_justfile

from jobs.core.tail import read_tail
from jobs.process.recipe import (
    TOKEN_VAR,
    JustfileInvalid,
    RecipeError,
    RecipeResult,
    find_justfile,
    list_recipes,
    read_recipes,
    run_recipe,
)


def run(
    root: Path,
    jf: Path,
    name: str,
    tmp_path: Path,
    *,
    timeout: float = 10,
    kill_grace: float = 0.5,
    just: str = JUST,
    env: Mapping[str, str] | None = None,
    on_tick: Callable[[float], None] | None = None,
    stop: threading.Event | None = None,
    runs: Collection[str] = (),
) -> RecipeResult:
    return run_recipe(
        root, jf, name, timeout=timeout, kill_grace=kill_grace, just=just, env=env,
        on_tick=on_tick, stop=stop, output_path=tmp_path / "out" / f"{name}.log", runs=runs,
    )


# --- find_justfile ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["justfile", "Justfile", ".justfile"])
def test_find_justfile_takes_each_accepted_name(tmp_path: Path, name: str) -> None:
    jf = write_justfile(tmp_path / "repo", recipe("verify-a", "true"), name)
    assert find_justfile(tmp_path / "repo") == jf


@pytest.mark.parametrize("name", ["JustFile", "JUSTFILE", "jUsTfIlE", ".JustFile", ".JUSTFILE"])
def test_find_justfile_takes_any_letter_case_as_just_does(tmp_path: Path, name: str) -> None:
    write_justfile(tmp_path, recipe("verify-a", "echo parent"))
    root = tmp_path / "repo"
    jf = write_justfile(root, recipe("verify-a", "echo root"), name)
    assert find_justfile(root) == jf
    # and it is the file `just` itself picks there, searching on its own
    said = subprocess.run([JUST, "verify-a"], cwd=root, capture_output=True, text=True,
                          check=True)
    assert said.stdout == "root\n"


def test_two_root_justfiles_are_refused_as_just_refuses_them(tmp_path: Path) -> None:
    write_justfile(tmp_path, recipe("verify-a", "true"), "justfile")
    write_justfile(tmp_path, recipe("verify-a", "true"), ".JustFile")
    with pytest.raises(JustfileInvalid, match="multiple candidate justfiles"):
        find_justfile(tmp_path)
    said = subprocess.run([JUST, "verify-a"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert said.returncode != 0 and "multiple candidate justfiles" in said.stderr


def test_find_justfile_never_uses_a_parent_folders_file(tmp_path: Path) -> None:
    write_justfile(tmp_path, recipe("verify-a", "true"))
    (tmp_path / "repo").mkdir()
    assert find_justfile(tmp_path / "repo") is None


def test_a_directory_named_justfile_is_not_a_justfile(tmp_path: Path) -> None:
    (tmp_path / "justfile").mkdir()
    assert find_justfile(tmp_path) is None


# --- list_recipes -------------------------------------------------------------------------------


def test_list_recipes_names_recipes_aliases_private_and_module_recipes(tmp_path: Path) -> None:
    jf = write_justfile(
        tmp_path,
        "mod tools\n"
        "alias verify-short := verify-disk\n"
        + recipe("verify-disk", "true")
        + "[private]\n" + recipe("verify-hidden", "true")
        + recipe("_helper", "true"),
    )
    (tmp_path / "tools.just").write_text(recipe("verify-inner", "true"))
    names = list_recipes(jf, tmp_path, just=JUST)
    assert names == {
        "verify-disk", "verify-short", "verify-hidden", "_helper", "tools::verify-inner"
    }
    assert "verify-missing" not in names


def test_list_recipes_does_not_run_backticks(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    jf = write_justfile(tmp_path, f"x := `touch {flag}`\n" + recipe("verify-a", "echo {{x}}"))
    assert list_recipes(jf, tmp_path, just=JUST) == {"verify-a"}
    assert not flag.exists()


def test_a_broken_justfile_is_invalid_not_an_infrastructure_error(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, "verify-a:\n  echo a\n   echo b\n")
    with pytest.raises(JustfileInvalid) as caught:
        list_recipes(jf, tmp_path, just=JUST)
    assert "leading whitespace" in caught.value.message
    assert not isinstance(caught.value, RecipeError)


def test_list_recipes_ignores_just_variables_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = write_justfile(tmp_path / "other", recipe("verify-elsewhere", "true"))
    jf = write_justfile(tmp_path / "repo", recipe("verify-here", "true"))
    monkeypatch.setenv("JUST_JUSTFILE", str(other))
    assert list_recipes(jf, tmp_path / "repo", just=JUST) == {"verify-here"}


def test_list_recipes_without_just_is_a_recipe_error(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    with pytest.raises(RecipeError, match="cannot start"):
        list_recipes(jf, tmp_path, just=str(tmp_path / "no-such-just"))
    not_exec = tmp_path / "just"
    not_exec.write_text("#!/bin/sh\n")
    with pytest.raises(RecipeError, match="cannot start"):
        list_recipes(jf, tmp_path, just=str(not_exec))


# --- run_recipe: results ------------------------------------------------------------------------


def test_exit_codes_pass_through(tmp_path: Path) -> None:
    jf = write_justfile(
        tmp_path, recipe("verify-ok", "echo fine") + recipe("verify-three", "exit 3")
    )
    ok = run(tmp_path, jf, "verify-ok", tmp_path)
    assert (ok.outcome, ok.exit_code, ok.error) == ("exited", 0, None)
    assert ok.tail == "echo fine\nfine"  # just echoes the command line to stderr, same file
    three = run(tmp_path, jf, "verify-three", tmp_path)
    assert (three.outcome, three.exit_code) == ("exited", 3)
    assert "exit code 3" in three.tail
    assert three.output_path == tmp_path / "out" / "verify-three.log"
    assert 0 < three.duration < 5


@pytest.mark.parametrize(("line", "outcome", "said"), [
    # The recipe's shell killed from outside (as the OOM killer would): `just` says so.
    ("kill -KILL $$", "error", "killed by SIGKILL, which loop-verify did not send"),
    ("kill -TERM $$", "error", "killed by SIGTERM, which loop-verify did not send"),
    # Output cut off mid-line (a test runner's dots) puts just's words on that same line.
    ("printf ....; kill -KILL $$", "error", "killed by SIGKILL, which loop-verify did not send"),
    # A program's own crash is the recipe's failure.
    ("kill -SEGV $$", "exited", None),
    ("kill -ABRT $$", "exited", None),
    # A shell reporting its child's death as an exit status: an exit status.
    ("sh -c 'kill -KILL $$' || exit $?", "exited", None),  # `||`: the shell must not exec
    ("exit 137", "exited", None),
])
def test_a_signal_loop_verify_did_not_send_is_an_error_not_a_failure(
        tmp_path: Path, line: str, outcome: str, said: str | None) -> None:
    jf = write_justfile(tmp_path, recipe("verify-sig", line))
    res = run(tmp_path, jf, "verify-sig", tmp_path)
    assert res.outcome == outcome, res
    assert res.exit_code != 0
    if said is None:
        assert res.error is None
    else:
        assert res.error is not None and said in res.error


NO_SHELL = "loop-verify-test-no-such-shell"


@pytest.mark.parametrize(("justfile", "said"), [
    # The justfile's shell is not installed here (zsh on a machine without it, say).
    (f'set shell := ["{NO_SHELL}", "-cu"]\n' + recipe("verify-env", "echo hi"),
     f"could not find the shell `{NO_SHELL}`"),
    # ... nor is the shell of a backtick it evaluates first.
    (f'set shell := ["{NO_SHELL}", "-cu"]\nx := `echo hi`\n' + recipe("verify-env", "true"),
     "backtick could not be run because just could not find the shell"),
    # A [script] recipe (and a shebang one) whose temporary folder cannot be created.
    ('set tempdir := "/nonexistent/loop-verify"\n[script]\n' + recipe("verify-env", "true"),
     "while trying to create a temporary directory"),
    ('set tempdir := "/nonexistent/loop-verify"\n' + recipe("verify-env", "#!/bin/sh", "true"),
     "while trying to create a temporary directory"),
    # A shebang interpreter, or a [script] command, that is not installed.
    (recipe("verify-env", f"#!/nonexistent/{NO_SHELL}", "true"), "execution error"),
    (f'[script("{NO_SHELL}")]\n' + recipe("verify-env", "true"), "execution error"),
    # A dependency of the recipe that cannot be run is the same fault.
    ("verify-env: dep\n    true\n" + f'[script("{NO_SHELL}")]\n' + recipe("dep", "true"),
     "recipe `dep` with command"),
    # ... also when what ran before it left its last line unfinished.
    ("verify-env: dots dep\n    true\n" + recipe("dots", "@printf ....")
     + f'[script("{NO_SHELL}")]\n' + recipe("dep", "true"), "recipe `dep` with command"),
])
def test_just_saying_the_recipe_could_not_be_run_is_an_error_not_a_failure(
        tmp_path: Path, justfile: str, said: str) -> None:
    jf = write_justfile(tmp_path, justfile)
    runs = read_recipes(jf, tmp_path, just=JUST).running("verify-env")
    res = run(tmp_path, jf, "verify-env", tmp_path, runs=runs)
    assert (res.outcome, res.exit_code) == ("error", 1), res
    assert res.error is not None and said in res.error, res.error
    assert res.error.startswith("just could not run the recipe: ")


@pytest.mark.parametrize("lines", [
    # The recipe itself printing just's words and failing is the recipe's failure.
    ("echo 'error: recipe `verify-env` could not be run because just could not find the "
     "shell `zsh`: No such file or directory (os error 2)' >&2", "exit 1"),
    # So is a nested `just` that could not run its recipe: the outer one has the last word.
    (f"printf 'set shell := [\"{NO_SHELL}\"]\\ninner:\\n    true\\n' > inner.just",
     "just --justfile inner.just inner"),
])
def test_a_recipe_that_prints_just_words_still_fails(tmp_path: Path,
                                                     lines: tuple[str, ...]) -> None:
    jf = write_justfile(tmp_path, recipe("verify-env", *lines))
    res = run(tmp_path, jf, "verify-env", tmp_path, env={**os.environ, "PATH": os.pathsep.join(
        [str(Path(JUST).parent), os.environ.get("PATH", "")])})
    assert (res.outcome, res.exit_code, res.error) == ("exited", 1, None), res.tail


def test_a_silent_recipe_whose_nested_just_could_not_run_still_fails(tmp_path: Path) -> None:
    # `[no-exit-message]` keeps the outer `just` quiet: the nested one's words come last, but
    # they name a recipe the outer one never ran.
    jf = write_justfile(tmp_path, "[no-exit-message]\n" + recipe(
        "verify-env", f"printf 'set shell := [\"{NO_SHELL}\"]\\ninner:\\n    true\\n' > inner.just",
        "just --justfile inner.just inner"))
    res = run(tmp_path, jf, "verify-env", tmp_path, env={**os.environ, "PATH": os.pathsep.join(
        [str(Path(JUST).parent), os.environ.get("PATH", "")])})
    assert "recipe `inner` could not be run" in res.tail
    assert (res.outcome, res.exit_code, res.error) == ("exited", 1, None), res.tail


def test_just_itself_killed_from_outside_is_an_error(tmp_path: Path) -> None:
    pid_file = tmp_path / "just.pid"
    jf = write_justfile(tmp_path, recipe("verify-sig", f"echo $PPID > {pid_file}.tmp",
                                         f"mv {pid_file}.tmp {pid_file}", "sleep 30"))
    timer = threading.Thread(target=lambda: (wait_file(pid_file),
                                             os.kill(int(pid_file.read_text()), 9)))
    timer.start()
    res = run(tmp_path, jf, "verify-sig", tmp_path)
    timer.join()
    assert (res.outcome, res.exit_code) == ("error", -9)
    assert res.error is not None and "SIGKILL" in res.error


def wait_file(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_argv_working_directory_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = write_justfile(tmp_path / "other", recipe("verify-env", "echo WRONG-JUSTFILE"))
    root = tmp_path / "repo"
    jf = write_justfile(
        root,
        recipe(
            "verify-env",
            "@pwd",
            "@echo GTP=$GIT_TERMINAL_PROMPT",
            "@env | grep '^JUST_' || echo no-just-vars",
            f"@echo token=${TOKEN_VAR}",
            "@echo keep=$KEEP_ME",
        ),
    )
    monkeypatch.setenv("JUST_JUSTFILE", str(other / "justfile"))
    monkeypatch.setenv("JUST_WORKING_DIRECTORY", str(other))
    monkeypatch.setenv("JUST_DOTENV_FILENAME", "nope.env")
    monkeypatch.setenv("KEEP_ME", "kept")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    res = run(root, jf, "verify-env", tmp_path)
    lines = res.output_path.read_text().splitlines()
    assert res.exit_code == 0
    assert lines[0] == str(root)
    assert lines[1:3] == ["GTP=0", "no-just-vars"]
    assert lines[3].startswith("token=") and len(lines[3]) > len("token=") + 16
    assert lines[4] == "keep=kept"


def test_explicit_env_replaces_the_process_environment(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-env", "@echo a=$ONLY_HERE b=${HOME:-unset}"))
    env = {"PATH": os.environ["PATH"], "ONLY_HERE": "yes", "JUST_JUSTFILE": "/nonexistent"}
    res = run(tmp_path, jf, "verify-env", tmp_path, env=env)
    assert res.exit_code == 0
    assert res.output_path.read_text() == "a=yes b=unset\n"


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    jf = write_justfile(
        tmp_path, recipe("verify-stdin", "@readlink /proc/self/fd/0", "@cat", "@echo got-eof")
    )
    res = run(tmp_path, jf, "verify-stdin", tmp_path, timeout=5)
    assert (res.outcome, res.exit_code) == ("exited", 0)
    assert res.output_path.read_text() == "/dev/null\ngot-eof\n"
    assert res.duration < 5  # a stdin that never ends would have hit the timeout


def test_no_descriptor_of_ours_reaches_the_recipe(tmp_path: Path) -> None:
    leaky = os.open(tmp_path / "leaky", os.O_RDWR | os.O_CREAT)  # inheritable on purpose
    os.set_inheritable(leaky, True)
    try:
        ours = set()
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # listdir's own descriptor is gone already
                ours.add(os.readlink(f"/proc/self/fd/{fd}"))
        # libfaketime (scripts/test-any-hour) shares its clock with every child by this one.
        ours = {t for t in ours if not t.startswith("/dev/shm/faketime")}
        # Each descriptor the recipe's shell holds, with what it points at.
        line = 'for fd in /proc/$$/fd/*; do echo "${fd##*/} $(readlink "$fd")"; done'
        jf = write_justfile(tmp_path, recipe("verify-fds", f"@{line}"))
        res = run(tmp_path, jf, "verify-fds", tmp_path)
    finally:
        os.close(leaky)
    held = dict(line.split(" ", 1) for line in res.output_path.read_text().splitlines())
    assert {"0", "1", "2"} <= set(held), held
    inherited = {fd: target for fd, target in held.items()
                 if fd not in ("0", "1", "2") and target in ours}
    # Nothing we hold (the leaky file, the ledger, a lock, the log) is open in the recipe.
    assert inherited == {}, held
    assert str(tmp_path / "leaky") not in held.values()


def test_non_utf8_output_is_kept_as_bytes(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-bytes", r"@printf 'ok \377\376 end\n'"))
    res = run(tmp_path, jf, "verify-bytes", tmp_path)
    assert res.output_path.read_bytes() == b"ok \xff\xfe end\n"
    assert res.tail == "ok \ufffd\ufffd end"


def test_big_output_goes_to_disk_and_the_tail_is_bounded(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-big", "@seq 1 400000"))
    res = run(tmp_path, jf, "verify-big", tmp_path)
    data = res.output_path.read_bytes()
    assert data == "".join(f"{i}\n" for i in range(1, 400001)).encode()
    assert len(data) > 2_000_000
    assert res.tail.splitlines() == [str(i) for i in range(399981, 400001)]


def test_tail_keeps_at_most_2048_bytes_of_long_lines(tmp_path: Path) -> None:
    out = tmp_path / "o.log"
    out.write_bytes(b"".join(bytes([65 + i]) * 300 + b"\n" for i in range(20)))
    tail = read_tail(out)
    lines = tail.splitlines()
    assert len(tail.encode()) <= 2048
    assert lines[-1] == "T" * 300
    assert all(len(line) == 300 for line in lines)  # no fragment of a line at the top
    assert len(lines) == 6

    out.write_bytes(b"x" * 5000)  # one endless line: keep its end, not nothing
    assert read_tail(out) == "x" * 2048

    out.write_bytes("é".encode() * 3000)  # a cut through a character drops the fragment
    assert set(read_tail(out)) == {"é"}

    out.write_bytes(b"")
    assert read_tail(out) == ""
    assert read_tail(tmp_path / "missing") == ""


def test_on_tick_reports_elapsed_about_every_second(tmp_path: Path) -> None:
    release = tmp_path / "release"
    # The recipe runs until the test has seen two ticks: no guess at how long a loaded machine
    # takes to start it.
    jf = write_justfile(tmp_path, recipe(
        "verify-slow", f"@while [ ! -e {release} ]; do sleep 0.05; done"))
    ticks: list[float] = []

    def tick(elapsed: float) -> None:
        ticks.append(elapsed)
        if len(ticks) == 2:
            release.touch()

    res = run(tmp_path, jf, "verify-slow", tmp_path, timeout=60, on_tick=tick)
    assert res.exit_code == 0
    assert len(ticks) >= 2
    # About every second of the recipe's elapsed time, never early, always growing.
    assert ticks[0] >= 0.9 and all(b - a >= 0.9 for a, b in zip(ticks, ticks[1:], strict=False))
    assert res.duration >= ticks[-1]


# --- run_recipe: could not start ----------------------------------------------------------------


def test_just_not_on_path_is_an_error_not_an_exit(tmp_path: Path) -> None:
    (tmp_path / "empty-bin").mkdir()
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    res = run(tmp_path, jf, "verify-a", tmp_path, just="just",
              env={"PATH": str(tmp_path / "empty-bin")})
    assert (res.outcome, res.exit_code) == ("error", None)
    assert res.error is not None and "No such file" in res.error and "just" in res.error


def test_just_not_executable_is_an_error(tmp_path: Path) -> None:
    fake = tmp_path / "just"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(stat.S_IRUSR | stat.S_IWUSR)
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    res = run(tmp_path, jf, "verify-a", tmp_path, just=str(fake))
    assert (res.outcome, res.exit_code) == ("error", None)
    assert res.error is not None and "Permission denied" in res.error


def test_unwritable_output_file_is_an_error_and_nothing_runs(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    jf = write_justfile(tmp_path, recipe("verify-a", f"touch {flag}"))
    (tmp_path / "blocker").write_text("a file where a folder should be")
    res = run_recipe(tmp_path, jf, "verify-a", timeout=5, kill_grace=0.5, just=JUST,
                     output_path=tmp_path / "blocker" / "out.log")
    assert (res.outcome, res.exit_code) == ("error", None)
    assert res.error is not None and "cannot write output file" in res.error
    time.sleep(0.1)
    assert not flag.exists()


def test_output_parent_folders_are_created(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-a", "@echo hi"))
    out = tmp_path / "state" / "runs" / "2026-11-30" / "a.log"
    res = run_recipe(
        tmp_path, jf, "verify-a", timeout=5, kill_grace=0.5, just=JUST, output_path=out
    )
    assert res.exit_code == 0 and out.read_text() == "hi\n"


# --- run_recipe: timeout and stop ---------------------------------------------------------------


def test_timeout_gives_timed_out_and_the_partial_output(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-hang", "@echo started", "sleep 30"))
    res = run(tmp_path, jf, "verify-hang", tmp_path, timeout=1, kill_grace=0.5)
    assert res.outcome == "timed_out"
    assert res.exit_code is not None and res.exit_code != 0
    assert 1.0 <= res.duration < 1.0 + 0.5 + 10  # the recipe would sleep 30 s
    assert res.tail.startswith("started")


def test_stop_event_interrupts_within_the_grace(tmp_path: Path) -> None:
    jf = write_justfile(
        tmp_path, recipe("verify-hang", f"{PYTHON} -c 'import time; time.sleep(30)'")
    )
    stop = threading.Event()
    after(0.5, stop.set)
    started = time.monotonic()
    res = run(tmp_path, jf, "verify-hang", tmp_path, timeout=60, kill_grace=0.5, stop=stop)
    assert res.outcome == "interrupted"
    assert time.monotonic() - started < 0.5 + 0.5 + 10  # the recipe would sleep 30 s


def fake_just(tmp_path: Path, script: str) -> str:
    path = tmp_path / "fake-just"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def test_list_recipes_gives_up_on_a_just_that_hangs(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    hanging = fake_just(tmp_path, "sleep 30 &\nsleep 30\n")  # the background one holds the pipe
    started = time.monotonic()
    with pytest.raises(RecipeError, match="did not answer within 0.5s"):
        list_recipes(jf, tmp_path, just=hanging, timeout=0.5)
    assert time.monotonic() - started < 10  # the fake just would hang for 30 s


def test_list_recipes_rejects_an_answer_that_is_not_json(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-a", "true"))
    with pytest.raises(RecipeError, match="not JSON"):
        list_recipes(jf, tmp_path, just=fake_just(tmp_path, "echo hello\n"))


def test_a_failing_on_tick_does_not_stop_the_run(tmp_path: Path) -> None:
    jf = write_justfile(tmp_path, recipe("verify-slow", "@sleep 1.3", "@echo finished"))
    calls: list[float] = []

    def broken(elapsed: float) -> None:
        calls.append(elapsed)
        raise BrokenPipeError("terminal went away")

    res = run(tmp_path, jf, "verify-slow", tmp_path, on_tick=broken)
    assert (res.outcome, res.exit_code, res.tail) == ("exited", 0, "finished")
    assert len(calls) == 1


def test_stop_already_set_starts_nothing(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    jf = write_justfile(tmp_path, recipe("verify-a", f"touch {flag}"))
    stop = threading.Event()
    stop.set()
    res = run(tmp_path, jf, "verify-a", tmp_path, stop=stop)
    assert (res.outcome, res.exit_code, res.error) == ("interrupted", None, None)
    time.sleep(0.1)
    assert not flag.exists()


def test_what_a_recipe_runs_includes_its_dependencies_through_aliases_and_modules(
        tmp_path: Path) -> None:
    # `just` names the dependency a signal ended, by its bare name: every recipe it runs for
    # the one asked for is known, whichever way it is asked (an alias, a module's path).
    jf = write_justfile(tmp_path, (
        "alias verify-a := verify-x\nalias verify-m := sub::verify-s\nmod sub\n"
        "verify-x: build && post\n    true\nbuild: gen\ngen:\npost:\nlone:\n"))
    (tmp_path / "sub.just").write_text("verify-s: dep\n    true\ndep:\n")
    found = read_recipes(jf, tmp_path, just=JUST)
    assert found.running("verify-x") == {"verify-x", "build", "gen", "post"}
    assert found.running("verify-a") == {"verify-x", "build", "gen", "post"}
    assert found.running("sub::verify-s") == {"verify-s", "dep"}
    assert found.running("verify-m") == {"verify-s", "dep"}
    assert found.running("lone") == {"lone"}
    assert "sub::verify-s" in found.names and "verify-m" in found.names
