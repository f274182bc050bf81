"""audit.evidence.trees on plain data: tree objects read back, and paths worked out from them."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from audit.evidence.trees import commit_tree, recheck_paths, tree_entries
from audit.model import Commit


def _tree(*entries: tuple[bytes, bytes, str]) -> bytes:
    return b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)


def _name(kind: bytes, body: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(body) + body).hexdigest()


def test_tree_entries_reads_a_tree_and_refuses_what_is_not_one() -> None:
    blob, sub = "ab" * 20, "cd" * 20
    body = _tree((b"100644", b"a.md", blob), (b"40000", b"dir", sub))
    assert tree_entries(body, 20) == {(b"100644", b"a.md", bytes.fromhex(blob)),
                                      (b"40000", b"dir", bytes.fromhex(sub))}
    assert tree_entries(body + b"x", 20) is None  # bytes no entry accounts for
    assert tree_entries(b"junk" + body, 20) is None
    assert tree_entries(_tree((b"100644", b"a", blob), (b"100644", b"a", sub)), 20) is None
    assert tree_entries(b"", 20) == frozenset()


def test_commit_tree_is_the_first_line_only() -> None:
    assert commit_tree(b"tree " + b"a" * 40 + b"\nparent " + b"b" * 40 + b"\n") == "a" * 40
    assert commit_tree(b"parent " + b"b" * 40 + b"\ntree " + b"a" * 40 + b"\n") is None


def _store(*bodies: tuple[bytes, bytes]) -> dict[str, tuple[str, bytes] | None]:
    return {_name(kind, body): (kind.decode(), body) for kind, body in bodies}


def test_recheck_paths_finds_what_each_commit_changes_and_what_git_did_not_say() -> None:
    blob1, blob2, link = _name(b"blob", b"1"), _name(b"blob", b"2"), "12" * 20
    tasks_old = _tree((b"100644", b"t1.md", blob1))
    tasks_new = _tree((b"100644", b"t1.md", blob2), (b"100644", b"t2.md", blob1))
    backlog_old = _tree((b"40000", b"tasks", _name(b"tree", tasks_old)))
    backlog_new = _tree((b"160000", b"pinned", link),
                        (b"40000", b"tasks", _name(b"tree", tasks_new)))
    root_old = _tree((b"40000", b"backlog", _name(b"tree", backlog_old)))
    root_new = _tree((b"40000", b"backlog", _name(b"tree", backlog_new)))
    trees = _store((b"tree", tasks_old), (b"tree", tasks_new), (b"tree", backlog_old),
                   (b"tree", backlog_new), (b"tree", root_old), (b"tree", root_new))
    parent_body = b"tree " + _name(b"tree", root_old).encode() + b"\n"
    parent = _name(b"commit", parent_body)
    child_body = (b"tree " + _name(b"tree", root_new).encode() + b"\nparent " + parent.encode()
                  + b"\n")
    child = _name(b"commit", child_body)
    objects = _store((b"commit", parent_body), (b"commit", child_body))
    reads: list[Sequence[str]] = []

    def read(shas: Sequence[str]) -> Mapping[str, tuple[str, bytes] | None]:
        reads.append(shas)
        return {s: trees.get(s) for s in shas}

    paths = ("backlog/pinned", "backlog/tasks/t1.md", "backlog/tasks/t2.md")
    honest = Commit(child, (parent,), "s", (), paths, gitlinks=("backlog/pinned",))
    assert recheck_paths([honest], objects, read) == {}
    assert len(reads) == 3  # one read per level of the trees, never one per object
    short = Commit(child, (parent,), "s", (), paths[1:])
    assert "do not change the paths git reported" in recheck_paths([short], objects, read)[child]
    no_link = Commit(child, (parent,), "s", (), paths)
    assert child in recheck_paths([no_link], objects, read)
    # Each commit is answered for on its own: one whose trees lie does not taint the other.
    assert set(recheck_paths([honest, short], objects, read)) == {child}
    trees[_name(b"tree", tasks_new)] = None  # edited in the clone: its bytes do not match
    assert "does not match its name" in recheck_paths([honest], objects, read)[child]
    assert "parent" in recheck_paths([honest], {child: objects[child]}, read)[child]
