"""One review world per test process: real runs take seconds, and every module reads it."""

from __future__ import annotations

import pytest
from review_helpers import world_fixture

world = pytest.fixture(scope="session")(world_fixture)
