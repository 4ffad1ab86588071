"""Restatements merge; near misses (another number, time, name, negation) never do.

Through the service on a real SQLite store (the plan, `gc_run`, and `inspect`'s prediction
of the same merge), `pma-mcp gc --dry-run` as a subprocess, and the rule's candidate keys
against all pairs."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pma_mcp.config import Settings
from pma_mcp.core import consolidation, restatement
from pma_mcp.core.text import analysis, lexicon
from pma_mcp.service import MemoryService
from tests.test_cli import cli_env

SAID = ("The reporting job reads from the replica; when the replica lags, point it at the "
        "primary at 02:00.")
RESTATED = ("The reporting job reads from the replica, and when the replica lags, point it at "
            "the primary at 02:00 UTC.")
NEAR_MISSES = (
    "The reporting job reads from the replica; when the replica lags, point it at the "
    "primary at 03:00.",
    "The reporting job reads from the replica; when the replica lags, never point it at the "
    "primary at 02:00.",
    "Bob: the reporting job reads from the replica; when the replica lags, point it at the "
    "primary at 02:00.",
)


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """The service tests here run on each backend (tests/backends.py): the rule is above the
    store, fed by each backend's term sequences and document counts."""
    return store_settings


async def fill(service: MemoryService) -> tuple[str, str, list[str]]:
    said = (await service.add(SAID, importance=0.7)).memory.id
    restated = (await service.add(RESTATED, importance=0.4)).memory.id
    misses = [(await service.add(text, importance=0.5)).memory.id for text in NEAR_MISSES]
    return said, restated, misses


async def test_a_restatement_merges_into_the_better_copy_and_near_misses_stay(
    service: MemoryService,
) -> None:
    said, restated, misses = await fill(service)
    preview = await service.gc_preview()
    assert [(d.memory_id, d.merge_into) for d in preview.to_merge] == [(restated, said)]
    reason = preview.to_merge[0].reason
    assert reason.startswith(f"restatement of {said[:8]}") and "same numbers" in reason

    # inspect predicts the same merge from the memory's own neighbours, and no other
    inspected = await service.inspect(restated)
    assert (inspected.gc_action, inspected.gc_reason) == ("merge", reason)
    for other in (said, *misses):
        assert (await service.inspect(other)).gc_action != "merge"

    result = await service.gc_run()
    assert result.merged == 1
    assert await service.store.get(restated) is None
    assert {said, *misses} <= {m.id for m in await service.store.namespace_memories(
        service.settings.namespace)}
    assert (await service.store.lineage(restated))[-2].event == "merge"


def test_gc_dry_run_shows_the_restatement_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    settings = Settings(db_path=db, namespace="/work/project")

    async def stored() -> tuple[tuple[str, str, list[str]], int]:
        async with await MemoryService.open(settings) as service:
            ids = await fill(service)
            return ids, await service.store.count()

    (said, restated, _), count = asyncio.run(stored())
    env = cli_env(db, tmp_path / "home", PMA_NAMESPACE="/work/project")
    run = [sys.executable, "-m", "pma_mcp", "gc", "--dry-run"]
    text = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120,
                          check=True).stdout
    assert "1 merge" in text and f"restatement of {said[:8]}" in text, text
    plan = json.loads(subprocess.run([*run, "--json"], env=env, capture_output=True, text=True,
                                     timeout=120, check=True).stdout)
    merges = [d for d in plan["decisions"] if d["action"] == "merge"]
    assert [(d["memory_id"], d["merge_into"]) for d in merges] == [(restated, said)]

    async def counted() -> int:
        async with await MemoryService.open(settings) as service:
            return await service.store.count()

    assert asyncio.run(counted()) == count


def test_specifics_tell_restatements_from_near_misses() -> None:
    agree = restatement.agree
    assert agree(SAID, RESTATED)
    assert agree("Frank does not want it.", "Frank doesn't want it.")
    assert agree("Point it at 02:00.", "point it at 2:00")
    assert agree("The Kafka cluster has 3 brokers.", "Kafka cluster: three brokers.")
    assert not agree("Kafka has 3 brokers.", "Kafka has 5 brokers.")
    assert not agree("at 03:30", "at 03:30 PST")
    assert not agree("Alice owns billing.", "Bob owns billing.")
    assert not agree("Run migrations before deploying.", "Run migrations after deploying.")
    assert not agree("cut on 29 July", "cut on 29 June")
    assert not agree("The CI caches uv.", "The CI never caches uv.")
    assert not agree("Joanna: Bye Nate!", "Nate: Bye Joanna!")
    assert agree("Kafka cluster: 3 brokers.", "The Kafka cluster has 3 brokers.")


def content_terms(text: str) -> set[str]:
    stop = {t for terms in analysis.term_sequences(sorted(lexicon.STOPWORDS)) for t in terms}
    return set(analysis.term_sequences([text])[0]) - stop


def test_restatement_keys_find_every_pair_all_pairs_would() -> None:
    """The prefix keys miss no pair at Jaccard ≥ 4/5, and overlaps are the Jaccard."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(40)]
    texts = []
    for _ in range(300):
        base = rng.sample(words, rng.randrange(3, 12))
        texts.append(" ".join(base))
        if rng.random() < 0.5:  # a variant: one word dropped or added
            variant = base[1:] if rng.random() < 0.5 else [*base, rng.choice(words)]
            texts.append(" the ".join(variant))
    texts = list(dict.fromkeys(texts))
    terms = [content_terms(t) for t in texts]
    doc_freq: dict[str, int] = {}
    for sequence in analysis.term_sequences(texts):
        for term in set(sequence):
            doc_freq[term] = doc_freq.get(term, 0) + 1
    found = consolidation.ContentTerms(analysis.packed_sequences(texts),
                                       consolidation.Vocabulary(doc_freq, len(texts)))
    grouped = {(i, j) for g in found.groups() for i, j in itertools.combinations(sorted(g), 2)}
    expected = {(i, j) for i, j in itertools.combinations(range(len(texts)), 2)
                if min(len(terms[i]), len(terms[j])) >= 3
                and 5 * len(terms[i] & terms[j]) >= 4 * len(terms[i] | terms[j])}
    assert expected and expected <= grouped
    pairs = sorted(grouped)
    overlaps = found.overlaps([i for i, _ in pairs], [j for _, j in pairs])
    assert {p for p, o in zip(pairs, overlaps, strict=True) if o is not None} == expected
    for (i, j), o in zip(pairs, overlaps, strict=True):
        if o is not None:
            assert o == len(terms[i] & terms[j]) / len(terms[i] | terms[j])
