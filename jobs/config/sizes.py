"""Sizes in the configuration (`output_limit: 16MiB`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

DEFAULT_OUTPUT_LIMIT = 16 << 20
MIN_OUTPUT_LIMIT = 4 << 10  # room for the failure summary's 2 KB of tail, and a head
MAX_OUTPUT_LIMIT = 1 << 40
_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "K": 1 << 10, "M": 1 << 20,
          "G": 1 << 30}


def parse_size(value: object) -> int:
    """Bytes from `16MiB`, `500KB`, `2G` (binary) or a whole number of bytes; ValueError else."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 16MiB, 500KB or a number of bytes")
    if isinstance(value, int):
        size = value
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
        unit = m.group(2).upper() if m else ""
        if m is None or unit not in _UNITS:
            raise ValueError("expected a size such as 16MiB, 500KB or a number of bytes")
        size = int(float(m.group(1)) * _UNITS[unit])
    if not MIN_OUTPUT_LIMIT <= size <= MAX_OUTPUT_LIMIT:
        raise ValueError(f"must be between {MIN_OUTPUT_LIMIT} bytes (4KiB) and 1TiB")
    return size


def size_of(data: Mapping[str, object], key: str, default: int,
            fail: Callable[[str, object, str], Exception]) -> int:
    """The size `data` holds for `key` (else `default`); `fail(key, value, problem)` raised."""
    if key not in data:
        return default
    try:
        return parse_size(data[key])
    except ValueError as exc:
        raise fail(key, data[key], str(exc)) from None

