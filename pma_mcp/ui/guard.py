"""The checks in front of every page of the local browser (an ASGI middleware).

Memories are private text and the browser is one click away from any web page, so:
- the Host header must name the loopback address and our port (a rebinding DNS name that
  points at 127.0.0.1 still carries its own name);
- the per-run token must come with every request: in the URL once (printed on stderr), then
  as an HttpOnly, SameSite=Strict cookie (another site's page cannot send it);
- state changes only by POST carrying the CSRF token of this run (a form field), and only from
  our own origin when the browser says where the request came from;
- no CORS headers ever, and a Content-Security-Policy without scripts: even a memory that
  slipped past escaping could not run.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "pma_ui"
"""Prefix of the session cookie's name; the port follows (cookies ignore ports, so two
browsers on two ports would otherwise overwrite each other's)."""
TOKEN_PARAM = "token"
CSRF_FIELD = "csrf"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
MAX_FORM_BYTES = 256 * 1024
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy",
     b"default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


@dataclass(frozen=True)
class Secrets:
    """This run's session token and CSRF token (fresh at every start)."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie") or ""
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


class Guard:
    """Wraps the app: refuses what fails a check with a plain-text 4xx, changes nothing."""

    def __init__(self, app: ASGIApp, secrets_: Secrets, port: Callable[[], int]) -> None:
        self._app = app
        self._secrets = secrets_
        self._port = port  # read per request: the socket may be bound after the app is built

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _plain(send, *refusal)
            return
        query = dict(parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1")))
        if TOKEN_PARAM in query:  # first visit: move the token into the cookie, out of the URL
            rest = urlencode({k: v for k, v in query.items() if k != TOKEN_PARAM})
            location = same_site(str(scope["path"])) + (f"?{rest}" if rest else "")
            await _redirect(send, location, cookie_name(self._port()), self._secrets.token)
            return
        if scope["method"] == "POST":
            checked = await self._checked_form(scope, receive, send)
            if checked is None:
                return
            receive = checked

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self._app(scope, receive, secured)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        host = (_header(scope, b"host") or "").lower()
        if host not in allowed_hosts(self._port()):
            return 421, "refused: the Host header must be 127.0.0.1 or localhost with this port"
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return 405, "refused: only GET and POST are served"
        query = dict(parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1")))
        if not (_same(query.get(TOKEN_PARAM), self._secrets.token)
                or _same(_cookie(scope, cookie_name(self._port())), self._secrets.token)):
            return 403, "refused: open the URL pma-mcp ui printed (it carries this run's token)"
        origin = _header(scope, b"origin")
        if scope["method"] == "POST" and origin is not None and origin != "null" and (
            origin.removeprefix("http://") not in allowed_hosts(self._port())
        ):
            return 403, "refused: a form from another site"
        return None

    async def _checked_form(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the form body, check its CSRF field, and replay the body to the app."""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_FORM_BYTES:
                await _plain(send, 413, "refused: the form is too large")
                return None
            if not message.get("more_body"):
                break
        form = dict(parse_qsl(body.decode("utf-8", "replace")))
        if not _same(form.get(CSRF_FIELD), self._secrets.csrf):
            await _plain(send, 403, "refused: the form's CSRF token is missing or stale; "
                         "reload the page and submit again")
            return None
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay


async def _plain(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *HEADERS]})
    await send({"type": "http.response.body", "body": text.encode() + b"\n"})


def same_site(path: str) -> str:
    """`path` (decoded, as the request named it) as a Location that can only name a page of
    this site: one leading "/", then everything but plain URL characters percent-encoded, so
    no backslash, tab, newline or second slash reaches the browser to read as "//host"."""
    return "/" + quote(path.lstrip("/\\"), safe="/-._~!$&'()*+,;=:@").lstrip("/")


def cookie_name(port: int) -> str:
    return f"{COOKIE}_{port}"


async def _redirect(send: Send, location: str, name: str, token: str) -> None:
    cookie = f"{name}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send({"type": "http.response.start", "status": 303, "headers": [
        (b"location", location.encode("latin-1", "replace")),
        (b"set-cookie", cookie.encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": b""})
