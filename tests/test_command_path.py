"""Issue 13 item 3: each command loads only what it uses, and `--version` is cheap.

Checked in a fresh interpreter per command (the modules a process holds after the command ran),
so an import added at the top of a shared module shows up here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from verify_helpers import ROOT, make_verify_repo

PROBE = """
import contextlib, io, sys
from jobs.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
held = sorted(sys.modules)
import json  # after: json imports re
print(json.dumps(held))
"""
HEAVY = ("sqlalchemy", "structlog", "git", "psutil", "apscheduler", "github")
# Modules the command path does without (each costs start-up milliseconds): PyYAML for a
# configuration in the common shapes (jobs.config.fast), dataclasses and inspect (the records are
# NamedTuples), shutil (argparse's help width), socket (the host name), signal (only `run` holds
# stop signals, and it brings enum).
NOT_ON_THE_PATH = ("yaml", "dataclasses", "inspect", "shutil", "socket", "signal")
ORCHESTRATION = ("jobs.verify.run", "jobs.ledger.store", "jobs.process.recipe", "jobs.verify.task",
                 "jobs.verify.commit", "jobs.verify.context", "jobs.git.repo", "jobs.core.logs")


def loaded(*argv: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return set(json.loads(proc.stdout.splitlines()[-1]))


def roots(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_list_loads_no_ledger_git_logging_or_orchestrator(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    # Nothing due on that day: no justfile needs asking either.
    modules = loaded("list", "--json", "--config", str(repo.config_path), "--today",
                     "2026-10-30")
    assert not roots(modules) & set(HEAVY), sorted(roots(modules) & set(HEAVY))
    assert not modules & set(ORCHESTRATION), sorted(modules & set(ORCHESTRATION))
    assert not roots(modules) & set(NOT_ON_THE_PATH), sorted(roots(modules) & set(NOT_ON_THE_PATH))
    # `timezone: UTC` needs no zone database (zoneinfo costs an empty list a tenth of its time)
    assert "zoneinfo" not in modules


def test_a_text_listing_loads_no_json(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    # Nothing due that day: with a due task, `list` reads `just --dump`'s JSON to say whether
    # its recipe is in the justfile (test_list_with_due_tasks_asks_just_…).
    modules = loaded("list", "--config", str(repo.config_path), "--today", "2026-10-30")
    assert "jobs.commands.list" in modules
    assert "json" not in modules


def test_list_with_due_tasks_asks_just_but_loads_no_recipe_runner(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[1, 2])
    modules = loaded("list", "--json", "--config", str(repo.config_path), "--today",
                     "2026-11-30")
    # Whether each due task's recipe is in the justfile: one `just --dump`, nothing more.
    assert "jobs.process.justfile" in modules
    assert not roots(modules) & set(HEAVY), sorted(roots(modules) & set(HEAVY))
    assert not modules & set(ORCHESTRATION), sorted(modules & set(ORCHESTRATION))


def test_help_and_version_load_nothing_of_the_commands() -> None:
    for argv in (("--help",), ("--version",), ("list", "--help")):
        modules = loaded(*argv)
        assert not roots(modules) & {*HEAVY, "yaml"}, argv
        assert not [m for m in modules if m.startswith("jobs.") and m not in
                    ("jobs.main", "jobs.cached_help", "jobs.cached_help_texts", "jobs.core",
                     "jobs.core.cli", "jobs.core.errors", "jobs.core.version")], argv


@pytest.mark.parametrize("argv", [("--help",), ("-h",), ("list", "--help"), ("review", "-h")])
def test_help_is_kept_text_without_argparse(argv: tuple[str, ...]) -> None:
    # jobs.cached_help prints argparse's own text (tests/test_cached_help.py): argparse and what
    # it imports (re, gettext, locale) were most of what --help cost.
    unwanted = {*NOT_ON_THE_PATH, "argparse", "re", "gettext", "locale", "pathlib", "typing"}
    assert not roots(loaded(*argv)) & unwanted, sorted(roots(loaded(*argv)) & unwanted)


def test_history_does_not_load_the_orchestrator(tmp_path: Path) -> None:
    repo = make_verify_repo(tmp_path, tasks=[])
    modules = loaded("history", "--config", str(repo.config_path))
    assert not modules & {"jobs.verify.run", "jobs.verify.task", "jobs.process.recipe"}


@pytest.mark.parametrize(("module", "prog"), [("jobs.main", "loop-verify"),
                                              ("audit.main", "loop-pi-audit")])
def test_version_prints_the_installed_version(module: str, prog: str) -> None:
    from importlib.metadata import version as installed

    proc = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                          text=True, check=False, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [prog, installed("loop-jobs")], proc.stdout


@pytest.mark.parametrize("columns", [None, "100", "37", "0", "-5", "wide", ""])
def test_help_width_is_the_one_argparse_computes(columns: str | None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`terminal_columns` stands in for shutil.get_terminal_size() (so commands need not import
    shutil): the same width whatever $COLUMNS holds, and the same help text."""
    import argparse
    import shutil

    from jobs.cached_help import terminal_columns
    from jobs.main import build_parser

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    ours = build_parser()
    plain = build_parser()
    plain.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == plain.format_help()


