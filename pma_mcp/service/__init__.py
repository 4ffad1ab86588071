"""The use cases: `MemoryService` is the one facade every face calls (see facade.py)."""

from pma_mcp.service.browse import CHART_PERIODS
from pma_mcp.service.context import Clock
from pma_mcp.service.facade import MemoryService
from pma_mcp.service.recall import MAX_LIMIT, MAX_QUERY_CHARS, MAX_TOKEN_BUDGET

__all__ = ["CHART_PERIODS", "MAX_LIMIT", "MAX_QUERY_CHARS", "MAX_TOKEN_BUDGET", "Clock",
           "MemoryService"]
