"""The composite score (pure): how relevant, important, fresh and used a memory is.

    composite = w_s·semantic + w_i·importance + w_r·exp(-0.1·age_hours)
                + w_a·min(log1p(access_count) / 10, 1)

with default weights 0.4 / 0.3 / 0.2 / 0.1 (configurable, validated to sum to 1 in
`Weights`). Age counts from creation; `now` is passed in so tests pin exact values.

The composite is what users see and what the collector acts on. Recall with a query orders by
`relevance_rank` instead (see there): relevance first, the other terms deciding among
comparably relevant memories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pma_mcp.core.errors import ConfigError
from pma_mcp.core.models import Memory, ScoreBreakdown

RECENCY_DECAY_PER_HOUR = 0.1
ACCESS_LOG_SCALE = 10.0


@dataclass(frozen=True)
class Weights:
    """Composite-score weights, 0.4 / 0.3 / 0.2 / 0.1 by default; they must sum to 1 so scores
    stay in [0, 1]."""

    semantic: float = 0.4
    importance: float = 0.3
    recency: float = 0.2
    access: float = 0.1

    def __post_init__(self) -> None:
        values = (self.semantic, self.importance, self.recency, self.access)
        if any(not (0.0 <= v <= 1.0) for v in values):
            raise ConfigError(f"score weights must each lie in [0, 1], got {values}")
        if abs(sum(values) - 1.0) > 1e-6:
            raise ConfigError(f"score weights must sum to 1, got {sum(values):.6f} from {values}")


def recency(age_hours: float) -> float:
    """exp(-0.1·age): 1.0 when new, half after ~7 hours. Future timestamps count as new."""
    return math.exp(-RECENCY_DECAY_PER_HOUR * max(age_hours, 0.0))


def access_frequency(access_count: int) -> float:
    """log1p(count)/10 capped at 1: the first accesses matter most."""
    return min(math.log1p(max(access_count, 0)) / ACCESS_LOG_SCALE, 1.0)


CONTEXT_LIFT = 0.25
"""How far importance, recency and access can lift a relevant memory: at most ×(1 + 0.25·0.6)
= ×1.15 with the default weights, so they reorder memories whose similarities lie within ~13%
of each other and never carry a weak match over a clearly better one."""


def relevance_rank(parts: ScoreBreakdown, weights: Weights) -> float:
    """The order of recall results for a query with searchable words:

        rank = semantic · (1 + CONTEXT_LIFT · (w_i·importance + w_r·recency + w_a·access))

    Why not the composite: its `0.2·exp(−0.1·age_hours)` gives every memory saved in the last
    hours up to +0.2, more than the similarity gap between a loosely related fresh turn and the
    old turn that answers the question (LoCoMo replayed at its own dates: R@5 0.34 one minute
    after the last turn against 0.67 a month later). Multiplying keeps the composite's intent —
    among comparably relevant memories the newer, more important, more used one ranks first —
    while the lift is proportional to relevance: a memory that matches nothing gains nothing,
    and one matching half as well cannot catch up. The weights still shape the lift (and
    PMA_WEIGHTS=1,0,0,0 ranks on similarity alone).
    """
    context = (weights.importance * parts.importance + weights.recency * parts.recency
               + weights.access * parts.access_frequency)
    return parts.semantic_similarity * (1.0 + CONTEXT_LIFT * context)


def breakdown(
    memory: Memory, now: float, weights: Weights, semantic: float = 0.0
) -> ScoreBreakdown:
    """Score `memory` at time `now` (epoch seconds) for a query similarity in [0, 1]."""
    return score(memory.importance, memory.created_at.timestamp(), memory.access_count,
                 now, weights, semantic)


def score(
    importance: float,
    created_at: float,
    access_count: int,
    now: float,
    weights: Weights,
    semantic: float = 0.0,
) -> ScoreBreakdown:
    """The composite from raw fields, so candidates are ranked before they are loaded."""
    age = (now - created_at) / 3600.0
    rec = recency(age)
    acc = access_frequency(access_count)
    composite = combine(weights, semantic, importance, rec, acc)
    return ScoreBreakdown(
        semantic_similarity=semantic,
        importance=importance,
        recency=rec,
        access_frequency=acc,
        composite=composite,
        age_hours=age,
    )


def combine(
    weights: Weights, semantic: float, importance: float, recency: float, access: float
) -> float:
    """The composite of its four parts (the collector's column-wise plan adds them here too,
    so its composites are these floats to the last bit)."""
    return (weights.semantic * semantic + weights.importance * importance
            + weights.recency * recency + weights.access * access)
