"""A repository's justfile: where it is (the root's own, never a parent's) and which recipes it
has, from one `just --dump`. Apart from the recipe runner so that `list` asks it without loading
the process-tree machinery."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.process.exe import executable

# `just` takes a folder's file named `justfile` or `.justfile` in any letter case.
JUSTFILE_NAMES = ("justfile", ".justfile")


class RecipeError(Exception):
    """`just` cannot be run or its answer cannot be read: an infrastructure fault."""


# How a command-line parser (clap, for `just`) rejects the arguments themselves.
_USAGE_ERROR = re.compile(r"unexpected argument|wasn't expected|invalid value '[^']*' for '--|"
                          r"unrecognized (option|argument)|^usage:", re.IGNORECASE | re.MULTILINE)


class JustfileInvalid(Exception):
    """`just` ran but rejected the justfile: the verification fails, the infrastructure is fine."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message



def find_justfile(root: Path) -> Path | None:
    """The repository root's own justfile as `just` finds it there (`justfile` or `.justfile`,
    in any letter case); a parent folder's never counts. Two of them is what `just` refuses
    too: `JustfileInvalid`."""
    root = Path(root)
    try:
        names = sorted(entry.name for entry in os.scandir(root)
                       if entry.name.lower() in JUSTFILE_NAMES and entry.is_file())
    except OSError:
        return None
    if len(names) > 1:
        raise JustfileInvalid(f"multiple candidate justfiles found in {root}: "
                              + " and ".join(names))
    return root / names[0] if names else None


def recipe_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a recipe sees: no `JUST_*` overrides, and git never prompts."""
    base = os.environ if env is None else env
    clean = {k: v for k, v in base.items() if not k.startswith("JUST_")}
    clean["GIT_TERMINAL_PROMPT"] = "0"
    return clean


@dataclass(frozen=True)
class Recipes:
    """What one `just --dump` says: every name `just` would accept, and what each one runs."""

    names: frozenset[str]
    # Each name (a recipe's path, an alias) -> the recipes `just` runs for it (itself, its
    # dependencies before and after it, theirs...), by the bare name `just` calls them in its
    # error messages.
    runs: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def running(self, name: str) -> frozenset[str]:
        """The recipes `just <name>` runs, by bare name; at least `name`'s own."""
        return self.runs.get(name, frozenset({name.rpartition("::")[2]}))


def list_recipes(
    justfile: Path, root: Path, *, just: str = "just", timeout: float = 30
) -> frozenset[str]:
    """Every recipe and alias name `just` would accept, from one `--dump` call.

    Recipes of modules appear by their path (`sub::verify-x`); private recipes are included
    because `just` runs them when named.
    """
    return read_recipes(justfile, root, just=just, timeout=timeout).names


def read_recipes(
    justfile: Path, root: Path, *, just: str = "just", timeout: float = 30
) -> Recipes:
    """`list_recipes`, with what each name runs, from the same one `--dump` call."""
    argv = [just, "--justfile", str(justfile), "--working-directory", str(root),
            "--dump", "--dump-format", "json"]
    try:
        env = recipe_env()
        proc = subprocess.Popen(
            argv, executable=executable(just, env), cwd=root, env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        raise RecipeError(_start_failure(just, exc)) from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        # Kill the group, not just `just`: anything holding our pipes would block the drain.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        proc.wait()
        raise RecipeError(f"`{just} --dump` did not answer within {timeout:g}s") from exc
    if proc.returncode < 0:
        raise RecipeError(f"`{just} --dump` was killed by signal {-proc.returncode}")
    if proc.returncode != 0:
        message = stderr.decode("utf-8", errors="replace").strip()
        if _USAGE_ERROR.search(message):
            # `just` did not understand our own command line (an old `just`, or another program
            # of that name): the infrastructure's fault, which must never reopen a task.
            raise RecipeError(f"`{just}` rejected `--dump --dump-format json`: "
                              f"{message.splitlines()[0]}")
        raise JustfileInvalid(message or f"`just --dump` exited {proc.returncode}")
    try:
        dump = json.loads(stdout)
    except ValueError as exc:
        raise RecipeError(f"`{just} --dump` printed something that is not JSON") from exc
    if not isinstance(dump, dict):
        raise RecipeError(f"`{just} --dump` printed an unexpected document")
    return Recipes(frozenset(_names(dump, "")), _runs(dump))


def _names(module: dict[str, Any], prefix: str) -> Iterable[str]:
    for key in ("recipes", "aliases"):
        table = module.get(key)
        if isinstance(table, dict):
            yield from (prefix + name for name in table)
    modules = module.get("modules")
    if isinstance(modules, dict):
        for name, sub in modules.items():
            if isinstance(sub, dict):
                yield from _names(sub, f"{prefix}{name}::")


def _runs(dump: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Each recipe path and alias -> the bare names of every recipe `just` runs for it."""
    deps: dict[str, list[tuple[str, str]]] = {}  # recipe path -> (its module's prefix, name)
    aliases: dict[str, tuple[str, str]] = {}     # alias path -> (its module's prefix, target)

    def walk(module: dict[str, Any], prefix: str) -> None:
        recipes = module.get("recipes")
        if isinstance(recipes, dict):
            for name, body in recipes.items():
                found = body.get("dependencies") if isinstance(body, dict) else None
                deps[prefix + name] = [
                    (prefix, d["recipe"]) for d in (found if isinstance(found, list) else ())
                    if isinstance(d, dict) and isinstance(d.get("recipe"), str)]
        table = module.get("aliases")
        if isinstance(table, dict):
            for name, body in table.items():
                target = body.get("target") if isinstance(body, dict) else None
                if isinstance(target, str):
                    aliases[prefix + name] = (prefix, target)
        modules = module.get("modules")
        if isinstance(modules, dict):
            for name, sub in modules.items():
                if isinstance(sub, dict):
                    walk(sub, f"{prefix}{name}::")

    walk(dump, "")

    def resolve(prefix: str, name: str) -> list[str]:
        # A name is its own module's recipe, else a path from the top; the dump gives an
        # alias of a module's recipe by its bare name: then every recipe of that name.
        for path in (prefix + name, name):
            if path in deps:
                return [path]
        return [path for path in deps if path.endswith("::" + name)] or [name]

    runs: dict[str, frozenset[str]] = {}
    for start in [*deps, *aliases]:
        seen: set[str] = set()
        todo = resolve(*aliases[start]) if start in aliases else [start]
        while todo:
            path = todo.pop()
            if path not in seen:
                seen.add(path)
                for prefix, d in deps.get(path, ()):
                    todo.extend(resolve(prefix, d))
        runs[start] = frozenset(p.rpartition("::")[2] for p in seen)
    return runs


def _start_failure(just: str, exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else just
    return f"cannot start {just}: {exc.strerror or exc} ({where})"
