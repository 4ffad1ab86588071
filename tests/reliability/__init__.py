"""Shared machinery of the reliability tests (issue 6) and of `benchmarks/stress.py`.

- `writer`: a subprocess that writes memories through MemoryService and acknowledges each
  write on stdout only after the call returned (what a crash must never lose).
- `procs`: child environments, a raw JSON-RPC stdio driver, stop-hook invocations.
- `checks`: what a database must satisfy after anything (integrity, FTS agreement, lineage).
- `scenarios`: the concurrency and crash scenarios, sized by the caller (CI or full stress).
- `hostile`: the hostile-input corpus under tests/hostile/ and its runners.
"""
