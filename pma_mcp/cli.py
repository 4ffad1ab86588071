"""Entry point: parse argv, set up stderr logging, dispatch.

    pma-mcp                      serve MCP over stdio (what MCP client configs run)
    pma-mcp serve                the same, explicitly
    pma-mcp hook <event>         a Claude Code hook: JSON on stdin, JSON (or nothing) on stdout
    pma-mcp ui [--port N]        the local memory browser (a web page on 127.0.0.1)
    pma-mcp <command> ...        commands for people (stats, search, inspect, gc, ...)

Each branch imports only what it needs: the hook path must stay free of mcp and
scikit-learn, and the server's heavy imports must not slow a hook down. A context hook is
first offered to a running server (hooks/handoff.py), before anything else is imported.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] == "serve":
        return _serve(args[1:])
    if args[0] == "hook":
        return _hook(args[1:])
    if args[0] == "ui":
        from pma_mcp.ui.web import main as ui_main

        return ui_main(args[1:])
    from pma_mcp.commands import main as commands_main

    return commands_main(args)


def _serve(args: list[str]) -> int:
    """The MCP server, with the hooks' socket beside it (hooks/listener.py)."""
    from pma_mcp.hooks import listener
    from pma_mcp.server import main as serve_main

    def answer(request: listener.Request) -> listener.Reply | None:
        from pma_mcp.hooks.handlers import serve  # on the first hook, not at start

        return serve(request)

    return serve_main(args, beside=lambda warn: listener.listening(answer, warn))


def _hook(args: list[str]) -> int:
    """A hook answered by a running server when one can (hooks/handoff.py), else here."""
    import gc

    gc.disable()  # a hook is a short process: no cyclic collection (hooks/handlers.py)
    stdin = None
    if len(args) == 1 and not args[0].startswith("-") and args[0] != "help":
        from pma_mcp.hooks import handoff

        stdin = handoff.read_stdin()
        answer = None
        if stdin is not None and len(stdin) <= handoff.MAX_INPUT_BYTES:
            answer = handoff.ask_server(args[0], stdin)
        if answer is not None:
            handoff.emit(sys.stdout, answer[0])
            handoff.emit(sys.stderr, answer[1])
            gc.freeze()  # as handlers._skip_final_collection
            return 0
    from pma_mcp.hooks.handlers import main as hook_main

    return hook_main(args, stdin)

