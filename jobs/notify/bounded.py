"""One outside call held to a deadline: a service that never answers must not hold the run."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

# SPEC "Being told": every call is bounded at 10 s.
CALL_LIMIT = 10.0


def within(seconds: float, call: Callable[[], str | None]) -> str | None:
    """`call()` (None when it delivered, else why not), or why not when it has not returned
    within `seconds`: it is then left to finish on a daemon thread, its own socket timeouts
    ending it, and its answer ignored."""
    answer: list[str | None] = []

    def target() -> None:
        try:
            answer.append(call())
        except Exception as exc:  # a library's fault is a failed delivery, never the run's
            answer.append(f"{type(exc).__name__}: {exc}")

    # The caller's context goes along: what the library logs there carries the run's run_id.
    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(target,), name="loop-jobs-delivery",
                              daemon=True)
    worker.start()
    worker.join(seconds)
    if not answer:
        return f"no answer within {seconds:g}s"
    return answer[0]
