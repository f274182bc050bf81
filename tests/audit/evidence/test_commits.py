"""audit.evidence.commits on plain data: git's account of a range read back, and the objects that
bear it out checked."""

from __future__ import annotations

import hashlib

from audit.evidence.commits import (
    Details,
    blobs_wanted,
    commit_parents,
    commit_tree,
    file_changes,
    forged_commit,
    parse_details,
    parse_graph,
    roots,
    trees_problem,
)
from audit.model import Commit, FileChange

A, B, C = "a" * 40, "b" * 40, "c" * 40
Z = "0" * 40


def _raw(old_mode: str, new_mode: str, old: str, new: str, status: str, path: str) -> str:
    return f":{old_mode} {new_mode} {old} {new} {status}\0{path}\0"


def test_parse_graph_reads_names_and_parents() -> None:
    assert parse_graph(f"{A} {B} {C}\n{B}\n") == [(A, (B, C)), (B, ())]


def test_parse_details_reads_subjects_trailers_files_and_the_trees_the_diff_went_through() -> None:
    t1, t2, b1, b2, link = "1" * 40, "2" * 40, "3" * 40, "4" * 40, "5" * 40
    text = (f"\0{A}\x1f{B} {C}\x1fMerge\x1f\0\n"
            + _raw("040000", "040000", t1, t2, "M", "backlog")
            + _raw("100644", "100644", b1, b2, "M", "backlog/x.md")
            + f"\0{A}\x1f{B} {C}\x1fMerge\x1f\0\n"
            + _raw("000000", "160000", Z, link, "A", "src/y")
            + f"\0{B}\x1f\x1fchore: release 1.0.0\x1fs1\x1es2\0\n"
            + _raw("000000", "040000", Z, t1, "A", ":odd")
            + _raw("000000", "100644", Z, b1, "A", ":odd/\x1fname")
            + f"\0{C}\x1f\x1fsubject\x1fwith\x1fseparators\0\n")
    got = parse_details(text)
    assert got[A].commit() == Commit(A, (B, C), "Merge", (), ("backlog/x.md", "src/y"),
                                     ("src/y",))
    assert got[A].trees == {t1, t2}
    assert got[B].commit() == Commit(B, (), "chore: release 1.0.0", ("s1", "s2"),
                                     (":odd/\x1fname",))
    assert got[B].trees == {t1}
    assert got[C].commit() == Commit(C, (), None)  # a subject holding our separator: no text


def _name(kind: bytes, body: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(body) + body).hexdigest()


def test_commit_objects_are_read_back_for_their_tree_and_parents() -> None:
    body = f"tree {A}\nparent {B}\nparent {C}\nauthor x\n\nmsg\nparent {Z}\n".encode()
    assert commit_tree(body) == A and commit_parents(body) == (B, C)
    assert commit_tree(f"parent {B}\ntree {A}\n".encode()) is None


def test_a_commit_not_matching_its_name_makes_the_history_untrusted() -> None:
    assert forged_commit([A, B], {A: ("commit", b""), B: ("commit", b"")}) is None
    assert "commit bbbbbbbbbbbb" in (forged_commit([A, B], {A: ("commit", b""), B: None}) or "")


def test_the_trees_a_diff_went_through_must_each_match_their_names() -> None:
    root, parent_root, sub = "1" * 40, "2" * 40, "3" * 40
    child = f"tree {root}\nparent {B}\n".encode()
    objects = {A: ("commit", child), B: ("commit", f"tree {parent_root}\n".encode())}
    details = Details(A, (B,), "task", (), trees={sub})
    why, found = roots(details, objects)
    assert why is None and found == [root, parent_root]
    trees = {root: ("tree", b""), parent_root: ("tree", b""), sub: ("tree", b"")}
    assert trees_problem(details, found, trees) is None
    assert "tree 333333333333" in (trees_problem(details, found, {**trees, sub: None}) or "")
    assert "parent bbbbbbbbbbbb" in (roots(details, {A: objects[A]})[0] or "")


def test_a_releases_files_come_with_their_checked_contents() -> None:
    old, new = _name(b"blob", b"1.0.0\n"), _name(b"blob", b"1.1.0\n")
    details = Details(A, (B,), "chore: release 1.1.0", (), files=[
        ("100644", "100644", old, new, "version.txt"),
        ("100644", "120000", old, "9" * 40, "version.py"),
        ("000000", "100644", Z, new, "CHANGELOG.md")])
    assert blobs_wanted(details) == [old, new, old, new]
    objects = {old: ("blob", b"1.0.0\n"), new: None}
    assert file_changes(details, objects) == (
        FileChange("version.txt", "100644", "100644", b"1.0.0\n", None),
        FileChange("version.py", "100644", "120000", b"1.0.0\n", None),
        FileChange("CHANGELOG.md", None, "100644", None, None))
