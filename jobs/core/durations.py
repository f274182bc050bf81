"""Durations as a configuration writes them (`90s`, `30m`, `2h`, a number of seconds; `30d`
for a retention), read and written back."""

from __future__ import annotations

import math
import re

# Compiled on first use (re's own cache keeps them): a command that reads no duration pays nothing.
_DURATION = r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
# The longest duration taken. A limit is added to the clock (a claim's expiry, a deadline) and an
# output retention subtracted from it; far beyond this, datetime and the system calls overflow
# and every run would fail where the configuration should have been refused.
MAX_DURATION = 100 * 365 * 86400.0
_RETENTION = r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$"


def parse_duration(text: object) -> float:
    """`90s`, `30m`, `2h` or a number of seconds; raises ValueError on anything else."""
    if isinstance(text, bool):
        raise ValueError("not a duration")
    if isinstance(text, int | float):
        value = float(text)
    elif isinstance(text, str):
        m = re.match(_DURATION, text)
        if not m:
            raise ValueError("not a duration")
        value = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise ValueError("not a duration")
    # YAML reads `.inf` and `.nan` as floats: neither is a limit a recipe can be held to.
    if not math.isfinite(value) or value <= 0:
        raise ValueError("a duration must be positive and finite")
    if value > MAX_DURATION:
        raise ValueError("a duration must be at most 100 years")
    return value


def parse_retention(text: object) -> float:
    """`output_retention`: like a duration, and also in days (`30d`)."""
    if isinstance(text, str):
        m = re.match(_RETENTION, text)
        if m and m.group(2) == "d":
            return parse_duration(float(m.group(1)) * 86400.0)
    return parse_duration(text)


def format_duration(seconds: float) -> str:
    """The shortest exact spelling of a duration, as a user would write it in the config."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"
