"""How many examples a property test draws: a quarter of its full count by default, every one
with LOOP_JOBS_THOROUGH=1 (`make test-thorough`).

The full counts cost a quarter of the suite's CPU time; a quarter still draws hundreds of cases
per property each run, and Hypothesis replays any failing example it has seen (.hypothesis/)
first.
"""

from __future__ import annotations

import os

THOROUGH = os.environ.get("LOOP_JOBS_THOROUGH", "") not in ("", "0")


def examples(full: int) -> int:
    return full if THOROUGH else max(25, full // 4)
