"""A writer process: `python -m tests.reliability.writer --db PATH --namespace NS ...`.

Writes memories through `MemoryService` (the layer the CLI and hooks use) and prints one line
per acknowledged write *after the call returned*, flushed at once:

    ready                 the store is open
    ack <id>              this memory's write returned (it must survive any later crash)
    done                  every write returned
    error <message>       a write raised (the caller counts it as a failure); exit 1

`--mode add` stores one memory per call; `--mode import` stores batches through
`import_document` (one transaction per batch) and acknowledges every id of a batch after it
returned. Content is unique per (label, index), so nothing is deduplicated away.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService
from tests.reliability.procs import settings_from_env

WORDS = (
    "export retries webhook billing cache migration schema index rollback deploy token "
    "queue worker timeout backoff jitter replica snapshot vacuum checkpoint latency"
).split()


def content_for(label: str, i: int) -> str:
    """Distinct, searchable text for write `i` of writer `label`."""
    words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12))
    return f"{label} write {i}: the {words} decision was recorded for later sessions"


def record_for(label: str, i: int, namespace: str) -> dict[str, Any]:
    now = datetime.now(tz=UTC).isoformat()
    content = content_for(label, i)
    return {
        "id": uuid.uuid4().hex, "namespace": namespace, "content": content,
        "memory_type": "semantic", "importance": 0.6, "tags": [label, "imported"],
        "linked_entities": [f"{label}.py"], "token_count": len(content.split()),
        "access_count": 0, "created_at": now, "accessed_at": now,
        "metadata": {"writer": label, "i": i}, "session_id": None, "superseded_by": None,
    }


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def run(db: Path, namespace: str, label: str, n: int, mode: str, batch: int) -> int:
    settings = settings_from_env(db, namespace)
    async with await MemoryService.open(settings, counter=WordEstimate(),
                                        merge_near_duplicates=False) as service:
        say("ready")
        i = 0
        while i < n:
            try:
                if mode == "add":
                    added = await service.add(
                        content_for(label, i), importance=0.4 + (i % 5) / 10,
                        tags=[label, f"t{i % 7}"], linked_entities=[f"{label}.py"],
                        metadata={"writer": label, "i": i}, session_id=f"{label}-session",
                    )
                    say(f"ack {added.memory.id}")
                    i += 1
                else:
                    records = [record_for(label, j, namespace) for j in range(i, min(n, i + batch))]
                    await service.import_document({"memories": records})
                    for record in records:
                        say(f"ack {record['id']}")
                    i += len(records)
            except Exception as exc:  # reported, never swallowed: the test counts these
                say(f"error {type(exc).__name__}: {exc}")
                return 1
    say("done")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="writer")
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--mode", choices=("add", "import"), default="add")
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args(argv)
    return asyncio.run(run(args.db, args.namespace, args.label, args.n, args.mode, args.batch))


if __name__ == "__main__":
    sys.exit(main())
