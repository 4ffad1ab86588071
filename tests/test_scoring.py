"""The seed's composite score, pinned with exact values at fixed clocks."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.errors import ConfigError
from pma_mcp.core.models import Memory, MemoryType
from pma_mcp.core.scoring import Weights, access_frequency, breakdown, recency

T0 = 1_800_000_000.0


def memory(importance: float = 0.5, access_count: int = 0, created: float = T0) -> Memory:
    when = datetime.fromtimestamp(created, tz=UTC)
    return Memory(
        id="a" * 32, namespace="ns", content="x", memory_type=MemoryType.EPISODIC,
        importance=importance, token_count=1, access_count=access_count,
        created_at=when, accessed_at=when,
    )


@pytest.mark.parametrize(
    ("semantic", "importance", "hours", "accesses", "expected"),
    [
        (0.0, 0.5, 0.0, 0, 0.4 * 0 + 0.3 * 0.5 + 0.2 * 1.0 + 0.0),
        (1.0, 1.0, 0.0, 0, 0.4 + 0.3 + 0.2),
        (0.5, 0.2, 10.0, 3, 0.4 * 0.5 + 0.3 * 0.2 + 0.2 * math.exp(-1.0)
         + 0.1 * math.log1p(3) / 10),
        (0.0, 0.0, 1000.0, 0, 0.2 * math.exp(-100.0)),
        (0.0, 0.0, 0.0, 10**6, 0.2 + 0.1 * 1.0),  # access term capped at 1
    ],
)
def test_composite_matches_seed_formula(
    semantic: float, importance: float, hours: float, accesses: int, expected: float
) -> None:
    parts = breakdown(memory(importance, accesses), T0 + hours * 3600, Weights(), semantic)
    assert parts.composite == pytest.approx(expected, abs=1e-12)
    assert parts.age_hours == pytest.approx(hours)
    assert parts.semantic_similarity == semantic
    assert parts.importance == importance


def test_recency_half_life_is_about_seven_hours() -> None:
    assert recency(0) == 1.0
    assert recency(math.log(2) / 0.1) == pytest.approx(0.5)
    assert recency(-5) == 1.0  # a clock skewed into the future counts as new


def test_access_frequency_is_log_normalised_and_capped() -> None:
    assert access_frequency(0) == 0.0
    assert access_frequency(1) == pytest.approx(math.log(2) / 10)
    assert access_frequency(10**9) == 1.0


def test_custom_weights_change_the_score() -> None:
    weights = Weights(semantic=0.0, importance=1.0, recency=0.0, access=0.0)
    assert breakdown(memory(0.7), T0 + 99_999, weights).composite == pytest.approx(0.7)


@pytest.mark.parametrize(
    "values", [(0.5, 0.5, 0.5, 0.5), (0.4, 0.3, 0.2, 0.0), (1.2, -0.2, 0.0, 0.0)]
)
def test_weights_must_sum_to_one_and_lie_in_unit_interval(
    values: tuple[float, float, float, float],
) -> None:
    with pytest.raises(ConfigError):
        Weights(*values)


def test_weights_from_environment() -> None:
    settings = Settings.from_env({"PMA_WEIGHTS": "0.25,0.25,0.25,0.25"})
    assert settings.weights == Weights(0.25, 0.25, 0.25, 0.25)
    with pytest.raises(ConfigError, match=r"PMA_WEIGHTS: .*sum to 1"):
        Settings.from_env({"PMA_WEIGHTS": "0.5,0.5,0.5,0.5"})
    with pytest.raises(ConfigError, match="four"):
        Settings.from_env({"PMA_WEIGHTS": "1"})
