"""Restatement merges: which pairs the collector merges, before (TF-IDF cosine ≥ 0.85 alone)
and now (near-duplicates or restatements, specifics equal; core/consolidation.py), in one run.

    uv run python -m benchmarks.bench_merge [--locomo locomo_dev.json]
        [--background 300]

1. Pairs: RESTATEMENTS (the same statement in other words: should merge) and NEAR_MISSES
   (nearly the same words, another number, time, date, name, negation or qualifier: must not).
   Each pair is stored through MemoryService.add in its own namespace of a SQLite store, beside
   --background memories of the synthetic corpus (benchmarks.corpus: other words, so they only
   shape document frequencies as a real namespace would). Printed: merges found, wrong merges,
   precision and recall, for the old rule and for `gc_preview` now; then every pair the two
   disagree on.
2. LoCoMo (--locomo): every turn of every conversation stored as benchmarks.locomo stores it,
   then each namespace's merges, before and now, and how many evidence turns (the turns a
   question's answer is in) would be merged into a different statement: must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import locomo
from benchmarks.corpus import Corpus, store_in
from pma_mcp.config import Settings
from pma_mcp.core import collector, consolidation
from pma_mcp.core.models import Memory
from pma_mcp.service import MemoryService, consolidate

RESTATEMENTS: Sequence[tuple[str, str]] = [
    ("When the read replica lags; point it at the primary at 02:00.",
     "When the read replica lags, so point it at the primary at 02:00 UTC."),
    ("The reporting job reads from the replica; when the replica lags, point it at the "
     "primary at 02:00.",
     "The reporting job reads from the replica, and when the replica lags, point it at the "
     "primary at 02:00 UTC."),
    ("The user prefers dark mode in every editor.",
     "User prefers dark mode in every editor they use."),
    ("Run the integration tests with PMA_TEST_POSTGRES=off on laptops.",
     "On laptops, run the integration tests with PMA_TEST_POSTGRES=off."),
    ("Deploys to production happen on Tuesdays after the 10:00 standup.",
     "Production deploys happen on Tuesdays, after the 10:00 standup."),
    ("Alice owns the billing service and reviews every schema migration.",
     "Alice owns the billing service; she reviews every schema migration."),
    ("Use uv for dependency management in this repository, not pip.",
     "In this repository use uv for dependency management, not pip directly."),
    ("The staging database is reset every night at 03:30.",
     "Every night at 03:30 the staging database gets reset."),
    ("Keep line length at 100 characters; ruff enforces it.",
     "Line length is kept at 100 characters and ruff enforces it."),
    ("The API rate limit is 600 requests per minute per token.",
     "API rate limit: 600 requests per minute for each token."),
    ("Bob asked that pull requests stay under 400 changed lines.",
     "Bob asked for pull requests to stay under 400 changed lines."),
    ("The frontend is built with Vite and served by nginx in production.",
     "In production the frontend is built with Vite and served by nginx."),
    ("Never commit secrets; the pre-commit hook scans for AWS keys.",
     "Never commit secrets, since the pre-commit hook scans for AWS keys."),
    ("The nightly backup of the orders database runs at 01:15 and keeps 14 copies.",
     "Nightly backups of the orders database run at 01:15, keeping 14 copies."),
    ("Carol prefers reviews in the morning, before lunch.",
     "Carol prefers getting reviews in the morning before lunch."),
    ("The Kafka cluster has 3 brokers in eu-west-1.",
     "Kafka cluster: 3 brokers, in eu-west-1."),
    ("Feature flags live in LaunchDarkly; remove stale flags after 30 days.",
     "Feature flags are kept in LaunchDarkly, and stale flags are removed after 30 days."),
    ("The mobile app targets iOS 17 and Android 14.",
     "Mobile app targets: iOS 17 and Android 14."),
    ("Dave is on call this week for the payments service.",
     "This week Dave is on call for the payments service."),
    ("The CI pipeline caches the uv environment between runs to save time.",
     "To save time, the CI pipeline caches the uv environment between runs."),
    ("Logs are shipped to Loki and kept for 7 days.",
     "Logs get shipped to Loki and are kept for 7 days."),
    ("The search index is rebuilt whenever the schema version changes.",
     "Whenever the schema version changes the search index gets rebuilt."),
    ("Erin wants the changelog updated in every release pull request.",
     "Erin wants every release pull request to update the changelog."),
    ("Timeouts for the payment gateway are 15 seconds, with 2 retries.",
     "Payment gateway timeouts: 15 seconds with 2 retries."),
    ("The docs site is generated by MkDocs from the docs folder on each merge to main.",
     "On each merge to main, MkDocs generates the docs site from the docs folder."),
    ("Frank does not want auto-formatting on save in the shared editor config.",
     "Frank doesn't want auto-formatting on save in the shared editor config."),
    ("The cache TTL for user profiles is 300 seconds.",
     "User profiles have a cache TTL of 300 seconds."),
    ("Grace maintains the Terraform modules for the networking stack.",
     "The Terraform modules for the networking stack are maintained by Grace."),
]
NEAR_MISSES: Sequence[tuple[str, str]] = [
    ("When the read replica lags, point it at the primary at 02:00.",
     "When the read replica lags, point it at the primary at 03:00."),
    ("The nightly backup of the orders database runs at 01:15 and keeps 14 copies.",
     "The nightly backup of the orders database runs at 01:15 and keeps 7 copies."),
    ("Alice owns the billing service and reviews every schema migration.",
     "Bob owns the billing service and reviews every schema migration."),
    ("Use uv for dependency management in this repository.",
     "Do not use uv for dependency management in this repository."),
    ("Deploys to production happen on Tuesdays after the standup.",
     "Deploys to production happen on Thursdays after the standup."),
    ("Run the database migrations before deploying the API.",
     "Run the database migrations after deploying the API."),
    ("The API rate limit is 600 requests per minute per token.",
     "The API rate limit is 60 requests per minute per token."),
    ("The Kafka cluster has 3 brokers in eu-west-1.",
     "The Kafka cluster has 5 brokers in eu-west-1."),
    ("The Kafka cluster has three brokers in eu-west-1.",
     "The Kafka cluster has five brokers in eu-west-1."),
    ("The mobile app targets iOS 17 and Android 14.",
     "The mobile app targets iOS 16 and Android 14."),
    ("Dave is on call this week for the payments service.",
     "Erin is on call this week for the payments service."),
    ("Logs are shipped to Loki and kept for 7 days.",
     "Logs are shipped to Loki and kept for 30 days."),
    ("The staging database is reset every night at 03:30.",
     "The staging database is reset every night at 03:30 PST."),
    ("Feature flags live in LaunchDarkly; remove stale flags after 30 days.",
     "Feature flags live in LaunchDarkly; never remove stale flags after 30 days."),
    ("Carol prefers reviews in the morning, before lunch.",
     "Carol prefers reviews in the afternoon, after lunch."),
    ("Timeouts for the payment gateway are 15 seconds, with 2 retries.",
     "Timeouts for the payment gateway are 15 seconds, with 3 retries."),
    ("The cache TTL for user profiles is 300 seconds.",
     "The cache TTL for user sessions is 300 seconds."),
    ("Frank wants auto-formatting on save in the shared editor config.",
     "Frank doesn't want auto-formatting on save in the shared editor config."),
    ("The release was cut on 2026-07-29 from main.",
     "The release was cut on 2026-07-30 from main."),
    ("The release was cut on 29 July from main.",
     "The release was cut on 29 June from main."),
    ("Grace maintains the Terraform modules for the networking stack.",
     "Grace maintains the Pulumi modules for the networking stack."),
    ("The frontend is built with Vite and served by nginx in production.",
     "The frontend is built with Webpack and served by nginx in production."),
    ("CPU usage above 80 percent pages the on-call engineer.",
     "CPU usage below 80 percent pages the on-call engineer."),
    ("The search index is rebuilt whenever the schema version changes.",
     "The search index is only rebuilt whenever the schema version changes."),
    ("Keep line length at 100 characters; ruff enforces it.",
     "Keep line length at 120 characters; ruff enforces it."),
    ("The CI pipeline caches the uv environment between runs.",
     "The CI pipeline never caches the uv environment between runs."),
    ("Erin wants the changelog updated in every release pull request.",
     "Erin wants the changelog updated in every release pull request for version 2."),
    ("The meeting with the Acme team is on Monday at 09:00.",
     "The meeting with the Acme team is on Monday at 09:30."),
    ("Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
     "Melanie: I went to the LGBTQ support group yesterday and it was powerful."),
    ("Joanna: Bye Nate! See you at the writing class on Friday.",
     "Nate: Bye Joanna! See you at the writing class on Friday."),
    ("Alice: Bob moved the standup to 09:30 for the whole team.",
     "Bob: Alice moved the standup to 09:30 for the whole team."),
    ("Pull requests need two approvals before merging to main.",
     "Pull requests need one approval before merging to main."),
]


# ------------------------------------------------------------------ the two rules


async def old_merges(service: MemoryService, namespace: str, now: float) -> set[frozenset[str]]:
    """The old rule, for comparison only: lexical neighbours at TF-IDF cosine ≥ 0.85, no
    specifics, no restatements; selected as the plan selects (pairs of ids)."""
    store = service.store
    memories = [m for m in await store.namespace_memories(namespace)
                if m.superseded_by is None]
    vocab = await consolidate.namespace_vocabulary(store, namespace)
    sequences = await store.term_sequences([m.seq for m in memories])
    stored = [sequences.get(m.seq, b"") for m in memories]
    groups, _ = vocab.signatures(stored)
    pairs = sorted({(i, j) for g in groups for i, j in itertools.combinations(sorted(g), 2)})
    cosines = consolidation.Vectors(stored, vocab).cosines([i for i, _ in pairs],
                                                           [j for _, j in pairs])
    edges: list[consolidation.Edge] = [
        (c, memories[i], memories[j], None) for (i, j), c in zip(pairs, cosines, strict=True)
        if c >= consolidation.NEAR_DUPLICATE_COSINE]
    scores = {m.id: collector.gc_score(m, now, collector.WEIGHTS).composite
              for m in memories}
    return {frozenset((p.gone.id, p.keep.id)) for p in consolidation.select(edges, scores)}


async def new_merges(service: MemoryService, namespace: str) -> dict[frozenset[str], str]:
    """The merges `gc_preview` plans now, with their reasons."""
    preview = await service.gc_preview(namespace=namespace)
    return {frozenset((d.memory_id, d.merge_into or "")): d.reason for d in preview.to_merge}


# ------------------------------------------------------------------ 1. the pairs


def rates(found: int, wrong: int, should: int) -> str:
    right = found - wrong
    precision = right / found if found else 1.0
    return (f"{found:>3} merges, {wrong:>2} wrong, precision {precision:.2f}, "
            f"recall {right / should:.2f}")


async def measure_pairs(tmp: Path, background: int) -> None:
    settings = Settings(db_path=tmp / "pairs.db", namespace="/bench/pairs")
    labelled = [(a, b, True) for a, b in RESTATEMENTS] + [(a, b, False) for a, b in NEAR_MISSES]
    now = time.time()
    async with await MemoryService.open(settings) as service:
        ids: list[tuple[str, str, str, bool]] = []
        for k, (a, b, same) in enumerate(labelled):
            namespace = f"/bench/pairs/{k}"
            await store_in(service.settings, Corpus(seed=k).memories(background, namespace, now))
            first = (await service.add(a, namespace=namespace, importance=0.6)).memory.id
            second = (await service.add(b, namespace=namespace, importance=0.5)).memory.id
            ids.append((namespace, first, second, same))
        print(f"{len(RESTATEMENTS)} restatements and {len(NEAR_MISSES)} near misses, each "
              f"pair in its own namespace beside {background} corpus memories")
        results: dict[str, list[tuple[bool, bool]]] = {
            "before (cosine ≥ 0.85)": [], "now (near-duplicate or restatement)": []}
        stray = 0
        for namespace, first, second, same in ids:
            pair = frozenset((first, second))
            old = await old_merges(service, namespace, now)
            new = await new_merges(service, namespace)
            stray += len(old - {pair}) + len(set(new) - {pair})
            results["before (cosine ≥ 0.85)"].append((pair in old, same))
            results["now (near-duplicate or restatement)"].append((pair in new, same))
        for label, outcomes in results.items():
            found = sum(merged for merged, _ in outcomes)
            wrong = sum(merged and not same for merged, same in outcomes)
            print(f"  {label:<38} {rates(found, wrong, len(RESTATEMENTS))}")
        print(f"  merges involving a background memory: {stray}")
        before, after = results.values()
        for (a, b, same), (was, _), (now_merged, _) in zip(labelled, before, after, strict=True):
            if was != now_merged or now_merged != same:
                print(f"    {'restatement' if same else 'near miss':<11} "
                      f"before {'merged' if was else 'kept':<6} now "
                      f"{'merged' if now_merged else 'kept':<6} {a!r} / {b!r}")


# ------------------------------------------------------------------ 2. LoCoMo


async def measure_locomo(tmp: Path, path: Path) -> None:
    convs = locomo.load(path)
    settings = Settings(db_path=tmp / "locomo.db", namespace="locomo")
    now = time.time()
    async with await MemoryService.open(settings) as service:
        backend = locomo.ServiceBackend(service)
        for conv in convs:
            for turn in conv.turns:
                await backend.remember(conv, turn)
        turns = sum(len(c.turns) for c in convs)
        print(f"\nLoCoMo ({path.name}): {len(convs)} conversations, {turns} turns, "
              f"{await service.store.count()} stored (exact repeats are one memory)")
        totals = {"before": [0, 0], "now": [0, 0]}
        shown: list[str] = []
        for conv in convs:
            memories = {m.id: m for m in await service.store.namespace_memories(conv.namespace)}
            evidence = {e for q in conv.questions for e in q.evidence}
            old = await old_merges(service, conv.namespace, now)
            new = await new_merges(service, conv.namespace)
            for label, merges in (("before", old), ("now", set(new))):
                totals[label][0] += len(merges)
                totals[label][1] += sum(bad(memories, pair, evidence) for pair in merges)
            shown.extend(f"    {new[p]}: " + " / ".join(
                repr(memories[i].content[:70]) for i in sorted(p)) for p in new)
        for label, (found, wrong) in totals.items():
            print(f"  {label:<7} {found} merges, {wrong} evidence turns merged into a "
                  "different statement")
        print("\n".join(shown[:10]))


def bad(memories: dict[str, Memory], pair: frozenset[str], evidence: set[str]) -> bool:
    """Whether a merge folds an evidence turn into a different turn."""
    turns = [str(memories[i].metadata.get("dia_id")) for i in pair]
    return len(set(turns)) > 1 and any(t in evidence for t in turns)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=None, help="a LoCoMo file")
    parser.add_argument("--background", type=int, default=300)
    args = parser.parse_args()
    print(locomo.machine())
    with tempfile.TemporaryDirectory(prefix="pma-merge-") as tmp:
        await measure_pairs(Path(tmp), args.background)
        if args.locomo:
            await measure_locomo(Path(tmp), args.locomo)


if __name__ == "__main__":
    asyncio.run(main())
