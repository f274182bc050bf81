"""What a release-please release commit's subject looks like (SPEC Part 2, rule 1).

Shared by the evidence side, which reads the files of a commit so shaped (their contents, in one
`cat-file --batch`), and the judge, which decides from those contents whether it is a release.
"""

from __future__ import annotations

import re

# `chore(<scope>): release …` or `chore: release …`: anything after `release` (a version in any
# pre-release form, a component and its version, a group name such as `main`).
RELEASE_SUBJECT = re.compile(r"^chore(?:\((?P<scope>[^()]*)\))?: release (?P<rest>\S.*)$")


def is_release_subject(subject: str) -> bool:
    return RELEASE_SUBJECT.match(subject) is not None
