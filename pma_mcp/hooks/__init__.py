"""The Claude Code hooks face: `handlers.main(["<event>"])` reads the hook's JSON on stdin;
transcript.py reads Claude Code's session files; handoff.py (the hook's side) and
listener.py (the server's) let a running MCP server answer a context hook.

Nothing is imported here: a handed-off hook loads handoff.py alone."""
