"""The use cases: `MemoryService` is the one facade every face calls."""

from pma_mcp.service.facade import MemoryService

__all__ = ["MemoryService"]
