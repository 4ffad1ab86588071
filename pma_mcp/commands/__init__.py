"""The CLI face for people: `main(argv)` (handlers.py), tables and JSON (render.py), files
written safely (outfile.py), and `import --from` (import_from.py)."""

from pma_mcp.commands.handlers import main

__all__ = ["main"]
