"""`pma-mcp ui`: a local memory browser, and the same view as an MCP App.

web      the Starlette app and `main` (uvicorn on 127.0.0.1, a per-run token)
guard    the request checks every page goes through (token, Host, CSRF, headers)
pages    HTML for each view, pure functions of service results; every memory text escaped
"""
