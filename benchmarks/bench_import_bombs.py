"""Peak memory of `pma-mcp import --from …` on hostile inputs, beside a small honest import.

    uv run python -m benchmarks.bench_import_bombs [--keep DIR]

Each case is built in a temporary folder (sparse files and repeated compressed blocks, so
building a gigabyte-sized bomb takes well under a second and little disk), then imported by a
fresh `pma-mcp` process started from a fresh probe process, whose
`getrusage(RUSAGE_CHILDREN).ru_maxrss` is that import's peak resident memory. The floor is the
same measurement for a three-record mem0 import: what any import costs. tests/test_hostile_files.py
asserts every peak stays under PEAK_LIMIT_MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PEAK_LIMIT_MB = 300
_A_MEGABYTE = b"a" * (1 << 20)
_PROBE = (
    "import json, resource, subprocess, sys\n"
    "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(json.dumps([proc.returncode, peak, proc.stdout, proc.stderr]))\n"
)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    fmt: str
    build: Callable[[Path], Path]
    """Writes the input under the folder; returns the PATH to import."""


@dataclass(frozen=True, slots=True)
class Peak:
    returncode: int
    peak_mb: float
    stdout: str
    stderr: str


def _deflate_repeated(megabytes: int, wbits: int) -> bytes:
    """A deflate (wbits -15) or gzip (31) stream of `megabytes` MiB of "a", built from one
    compressed block repeated: after a full flush each block's bytes are the same."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = squeeze.compress(_A_MEGABYTE) + squeeze.flush(zlib.Z_FULL_FLUSH)
    again = squeeze.compress(_A_MEGABYTE) + squeeze.flush(zlib.Z_FULL_FLUSH)
    return first + again * (megabytes - 1) + squeeze.flush()


def gzip_bomb(folder: Path) -> Path:
    """memories.json.gz: 4.5 MB of gzip expanding to 4.5 GiB."""
    path = folder / "memories.json.gz"
    path.write_bytes(_deflate_repeated(4500, 31))
    return path


def zip_bomb(folder: Path) -> Path:
    """An OpenMemory-shaped zip whose memories.json expands to 3.9 GB (sizes as declared)."""
    name = b"memories.json"
    data = _deflate_repeated(3900, -15)
    size = 3900 << 20
    crc = 0  # never reached: the reader stops long before the end of the member
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size,
                        len(name), 0) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data),
                          size, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central),
                      len(local) + len(data), 0)
    path = folder / "memories_export_dev.zip"
    path.write_bytes(local + data + central + end)
    return path


def claude_mem_generated(folder: Path) -> Path:
    """A claude-mem database of a few KB whose table computes a 900 MB column."""
    path = folder / "claude-mem.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE observations (id INTEGER PRIMARY KEY, memory_session_id TEXT, "
                 "project TEXT, type TEXT, title TEXT, narrative TEXT, created_at_epoch INTEGER, "
                 "extra TEXT GENERATED ALWAYS AS (printf('%.*c', 900000000, 'x')) VIRTUAL)")
    conn.execute("INSERT INTO observations (memory_session_id, project, type, title, narrative, "
                 "created_at_epoch) VALUES ('s1', 'acme-api', 'discovery', 'Export retries', "
                 "'The nightly export retries five times with backoff.', 1735689600000)")
    conn.commit()
    conn.close()
    return path


def huge_claude_md(folder: Path) -> Path:
    """A project whose CLAUDE.md is 2 GiB (sparse) after a real first section."""
    project = folder / "project"
    project.mkdir()
    with (project / "CLAUDE.md").open("wb") as handle:
        handle.write(b"# Conventions\n\nMoney amounts are integer cents, never floats.\n\n")
        handle.truncate(2 << 30)
    return project


def one_line_jsonl(folder: Path) -> Path:
    """An mcp-memory file: one line of about 1 GB (sparse), then one real entity line."""
    path = folder / "memory.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"type":"entity","name":"x","entityType":"t","observations":["')
        handle.seek(999_000_000)
        handle.write(b'"]}\n' + json.dumps({
            "type": "entity", "name": "billing", "entityType": "service",
            "observations": ["Invoices are rendered as PDF by the billing service."],
        }).encode() + b"\n")
    return path


def small_mem0(folder: Path) -> Path:
    """The floor: three ordinary mem0 records."""
    path = folder / "mem0.json"
    path.write_text(json.dumps({"results": [
        {"id": str(n), "memory": f"Ordinary remembered fact number {n} about the project."}
        for n in range(3)]}))
    return path


FLOOR = Case("floor: 3-record mem0 import", "mem0", small_mem0)
CASES = (
    Case("gzip bomb (4.5 MB → 4.5 GiB)", "mem0", gzip_bomb),
    Case("zip bomb (3.9 MB → 3.9 GiB)", "mem0", zip_bomb),
    Case("claude-mem 900 MB generated column", "claude-mem", claude_mem_generated),
    Case("2 GiB CLAUDE.md", "claude-code", huge_claude_md),
    Case("1 GB one-line JSONL", "mcp-memory", one_line_jsonl),
)


def env_for(folder: Path) -> dict[str, str]:
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"HOME": str(home), "PMA_DB_PATH": str(folder / "store.db"),
                "PMA_NAMESPACE": "/home/dev/acme-api", "CLAUDE_CONFIG_DIR": str(home / ".claude")})
    return env


def measure(case: Case, folder: Path) -> Peak:
    """Build the case in `folder` and import it in a child of a fresh probe process."""
    folder.mkdir(parents=True, exist_ok=True)
    path = case.build(folder)
    argv = [sys.executable, "-m", "pma_mcp", "import", "--from", case.fmt, str(path)]
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], env=env_for(folder),
                         capture_output=True, text=True, timeout=600, check=True).stdout
    code, peak_kib, stdout, stderr = json.loads(out)
    return Peak(int(code), int(peak_kib) / 1024, stdout, stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the cases here and leave them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        floor = measure(FLOOR, base / "floor")
        print(f"{'case':<40} {'peak MB':>8}  {'exit':>4}  outcome")
        print(f"{FLOOR.name:<40} {floor.peak_mb:8.1f}  {floor.returncode:>4}  "
              f"{floor.stdout.strip().splitlines()[-1][:60]}")
        for number, case in enumerate(CASES):
            peak = measure(case, base / f"case{number}")
            said = (peak.stdout.strip() or peak.stderr.strip()).splitlines()
            print(f"{case.name:<40} {peak.peak_mb:8.1f}  {peak.returncode:>4}  "
                  f"…{(said[-1] if said else '')[-100:]}")
        print(f"limit: every case under {PEAK_LIMIT_MB} MB")


if __name__ == "__main__":
    main()
