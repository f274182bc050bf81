"""Whether the recipes tasks name are in their repository's justfile, asked before anything
runs: `--dry-run` and `list` say so, as the run's verdict would (SPEC: "the recipe not in the
justfile — checked before running")."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from jobs.process import justfile as runner


def recipe_problems(root: Path, recipes: Iterable[str], just: str = "just") -> dict[str, str]:
    """Why each recipe named here would fail before it runs (no justfile, an unreadable one, a
    recipe it lacks): one `just` for the whole repository. `list` and `--dry-run` say so."""
    named = sorted(set(recipes))
    if not named:
        return {}
    try:
        justfile = runner.find_justfile(root)
        if justfile is None:
            return dict.fromkeys(named, "no justfile in the repository root")
        known = runner.list_recipes(justfile, root, just=just)
    except runner.JustfileInvalid as exc:
        return dict.fromkeys(named, f"the justfile cannot be read: {exc.message}")
    except runner.RecipeError as exc:
        return dict.fromkeys(named, f"just cannot list the recipes: {exc}")
    return {r: f"the justfile has no recipe {r}" for r in named if r not in known}
