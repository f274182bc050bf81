"""Durations as the configuration and the command line give them: finite numbers only."""

from __future__ import annotations

import math

import pytest

from jobs.core.durations import parse_duration


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "nan"])
def test_non_finite_durations_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)
