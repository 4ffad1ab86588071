"""Memories best-scored first without a query, read through bounds: the one algorithm behind
every backend's `tier_facts_by_score` (inspect's bounded read).

No index can order by a score that moves with `now`, so the score is bounded instead: a
memory older than RECENT_HOURS gets at most w_r·exp(−0.1·RECENT_HOURS) from recency, and none
more from access than the namespace's most accessed memory. The few younger memories are read
whole; all the others a page at a time in descending (importance, seq), so each page bounds
what any unread one can score: w_i·importance + those two maxima. A row is yielded once
nothing unread can outscore it: best first, newest first on a tie, lazily, so a caller that
has seen enough stops early. A backend supplies the reads (its SQL mirrors `scoring.score`
only to order and filter rows; callers rescore with scoring.py).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pma_mcp.core.scoring import Weights

RECENT_HOURS = 48.0
"""Memories younger than this are read whole (recency can still lift them)."""
PAGE = 1_024
"""Older memories read per page."""

Row = TypeVar("Row")


@dataclass(frozen=True, slots=True)
class Scored(Generic[Row]):
    """A row with what the read orders it by."""

    score: float
    seq: int
    importance: float
    row: Row


After = tuple[float, int] | None
"""(importance, seq) of the last row of the previous page; None for the first page."""
ReadPage = Callable[[float, After], Awaitable[Sequence[Scored[Row]]]]
"""Up to PAGE older memories with importance ≥ the given floor, below `After` in
(importance DESC, seq DESC) order, that reach the thresholds."""


def recent_since(now: float) -> float:
    return now - RECENT_HOURS * 3600.0


async def best_first(
    recent: Sequence[Scored[Row]],
    most_accesses: int,
    weights: Weights,
    at_least: float,
    read_page: ReadPage[Row],
) -> AsyncGenerator[Row, None]:
    """Rows of `recent` (memories since `recent_since`) and of the pages, best first."""
    heap: list[tuple[float, int, int, Row]] = []  # (−score, −seq, tie-breaker, row)
    count = 0
    for item in recent:
        heap.append((-item.score, -item.seq, count, item.row))
        count += 1
    heapq.heapify(heap)
    slack = (weights.recency * math.exp(-0.1 * RECENT_HOURS)
             + weights.access * min(math.log1p(max(most_accesses, 0)) / 10.0, 1.0))
    # Below this importance no older memory can reach at_least.
    lowest = ((at_least - slack) / weights.importance - 1e-9 if weights.importance > 0
              else -math.inf)
    after: After = None
    bound = math.inf  # what an unread older memory can score at most
    while True:
        while heap and (-heap[0][0] > bound + 1e-9 or bound == -math.inf):
            yield heapq.heappop(heap)[3]
        if bound == -math.inf:
            return
        page = await read_page(max(lowest, -1.0), after)
        for item in page:
            heapq.heappush(heap, (-item.score, -item.seq, count, item.row))
            count += 1
        if len(page) < PAGE:
            bound = -math.inf
        else:
            after = (page[-1].importance, page[-1].seq)
            bound = weights.importance * after[0] + slack
            if bound < at_least:
                bound = -math.inf
