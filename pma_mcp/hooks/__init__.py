"""The Claude Code hooks face: `main(["<event>"])` reads the hook's JSON on stdin
(handlers.py); transcript.py reads Claude Code's session files."""

from pma_mcp.hooks.handlers import main

__all__ = ["main"]
