"""Entry point: parse argv, set up stderr logging, dispatch.

    pma-mcp                      serve MCP over stdio (what MCP client configs run)
    pma-mcp serve                the same, explicitly
    pma-mcp hook <event>         a Claude Code hook: JSON on stdin, JSON (or nothing) on stdout
    pma-mcp ui [--port N]        the local memory browser (a web page on 127.0.0.1)
    pma-mcp <command> ...        commands for people (stats, search, inspect, gc, ...)

Each branch imports only what it needs: the hook path must stay free of mcp and
scikit-learn, and the server's heavy imports must not slow a hook down.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] == "serve":
        from pma_mcp.server import main as serve_main

        return serve_main(args[1:])
    if args[0] == "hook":
        import gc

        gc.disable()  # a hook is a short process: no cyclic collection (hooks/handlers.py)
        from pma_mcp.hooks import main as hook_main

        return hook_main(args[1:])
    if args[0] == "ui":
        from pma_mcp.ui.web import main as ui_main

        return ui_main(args[1:])
    from pma_mcp.commands import main as commands_main

    return commands_main(args)
