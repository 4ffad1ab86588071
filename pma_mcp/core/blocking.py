"""Running a coroutine that never suspends without an event loop.

Everything that awaits only a BlockingConnection's coroutines (store/sqlite/db.py) finishes
on its first step: a hook runs its handler that way without importing asyncio
(hooks/handlers.py), and the server runs a whole store call on the connection's thread
(store/sqlite/store.py).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_to_end(step: Coroutine[Any, Any, T]) -> T:
    """`step`'s result, run to its end here; RuntimeError if it suspends (it awaited an
    event loop's work: a bug)."""
    try:
        step.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    step.close()
    raise RuntimeError("a call on a blocking store connection waited for an event loop")