def test_console_entry_exits_quickly_after_list_with_all_output(tmp_path: Path) -> None:
    """`entry` (the console script) skips the interpreter's teardown after `list`: every byte of
    the output still arrives, the exit code is list's, and a reader that goes away early gets
    no traceback."""
    repo = make_verify_repo(tmp_path, tasks=list(range(1, 40)))
    argv = ["list", "--json", "--config", str(repo.config_path), "--today", "2026-11-30"]
    script = "import sys; from jobs.main import entry; sys.argv[1:] = sys.argv[1:]; entry()"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert len(listed["tasks"]) == 39
    with subprocess.Popen([sys.executable, "-c", script, *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as early:
        assert early.stdout is not None and early.stderr is not None
        early.stdout.read(10)
        early.stdout.close()
        err = early.stderr.read().decode()
    assert "Traceback" not in err, err
    bad = subprocess.run([sys.executable, "-c", script, "list", "--config",
                          str(tmp_path / "missing.yaml")], capture_output=True, text=True,
                         check=False, env=env)
    assert bad.returncode == 2, bad.stderr


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["-h"], ["--version"], ["bogus"], ["-", "list"], ["--", "list", "--json"],
    ["list", "--json", "--today", "2026-11-30", "--config", "/nonexistent"], ["list", "--bad"],
    ["list", "-h"], ["run", "--dry-run", "--timeout"], ["install"], ["install", "x"],
    ["uninstall", "systemd", "--print"], ["review", "--format", "pdf"], ["history", "extra"],
    ["-h", "list"], ["list", "run"], ["doctor", "--help"], ["--he"], ["-x", "list"],
])
def test_the_lean_parser_answers_as_the_full_one(
        argv: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`main` builds only the verb the command line starts with (or no options for --help):
    same namespace, same output, same exit as the parser with every verb."""
    import argparse

    from jobs.main import build_parser, lean_parser

    monkeypatch.setenv("COLUMNS", "100")

    def outcome(parser: argparse.ArgumentParser) -> tuple[object, str, str]:
        try:
            result: object = vars(parser.parse_args(argv))
        except SystemExit as exc:
            result = ("exit", exc.code)
        out = capsys.readouterr()
        return result, out.out, out.err

    assert outcome(lean_parser(argv)) == outcome(build_parser())


def test_the_demo_script_needs_nothing_the_install_lacks() -> None:
    # `make demo` runs scripts/demo.py in the project's virtualenv: everything it imports must be
    # installed there (it once imported rich after rich left the dependencies).
    demo = str(ROOT / "scripts" / "demo.py")
    probe = ("import importlib.util; "
             f"spec = importlib.util.spec_from_file_location('demo', {demo!r}); "
             "spec.loader.exec_module(importlib.util.module_from_spec(spec))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


COUNT_COMPILES = """
import builtins, json, sys
real, calls = builtins.compile, []
def counting(source, filename, mode, *args, **kwargs):
    if mode == "eval":  # not a module compiled because its bytecode is not cached yet
        calls.append(str(source)[:60])
    return real(source, filename, mode, *args, **kwargs)
builtins.compile = counting
import jobs.commands.list  # every record type `list` builds is defined on the way
print(json.dumps(calls))
"""


def test_list_compiles_no_source_at_start_up() -> None:
    # A NamedTuple in a module with `from __future__ import annotations` compiles each field's
    # annotation text when the class is made: 45 compiles on each start-up, before any work.
    proc = subprocess.run([sys.executable, "-c", COUNT_COMPILES], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert json.loads(proc.stdout.splitlines()[-1]) == []


def test_main_leaves_the_collector_as_it_found_it(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector is off only while `main` parses and imports (and through `list`): a verb
    that holds the process gets it back, and every way out of `main` restores it."""
    import gc

    from jobs.commands import doctor
    from jobs.main import main

    repo = make_verify_repo(tmp_path, tasks=[1])
    seen: list[bool] = []
    monkeypatch.setattr(doctor, "main", lambda config_path: seen.append(gc.isenabled()) or 0)
    listing = ["list", "--json", "--config", str(repo.config_path), "--today", "2026-11-30"]
    for argv in (listing, ["list", "--config", str(tmp_path / "missing.yaml")], ["doctor"],
                 ["bogus"], ["--help"]):
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                main(argv)
            except SystemExit:
                pass
            finally:
                after = gc.isenabled()
                gc.enable()
            assert after is enabled, (argv, enabled)
    assert seen == [True, False]
    capsys.readouterr()


def test_every_package_init_imports_nothing() -> None:
    """A package's `__init__.py` runs whenever any of its modules is imported: one import there
    would cost every command that touches the package, `--help` and `list` included."""
    import ast

    inits = sorted([*ROOT.glob("jobs/**/__init__.py"), *ROOT.glob("audit/**/__init__.py")])
    assert len(inits) > 10
    for init in inits:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert not [node for node in ast.walk(tree)
                    if isinstance(node, ast.Import | ast.ImportFrom)], init
