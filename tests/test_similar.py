"""What `remember` says a new memory repeats (core/similar.py): the rare terms it is looked up
by, and the answer in a store where most of its words are common, on a real SQLite file."""

from __future__ import annotations

import math
import random

from pma_mcp.core import similar
from pma_mcp.service import MemoryService


def test_probe_reaches_every_memory_holding_most_of_the_new_ones_terms() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 30)
        doc_freq = {f"t{i}": rng.choice([1, 1, 2, 3, 5, 8, 20, 40]) for i in range(n)}
        chosen = set(similar.probe(doc_freq))
        held = [t for t, df in doc_freq.items() if df >= 2]
        if sum(doc_freq[t] for t in held) > similar.PROBE_ROWS:
            continue  # the row cap decides instead (next test)
        # any other memory holding STRONG_OVERLAP of the terms holds only held terms
        need = math.ceil(similar.STRONG_OVERLAP * n)
        if need > len(held):
            continue
        for _ in range(20):
            other = set(rng.sample(held, rng.randint(need, len(held))))
            assert other & chosen, (doc_freq, other, chosen)


def test_probe_keeps_to_rare_terms_within_its_row_cap() -> None:
    doc_freq = {"own": 1, "rare": 2, "scarce": 9, "common": 250, "everywhere": 40_000}
    assert similar.probe(doc_freq) == ["rare", "scarce", "common"]
    assert similar.probe({"own": 1, "everywhere": 40_000}) == ["everywhere"]
    assert similar.probe({"own": 1}) == similar.probe({}) == []


async def test_a_restatement_is_found_among_hundreds_sharing_its_common_words(
    service: MemoryService,
) -> None:
    for i in range(400):
        await service.add(f"The deploy pipeline for service {i} runs the test suite first",
                          kind="fact")
    original = await service.add("The deploy pipeline pins terraform at 1.7 for the vault "
                                 "module", kind="fact")
    again = await service.add("Deploy pipeline: terraform pinned at 1.7 for the vault module",
                              kind="fact")
    assert [s.id for s in again.similar] == [original.memory.id]
    common = await service.add("The deploy pipeline for service 401 runs the test suite "
                               "first", kind="fact")
    assert len(common.similar) == similar.MAX_SIMILAR  # its words are all common: still found
    assert all(s.overlap >= similar.STRONG_OVERLAP for s in common.similar)
