"""release-please release commits as data (tests/audit/judge/release_please/): authored in the
shapes real repositories show (Node, Python, Go, Java, Rust; single packages and monorepos), the
attacks built on them, and the genuine shapes the rule refuses. Each file holds a subject, the
tags on the commit, the bot that made the release, and every path the commit changes with its
mode and content before and after (None where absent)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.model import Commit, FileChange

DATA = Path(__file__).parent / "audit" / "judge" / "release_please"


@dataclass(frozen=True)
class Fixture:
    name: str
    subject: str
    tags: tuple[str, ...]
    author: str
    snapshot_bump: bool
    files: tuple[dict[str, Any], ...]

    def changes(self) -> tuple[FileChange, ...]:
        return tuple(FileChange(f["path"], f["mode_before"], f["mode_after"],
                                _blob(f["mode_before"], f["before"]),
                                _blob(f["mode_after"], f["after"])) for f in self.files)

    def commit(self, sha: str = "c" * 40, parent: str = "b" * 40) -> Commit:
        paths = tuple(f["path"] for f in self.files)
        return Commit(sha, (parent,), self.subject, (), paths, (), self.changes())


def _blob(mode: str | None, text: str | None) -> bytes | None:
    return text.encode() if text is not None and mode in ("100644", "100755") else None


def load(kind: str) -> list[Fixture]:
    """`genuine`, `probes` or `misfit`."""
    out = []
    for path in sorted((DATA / kind).glob("*.json")):
        d = json.loads(path.read_text())
        out.append(Fixture(d["name"], d["subject"], tuple(d["tags"]), d["release_author"],
                           d["snapshot_bump"], tuple(d["files"])))
    return out


def fast_import(fx: Fixture, branch: str = "refs/heads/main") -> bytes:
    """A `git fast-import` stream: the files as they were (one commit), then the release commit
    (`:2`) on `branch`, and a lightweight tag for each of the fixture's tags."""
    def data(text: str) -> bytes:
        raw = text.encode()
        return b"data %d\n%s\n" % (len(raw), raw)

    def put(mode: str, path: str, content: str) -> bytes:
        if mode == "160000":
            return f"M 160000 {content} {path}\n".encode()
        return f"M {mode} inline {path}\n".encode() + data(content)

    out = [f"commit {branch}\nmark :1\ncommitter T <t@example.invalid> 1700000000 +0000\n"
           .encode(), data("as it was")]
    out += [put(f["mode_before"], f["path"], f["before"]) for f in fx.files
            if f["mode_before"] is not None]
    out.append(f"commit {branch}\nmark :2\ncommitter T <t@example.invalid> 1700000100 +0000\n"
               .encode())
    out.append(data(fx.subject))
    out.append(b"from :1\n")
    for f in fx.files:
        if f["mode_after"] is None:
            out.append(f"D {f['path']}\n".encode())
        elif (f["mode_after"], f["after"]) != (f["mode_before"], f["before"]):
            out.append(put(f["mode_after"], f["path"], f["after"]))
    out += [f"reset refs/tags/{t}\nfrom :2\n\n".encode() for t in fx.tags]
    return b"".join(out)


def build(fx: Fixture, repo: Path, *, loose: bool = False) -> tuple[str, str]:
    """A repository holding the fixture's release commit on main: (before, after) tips. `loose`:
    every object in a file of its own (as a test that edits one needs)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    limit = ["-c", "fastimport.unpackLimit=100000"] if loose else []
    subprocess.run(["git", "-C", str(repo), *limit, "fast-import", "--quiet"],
                   input=fast_import(fx), check=True)
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "main~1", "main"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]
