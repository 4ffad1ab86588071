"""The MCP face: `build_server(settings)` and `main` (stdio); tool outputs in outputs.py."""

from pma_mcp.server.mcp import build_server, main

__all__ = ["build_server", "main"]
