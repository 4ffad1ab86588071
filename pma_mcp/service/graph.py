"""Tag/entity neighbours: the seed's implicit bipartite graph, answered in SQL.

memory ──tagged_with──> tag, memory ──links_to──> entity. `neighbours(entity)` is every memory
touching that label, plus the other labels those memories carry (ranked by how often they
co-occur), for lateral context beyond keyword matching.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pma_mcp.core.models import Related
from pma_mcp.store import Store

MAX_NEIGHBOURS = 50


async def neighbours(
    store: Store, entity: str, namespaces: Sequence[str], limit: int = MAX_NEIGHBOURS
) -> Related:
    memories = await store.labelled(entity, namespaces, limit)
    counts: Counter[str] = Counter()
    for memory in memories:
        for label in dict.fromkeys([*memory.tags, *memory.linked_entities]):
            if label != entity:
                counts[label] += 1
    nodes = [label for label, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return Related(entity=entity, memories=memories, related_nodes=nodes)
