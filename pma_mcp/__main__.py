"""`python -m pma_mcp` — the same entry point as the `pma-mcp` command."""

from pma_mcp.cli import main

raise SystemExit(main())
