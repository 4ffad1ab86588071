"""A GC process: `python -m tests.reliability.gc_runner --db PATH --namespace NS`.

Runs one full `gc_run` through `MemoryService` (the layer the CLI and server use) with the real
clock, printing `planning` before it starts and `done <merged>` once the run returned. A test
kills it mid-run to show that a GC cut short between its transactions leaves a valid store.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService
from tests.reliability.procs import settings_from_env


async def run(db: Path, namespace: str) -> None:
    settings = settings_from_env(db, namespace)
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        print("planning", flush=True)
        result = await service.gc_run()
        print(f"done {result.merged}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args()
    asyncio.run(run(args.db, args.namespace))
    sys.exit(0)


if __name__ == "__main__":
    main()
