"""Entry point: parse argv, set up stderr logging, dispatch (serve | hook | commands)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("pma-mcp: the MCP server is not built yet\n")
        return 1
    sys.stderr.write(f"pma-mcp: unknown command {args[0]!r}\n")
    return 2
