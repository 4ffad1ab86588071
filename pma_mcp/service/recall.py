"""Reading by query: ranked results (`search`), the best memories that fit a token budget
(`get_context`, `get_contexts`) and why one memory ranks and fares as it does (`inspect`).

The ranking itself is service/retrieval.py; here are the limits a caller may ask for and the
packing into budgets.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from pma_mcp.core import validation
from pma_mcp.core.budget import pack
from pma_mcp.core.models import ContextPack, Memory, Scope, ScoredMemory
from pma_mcp.core.scoring import breakdown
from pma_mcp.core.text import relevance
from pma_mcp.service import retrieval
from pma_mcp.service.context import Context, bounded_int, unit
from pma_mcp.service.gc import GarbageCollection

if TYPE_CHECKING:
    from pma_mcp.core.records import InspectResult

MAX_LIMIT = 50
MAX_QUERY_CHARS = 10_000
MAX_TOKEN_BUDGET = 1_000_000


class Recall:
    def __init__(self, ctx: Context, gc: GarbageCollection) -> None:
        self._ctx = ctx
        self._gc = gc

    async def search(
        self,
        query: object,
        *,
        namespace: str | None = None,
        memory_type: object = None,
        tags: object = None,
        limit: object = 5,
        min_score: object = 0.0,
        include_global: bool = True,
        touch: bool = True,
        kind: object = None,
    ) -> list[ScoredMemory]:
        """Ranked memories for `query` (None or "" → by composite score alone)."""
        ctx = self._ctx
        return await retrieval.search(
            ctx.store, _query(query), ctx.scope(namespace, include_global, memory_type, tags, kind),
            limit=bounded_int("limit", limit, 1, MAX_LIMIT),
            min_score=unit("min_score", min_score),
            now=ctx.clock(), weights=ctx.settings.weights, touch=touch,
        )

    async def get_context(
        self,
        query: object = "",
        *,
        token_budget: object = 2048,
        namespace: str | None = None,
        include_global: bool = True,
        min_score: object = 0.0,
        touch: bool = True,
        min_similarity: float = 0.0,
        exclude_ids: Collection[str] = (),
    ) -> ContextPack:
        """The best memories that fit `token_budget`, packed greedily by score.

        `min_similarity` is a relevance floor on semantic_similarity alone (the prompt hook's:
        importance or recency must never carry an unrelated memory in); `exclude_ids` are
        left out before packing, so they cost no budget.
        """
        ctx = self._ctx
        budget = bounded_int("token_budget", token_budget, 1, MAX_TOKEN_BUDGET)
        text = _query(query)
        scope = ctx.scope(namespace, include_global, None, None)
        floor = unit("min_similarity", min_similarity)
        now = ctx.clock()
        # Excluded memories can take at most len(exclude_ids) places of the pool.
        pool = min(relevance.CANDIDATES, _pack_pool(budget) + len(exclude_ids))
        ranked = await retrieval.search(
            ctx.store, text, scope, limit=pool,
            min_score=unit("min_score", min_score), now=now,
            weights=ctx.settings.weights, touch=False, min_similarity=floor,
        )
        if exclude_ids:
            ranked = [r for r in ranked if r.memory.id not in exclude_ids]
        packed = pack(ranked, budget)
        if touch and packed.memories:
            await ctx.store.touch([r.memory for r in packed.memories], now, reason="in context")
        return packed

    async def get_contexts(
        self,
        query: object,
        budgets: Mapping[str, int],
        *,
        min_similarity: float = 0.0,
        exclude_ids: Collection[str] = (),
        exclude: Callable[[Memory], bool] | None = None,
    ) -> dict[str, ContextPack]:
        """One retrieval over several namespaces, each packed into its own token budget.

        The prompt hook's split (project 1,400 tokens + global 600) in one index pass rather
        than one per namespace: about 40% less time. Nothing is touched; the caller counts
        an access for what it really shows. Memories in `exclude_ids` or for which `exclude`
        holds are left out before packing (they cost no budget).
        """
        ctx = self._ctx
        limits = {
            validation.namespace(name): bounded_int("token_budget", budget, 1, MAX_TOKEN_BUDGET)
            for name, budget in budgets.items()
        }
        ranked = await retrieval.search(
            ctx.store, _query(query), Scope(namespaces=tuple(limits)),
            limit=relevance.CANDIDATES, now=ctx.clock(), weights=ctx.settings.weights,
            touch=False, min_similarity=unit("min_similarity", min_similarity),
        )
        kept = [r for r in ranked if r.memory.id not in exclude_ids
                and (exclude is None or not exclude(r.memory))]
        return {
            name: pack([r for r in kept if r.memory.namespace == name], budget)
            for name, budget in limits.items()
        }

    async def inspect(
        self, memory_id: object, *, query: object = None, namespace: str | None = None
    ) -> InspectResult:
        """One memory with its score parts (for `query`, if given), the decision the next full
        GC run would make for it, and its lineage."""
        from pma_mcp.core.records import InspectResult  # not built on a hook's path

        ctx = self._ctx
        visible = ctx.visible(namespace)
        memory = await ctx.resolve(memory_id, visible)
        now = ctx.clock()
        text = _query(query)
        semantic = (await retrieval.similarity_of(ctx.store, text, memory, visible)
                    if text else 0.0)
        decision = await self._gc.predict(memory, now)
        predicted_tier = memory.memory_type if decision.action == "keep" else decision.to_tier
        return InspectResult(
            memory=memory,
            breakdown=breakdown(memory, now, ctx.settings.weights, semantic),
            gc_action=decision.action,
            gc_reason=decision.reason,
            predicted_tier=predicted_tier,
            lineage=await ctx.store.lineage(memory.id),
        )


def _pack_pool(token_budget: int) -> int:
    """How many ranked memories to consider for a budget (assumes ≥ 20 tokens per memory)."""
    return max(10, min(relevance.CANDIDATES, token_budget // 20))


def _query(value: object) -> str:
    if value is None:
        return ""
    return validation.text_field("query", value, max_chars=MAX_QUERY_CHARS, allow_empty=True)
