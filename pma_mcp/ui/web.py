"""`pma-mcp ui`: the local memory browser, a Starlette app served by uvicorn on 127.0.0.1.

Every page is one or two MemoryService calls rendered by `pages`; nothing here touches SQL.
Requests are serialised (the service runs on one SQLite connection). Pages are bounded:
listings are keyset-paginated, the overview and GC pages use bounded GC windows, search
returns at most MAX_RESULTS. Each response says its server-side time in `Server-Timing`
(benchmarks/bench_ui.py reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from pma_mcp.config import Settings
from pma_mcp.core import validation
from pma_mcp.core.budget import TokenCounter
from pma_mcp.core.errors import (
    ConfigError,
    InvalidInputError,
    NotFoundError,
    PmaError,
    error_line,
)
from pma_mcp.core.export_format import MAX_COUNT, dumps
from pma_mcp.core.models import Browse, GCResult, MemoryType
from pma_mcp.service import Clock, MemoryService
from pma_mcp.ui import pages
from pma_mcp.ui.guard import Guard, Secrets

log = logging.getLogger(__name__)

PAGE_SIZE = 50
MAX_RESULTS = 50
GC_WINDOWS = (200, 1_000, 5_000)
"""How many memories one GC pass of the page plans and applies (the first is the default:
the hooks' share; larger passes see more near-duplicates and cost more)."""
FILTERS = ("q", "kind", "tier", "tag", "entity", "source", "since", "until")

Handler = Callable[[Request, MemoryService], Awaitable[Response]]


class _State:
    def __init__(self, settings: Settings, secrets: Secrets, clock: Clock,
                 counter: TokenCounter | None) -> None:
        self.settings = settings
        self.secrets = secrets
        self.clock = clock
        self.counter = counter
        self.service: MemoryService | None = None
        self.lock = asyncio.Lock()


def build_app(
    settings: Settings,
    secrets: Secrets,
    port: Callable[[], int],
    *,
    clock: Clock = time.time,
    counter: TokenCounter | None = None,
) -> Guard:
    """The browser app behind its Guard; the store opens with the app's lifespan."""
    state = _State(settings, secrets, clock, counter)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        state.service = await MemoryService.open(settings, clock=clock, counter=counter)
        try:
            yield
        finally:
            await state.service.close()

    def route(path: str, handler: Handler, method: str = "GET") -> Route:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            assert state.service is not None
            async with state.lock:
                response = await _answer(handler, request, state.service)
            spent = (time.perf_counter() - started) * 1000
            response.headers["server-timing"] = f"app;dur={spent:.1f}"
            return response

        return Route(path, endpoint, methods=[method])

    views = _Views(state)
    app = Starlette(lifespan=lifespan, routes=[
        route("/", views.overview),
        route("/memories", views.memories),
        route("/memory/{id}", views.memory),
        route("/memory/{id}/forget", views.confirm_forget),
        route("/memory/{id}/forget", views.forget, "POST"),
        route("/memory/{id}/edit", views.edit, "POST"),
        route("/memory/{id}/pin", views.pin, "POST"),
        route("/memory/{id}/supersede", views.supersede, "POST"),
        route("/gc", views.gc),
        route("/gc/apply", views.gc_apply, "POST"),
        route("/export", views.export),
    ])
    return Guard(app, secrets, port)


async def _answer(handler: Handler, request: Request, service: MemoryService) -> Response:
    """The handler's page; a PmaError becomes an error page, anything else a plain 500."""
    try:
        return await handler(request, service)
    except PmaError as err:
        namespace = request.query_params.get("ns") or service.namespace
        status = 404 if isinstance(err, NotFoundError) else 400
        try:
            names = await service.namespaces()
        except PmaError:
            names = []
        return HTMLResponse(pages.error_page(str(err), namespace, names), status_code=status)
    except Exception:
        log.exception("ui: %s %s failed", request.method, request.url.path)
        return PlainTextResponse("internal error; the details are in pma-mcp ui's stderr",
                                 status_code=500)


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form (the only kind our pages send); the Guard checked its CSRF field."""
    return dict(parse_qsl((await request.body()).decode("utf-8", "replace"),
                          keep_blank_values=True))


def _labels(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _day(field: str, text: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise InvalidInputError(field, f"must be a date as YYYY-MM-DD, got {text!r}") from None


def _number(field: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidInputError(field, f"must be a number from 0 to 1, got {_shown(text)}"
                                ) from None


def _shown(text: str) -> str:
    """A rejected value as an error quotes it: short, so the message stays one line."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


class _Views:
    def __init__(self, state: _State) -> None:
        self._state = state

    def _ns(self, request: Request, form: dict[str, str] | None = None) -> str:
        value = (form or {}).get("ns") or request.query_params.get("ns")
        return value or self._state.settings.namespace

    async def overview(self, request: Request, service: MemoryService) -> Response:
        ov = await service.overview(namespace=self._ns(request))
        return HTMLResponse(pages.overview(ov, await service.namespaces()))

    async def memories(self, request: Request, service: MemoryService) -> Response:
        ns = self._ns(request)
        values = {k: request.query_params.get(k, "").strip() for k in FILTERS}
        values = {k: v for k, v in values.items() if v}
        names = await service.namespaces()
        tier = values.get("tier") or None
        kind = values.get("kind") or None
        if values.get("q"):
            results = await service.search(
                values["q"], namespace=ns, memory_type=tier, kind=kind,
                tags=[values["tag"]] if values.get("tag") else None, limit=MAX_RESULTS,
                include_global=False, touch=False,
            )
            return HTMLResponse(pages.search_results(ns, names, results, values,
                                                     self._state.settings.weights))
        since, until = _day("since", values.get("since", "")), _day("until", values.get(
            "until", ""))
        where = Browse(
            namespace=ns,
            memory_type=None if tier is None else _tier(tier),
            kind=None if kind is None else validation.kind(kind),
            tag=values.get("tag"), entity=values.get("entity"), source=values.get("source"),
            since=since, until=None if until is None else until + 86_400,
        )
        before = request.query_params.get("before")
        page = await service.browse(where, before=_seq(before), limit=PAGE_SIZE)
        return HTMLResponse(pages.memory_list(ns, names, page, values))

    async def memory(self, request: Request, service: MemoryService) -> Response:
        ns = self._ns(request)
        memory_id = request.path_params["id"]
        note = request.query_params.get("note")
        names = await service.namespaces()
        try:
            result = await service.inspect(memory_id, namespace=ns,
                                           query=request.query_params.get("q") or None)
        except NotFoundError:
            events = await service.lineage_of(memory_id, namespace=ns)
            return HTMLResponse(pages.deleted_page(memory_id, events, ns, names, note))
        return HTMLResponse(pages.memory_page(result, self._state.settings.weights,
                                              self._state.secrets.csrf, names, note))

    async def confirm_forget(self, request: Request, service: MemoryService) -> Response:
        memory = await service.get(request.path_params["id"], namespace=self._ns(request))
        return HTMLResponse(pages.forget_confirm(memory, self._state.secrets.csrf,
                                                 await service.namespaces()))

    async def forget(self, request: Request, service: MemoryService) -> Response:
        form = await _form(request)
        ns = self._ns(request, form)
        done = await service.delete(request.path_params["id"], namespace=ns)
        return _back(done.deleted_id, ns, "forgotten")

    async def edit(self, request: Request, service: MemoryService) -> Response:
        form = await _form(request)
        ns = self._ns(request, form)
        done = await service.update(
            request.path_params["id"], namespace=ns,
            content=form.get("content", "").replace("\r\n", "\n") or None,
            importance=_number("importance", form["importance"]) if form.get(
                "importance") else None,
            memory_type=form.get("memory_type") or None,
            kind=form.get("kind") or None,
            tags=_labels(form["tags"]) if "tags" in form else None,
            linked_entities=_labels(form["linked_entities"]) if "linked_entities" in form
            else None,
        )
        return _back(done.memory.id, ns, "edited" if done.changed else "unchanged")

    async def pin(self, request: Request, service: MemoryService) -> Response:
        form = await _form(request)
        ns = self._ns(request, form)
        done = await service.update(request.path_params["id"], namespace=ns, importance=1.0)
        return _back(done.memory.id, ns, "pinned")

    async def supersede(self, request: Request, service: MemoryService) -> Response:
        form = await _form(request)
        ns = self._ns(request, form)
        old = await service.get(request.path_params["id"], namespace=ns)
        added = await service.add(  # keeps the old memory's kind, importance and labels
            form.get("content", "").replace("\r\n", "\n"), namespace=old.namespace,
            supersedes=old.id,
        )
        return _back(added.memory.id, ns, "superseded")

    async def gc(self, request: Request, service: MemoryService) -> Response:
        ns = self._ns(request)
        return await self._gc_page(service, ns, _window(request.query_params.get("window")))

    async def gc_apply(self, request: Request, service: MemoryService) -> Response:
        form = await _form(request)
        ns = self._ns(request, form)
        window = _window(form.get("window"))
        done = await service.gc_run(namespace=ns, max_memories=window)
        return await self._gc_page(service, ns, window, done)

    async def _gc_page(self, service: MemoryService, ns: str, window: int,
                       done: GCResult | None = None) -> Response:
        plan = await service.gc_preview(namespace=ns, max_memories=window)
        return HTMLResponse(pages.gc_page(plan, window, GC_WINDOWS,
                                          await service.count(namespace=ns),
                                          self._state.secrets.csrf,
                                          await service.namespaces(), done))

    async def export(self, request: Request, service: MemoryService) -> Response:
        ns = self._ns(request)
        doc = await service.export(namespace=ns)
        safe = "".join(c if c.isalnum() else "-" for c in ns).strip("-")[:60] or "default"
        return Response(dumps(doc) + "\n", media_type="application/json", headers={
            "content-disposition": f'attachment; filename="pma-{safe}.json"'})


def _tier(value: str) -> MemoryType:
    return validation.memory_type(value, "tier")


def _window(value: str | None) -> int:
    if not value:
        return GC_WINDOWS[0]
    if value not in {str(w) for w in GC_WINDOWS}:
        raise InvalidInputError("window", f"must be one of {', '.join(map(str, GC_WINDOWS))}")
    return int(value)


def _seq(value: str | None) -> int | None:
    """A listing's page key: ASCII digits up to the store's largest INTEGER (a longer one
    would overflow the driver, a Unicode digit would not parse)."""
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > len(str(MAX_COUNT)) or (
            int(value) > MAX_COUNT):
        raise InvalidInputError("before", f"must be a whole number from 0 to {MAX_COUNT}, "
                                f"got {_shown(value)}")
    return int(value)


def _back(memory_id: str, namespace: str, note: str) -> RedirectResponse:
    return RedirectResponse(pages.url(f"/memory/{memory_id}", ns=namespace, note=note),
                            status_code=303)


# ------------------------------------------------------------------------- main


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 only (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    sock.setblocking(False)
    return sock


def serve(settings: Settings, sock: socket.socket, secrets: Secrets, *,
          clock: Clock = time.time, counter: TokenCounter | None = None) -> None:
    """Serve until interrupted. No access log: the first request's URL carries the token."""
    import uvicorn

    port = sock.getsockname()[1]
    app = build_app(settings, secrets, lambda: port, clock=clock, counter=counter)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


def address(sock: socket.socket, secrets: Secrets) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}/?token={secrets.token}"


async def _can_open(settings: Settings) -> None:
    """Open and close the store once before serving: a store that cannot be opened is then
    one line on stderr, not a server that fails at its first start-up step."""
    service = await MemoryService.open(settings)
    await service.close()


def main(argv: Sequence[str]) -> int:
    """`pma-mcp ui [--port N]`: print the URL (with this run's token) on stderr and serve."""
    parser = argparse.ArgumentParser(
        prog="pma-mcp ui", description="Browse and curate the memory store in a local web "
        "page (127.0.0.1 only; the printed URL carries this run's access token).")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    args = parser.parse_args(list(argv))
    try:
        settings = Settings.from_env()
    except ConfigError as err:
        sys.stderr.write(f"pma-mcp ui: configuration error: {err}\n")
        return 1
    logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                        format="pma-mcp ui: %(levelname)s %(name)s: %(message)s")
    if not 0 <= args.port <= 65_535:
        sys.stderr.write(f"pma-mcp ui: --port must be from 0 to 65535, got {args.port}\n")
        return 1
    try:
        asyncio.run(_can_open(settings))
    except Exception as err:  # the store cannot be opened: say why as the CLI does, and stop
        log.debug("opening the store failed", exc_info=True)
        sys.stderr.write(error_line("pma-mcp ui", err, hint="set PMA_LOG_LEVEL=DEBUG for "
                                    "details"))
        return 1
    try:
        sock = bind(args.port)
    except OSError as err:
        sys.stderr.write(f"pma-mcp ui: cannot listen on 127.0.0.1:{args.port}: {err}\n")
        return 1
    secrets = Secrets()
    sys.stderr.write(f"pma-mcp ui: open {address(sock, secrets)}\n"
                     f"  namespace {settings.namespace!r}, database {settings.database}; "
                     "Ctrl-C to stop\n")
    sys.stderr.flush()
    try:
        serve(settings, sock, secrets)
    except KeyboardInterrupt:
        return 130
    return 0
