"""Readers for other memory tools' stores: each turns one format into `ImportItem`s (pure).

One small module per format; `pma_mcp.importing` runs a reader, redacts what it read and
hands the items to the service. A reader never writes and never touches our store; given
the wrong kind of input it raises `FormatError`, which names the format it expected.
"""

from __future__ import annotations

from pma_mcp.importers import claude_code, claude_mem, mcp_memory, mem0
from pma_mcp.importers.base import FormatError, Reader, Source

FORMATS: dict[str, Reader] = {
    "claude-code": claude_code.READER,
    "claude-mem": claude_mem.READER,
    "mcp-memory": mcp_memory.READER,
    "mem0": mem0.READER,
}

__all__ = ["FORMATS", "FormatError", "Reader", "Source"]
