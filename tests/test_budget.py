"""Token counting (both paths) and greedy packing."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
import tiktoken

from pma_mcp.config import Settings
from pma_mcp.core import budget
from pma_mcp.core.budget import TiktokenCounter, WordEstimate, pack
from pma_mcp.core.models import Memory, MemoryType, ScoreBreakdown, ScoredMemory
from pma_mcp.service import MemoryService


def tiny_encoding() -> tiktoken.Encoding:
    """A small real tiktoken Encoding (all 256 bytes plus a few merges): no download."""
    ranks = {bytes([b]): b for b in range(256)}
    for piece in (b"me", b"mem", b"or", b"ory"):
        ranks[piece] = len(ranks)
    return tiktoken.Encoding(name="pma-test", pat_str=r" ?\w+| ?[^\s\w]+|\s+",
                             mergeable_ranks=ranks, special_tokens={})


def test_tiktoken_path_counts_with_the_encoding() -> None:
    counter = TiktokenCounter(tiny_encoding())
    assert counter.count("memory") == 2  # "mem" + "ory"
    assert counter.count("<|endoftext|>") > 0  # special-token text is plain text here


def test_word_fallback_is_ceil_words_times_1_3() -> None:
    counter = WordEstimate()
    assert counter.count("") == 0
    assert counter.count("one") == 2
    assert counter.count("a b c d e f g h i j") == 13
    assert counter.count("x " * 7) == math.ceil(7 * 1.3)


async def test_service_stores_the_count_of_its_counter(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "t.db", namespace="ns")
    svc = await MemoryService.open(settings, counter=TiktokenCounter(tiny_encoding()))
    async with svc:
        m = (await svc.add("memory")).memory
        assert m.token_count == 2
        assert (await svc.get(m.id)).token_count == 2


def test_offline_loader_never_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty cache: no file
    monkeypatch.setattr(tiktoken, "list_encoding_names", lambda: ["cl100k_base"])

    def refuse(name: str) -> tiktoken.Encoding:
        raise AssertionError("get_encoding would download")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    assert budget.load_offline_encoding() is None
    assert budget.cl100k_cache_file() == tmp_path / budget.CL100K_CACHE_NAME


def test_corrupt_cache_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / budget.CL100K_CACHE_NAME).write_text("not a tiktoken file")

    def broken(name: str) -> tiktoken.Encoding:
        raise ValueError("hash mismatch")

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    assert budget.load_offline_encoding() is None


def scored(tokens: int, score: float) -> ScoredMemory:
    now = datetime.now(tz=UTC)
    memory = Memory(id=f"{tokens:032x}", namespace="n", content="c",
                    memory_type=MemoryType.EPISODIC, importance=0.5, token_count=tokens,
                    created_at=now, accessed_at=now)
    parts = ScoreBreakdown(semantic_similarity=0, importance=0.5, recency=1,
                           access_frequency=0, composite=score, age_hours=0)
    return ScoredMemory(memory=memory, score=score, breakdown=parts)


def test_pack_is_greedy_in_rank_order_and_skips_what_does_not_fit() -> None:
    # Retrieval hands memories over best first; the pack keeps that order, not the composite's
    # (which may differ from the rank: see scoring.relevance_rank).
    packed = pack([scored(60, 0.5), scored(50, 0.9), scored(30, 0.4), scored(5, 0.2)], 100)
    assert [r.memory.token_count for r in packed.memories] == [60, 30, 5]
    assert packed.total_tokens == 95 and packed.budget_used == pytest.approx(0.95)
    assert pack([], 10).total_tokens == 0
