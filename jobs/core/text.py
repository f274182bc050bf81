"""Text as both programs report it: one line of what went wrong."""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The line of an exception's message that says what went wrong (drivers and git run over
    several lines, SQLAlchemy adds a link); its type's name when it says nothing."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
