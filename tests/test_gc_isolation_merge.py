"""A namespace's merges depend on its own memories only: another namespace storing the same
words (changing their store-wide document counts) must not change them."""

from __future__ import annotations

from pma_mcp.service import MemoryService

PAIR = ("the invoice export job writes its csv files into the finance reports folder zeta",
        "the invoice export job writes its csv files into the finance reports folder")


async def merges(service: MemoryService) -> list[tuple[str, str]]:
    plan = await service.gc_preview(namespace="/a")
    return sorted((d.memory_id, d.reason) for d in plan.to_merge)


async def test_merges_ignore_other_namespaces_words(service: MemoryService) -> None:
    for text in PAIR:
        await service.add(text, importance=0.5, namespace="/a")
    for i in range(3):
        await service.add(f"unrelated note {i} about gardening", namespace="/a")
    alone = await merges(service)
    assert len(alone) == 1
    for i in range(60):
        await service.add(f"the invoice export job writes its csv files into the finance "
                          f"reports folder number {i}", namespace="/b")
    assert await merges(service) == alone
