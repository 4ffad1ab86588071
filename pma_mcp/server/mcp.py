"""The MCP stdio server: tools, resources and a prompt over one MemoryService.

Thin on purpose: each tool validates its arguments through its signature (pydantic `Field`
constraints, so clients see the limits in the input schema), makes one service call and
returns a pydantic model from `schemas` (so clients get outputSchema and structuredContent).

Errors: a `PmaError` becomes a `ToolError` carrying its fix-it message; anything else is
logged with its traceback on stderr and the client gets a generic message, so no internals
leak and the server keeps serving. stdout is the protocol: nothing here writes to it.

The tool and argument names are a public interface (agents and users' configs depend on
them); change them only with a deprecation path.
"""

import difflib
import functools
import inspect
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from typing import Annotated, Any, Literal, ParamSpec, TypeVar, cast

import anyio
from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.apps import Apps
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.stdio import stdio_server
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from pma_mcp import __version__, launch
from pma_mcp.config import LOG_LEVELS, Settings, namespace_allowed
from pma_mcp.core import validation
from pma_mcp.core.budget import TokenCounter
from pma_mcp.core.errors import (
    AmbiguousError,
    ConfigError,
    InvalidInputError,
    NotFoundError,
    PmaError,
)
from pma_mcp.core.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_LABELS,
    MAX_NAMESPACE_CHARS,
    MIN_PREFIX,
)
from pma_mcp.server import mcp_app, wire
from pma_mcp.server.arguments import explain as explain_arguments
from pma_mcp.server.outputs import (
    ContextResult,
    Forgotten,
    GCPreviewOut,
    GCRunOut,
    InspectOut,
    MemoryOut,
    RecallResult,
    RelatedOut,
    StatsOut,
    StoredMemory,
    UpdatedOut,
    context_text,
)
from pma_mcp.service import MAX_LIMIT, MAX_QUERY_CHARS, MAX_TOKEN_BUDGET, Clock, MemoryService

log = logging.getLogger(__name__)

SERVER_NAME = "pma"

CLOSE_TIMEOUT_S = 1.0
"""Longest wait for the store to close when the client has gone (a query still running)."""
EXIT_GRACE_S = 0.5
"""After the store is closed, the longest the stdio server lingers before it exits anyway:
the SDK's stdin reader thread can stay blocked on a pipe whose other end was never closed."""

INSTRUCTIONS = """\
pma is persistent memory across sessions. Memories live in this project's namespace; the \
namespace "default" is global (user rules that apply everywhere) and is searched too.

- Start of a task, or after the context was compacted: call load_context with the task in a \
few words as query; read its text.
- Before answering about earlier work, past decisions, or the user's preferences and \
conventions: call recall. Do not guess what was decided before.
- When a decision is made, a fact is learned, or the user states a preference or a rule: call \
remember with one self-contained statement, its kind (fact, decision, preference, event, note: \
what it is) and a considered importance (0.9-1.0 rules and preferences that must never be lost; \
0.6-0.8 decisions and facts; 0.3-0.5 routine events). Importance is what makes a memory last: \
an important one is never demoted for age alone. Where a memory sits (its tier: working, \
episodic, semantic, archived) is the garbage collector's business; leave memory_type out. Add \
tags and linked_entities (files, modules, people) so related can find it. Rules for every \
project: namespace="default".
- remember answers with similar: stored memories of the same kind it likely repeats or \
contradicts. If one is now wrong, remember the correction with supersedes=<its id> (the \
correction keeps its kind, importance, tags and entities unless you give them), or forget it; \
for a small fix (wording, importance, kind, tags) call update on it.
- related lists what is known about a file, module or person; inspect explains a score and \
what the garbage collector will do to a memory.
- Maintenance: memory_stats; if gc_pressure is high, gc_preview then gc_run.

Ids: recall shows full ids; forget and inspect also take a unique prefix of 6+ characters.\
"""

def tty_hint() -> str:
    """What this is and how to connect it, with the command that starts this very install."""
    command = launch.cli()
    return (
        "pma-mcp is an MCP server: it speaks JSON-RPC on stdin/stdout and is started by an MCP "
        "client.\n"
        f"  Claude Code:  claude mcp add --scope user pma -- {command}\n"
        f"  Inspector:    npx @modelcontextprotocol/inspector --cli {command} "
        "--method tools/list\n"
        f"  Released:     {' '.join(launch.RELEASED)} (once published)\n"
        "Waiting for a client on stdin (Ctrl-D or Ctrl-C to quit).\n"
    )

USAGE = """\
usage: pma-mcp [serve]

Serve the pma memory tools over MCP stdio. Configuration is read from the environment:
  PMA_DB_PATH     database file (default ~/.pma_store.db)
  PMA_STORAGE     sqlite | memory (memory: nothing is kept after exit)
  PMA_NAMESPACE   namespace (default: CLAUDE_PROJECT_DIR, else the working directory)
  PMA_READ_NAMESPACES  other namespaces tools may name, comma-separated ('prefix/*' ok)
  PMA_LOG_LEVEL   DEBUG | INFO | WARNING | ERROR (logs go to stderr)
  PMA_WEIGHTS     semantic,importance,recency,access score weights summing to 1
"""

# ------------------------------------------------------------------ argument types

Tier = Literal["working", "episodic", "semantic", "archived"]
Kind = Literal["fact", "decision", "preference", "event", "note"]
KindArg = Annotated[
    Kind | None,
    Field(description="What the memory is: fact, decision, preference, event or note. "
          "Omitted: a correction keeps the kind of the memory it supersedes, otherwise it is "
          "inferred from the text and tags (e.g. 'we decided …' is a decision)"),
]
StartTier = Annotated[
    Tier | None,
    Field(description="The tier it starts in (default episodic). Tiers are where the garbage "
          "collector keeps a memory and it moves them by score; how long a memory lasts is "
          "its importance. Rarely needed"),
]

Content = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="One self-contained decision, fact, preference or event, written so it "
        "makes sense when read in a later session",
    ),
]
Importance = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        strict=True,
        description="0.9-1.0 rules/preferences never to lose; 0.6-0.8 decisions and facts; "
        "0.3-0.5 routine events",
    ),
]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
Tags = Annotated[
    list[Label],
    Field(max_length=MAX_LABELS, description="Short topic labels, e.g. ['db', 'decision']"),
]
Entities = Annotated[
    list[Label],
    Field(
        max_length=MAX_LABELS,
        description="Files, modules, services or people this is about, e.g. ['pma_mcp/db.py']",
    ),
]
Metadata = Annotated[
    dict[str, Any], Field(description="Any JSON object kept with the memory (at most 64 KB)")
]
SessionId = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)] | None,
    Field(description="The conversation this came from, if known"),
]
Namespace = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_NAMESPACE_CHARS)] | None,
    Field(
        description="Namespace to use instead of this project's; 'default' is the global one "
        "for rules that apply everywhere (others only if the user listed them in "
        "PMA_READ_NAMESPACES). Omit in normal use."
    ),
]
IdPrefix = Annotated[str, Field(min_length=MIN_PREFIX, max_length=MAX_ID_CHARS)]
MemoryId = Annotated[
    IdPrefix,
    Field(description=f"A memory id, or a unique prefix of at least {MIN_PREFIX} characters"),
]
Supersedes = Annotated[
    IdPrefix | None,
    Field(description="Id (or unique prefix) of a memory this one corrects; it stops being "
          "recalled"),
]
Query = Annotated[
    str,
    Field(max_length=MAX_QUERY_CHARS, description="What to look for, in plain words"),
]
IncludeGlobal = Annotated[
    bool, Field(strict=True, description="Also search the global 'default' namespace")
]

# ------------------------------------------------------------------------- runtime


class _Runtime:
    """Holds the one MemoryService while a connection is open (opened once, closed once).

    Static resources get no request context, so tools and resources alike reach the
    service through this holder; a use count keeps it open across overlapping connections.
    Clients send tool calls in parallel; the store serialises its own writes.
    """

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        counter: TokenCounter | None,
        on_closed: Callable[[], None] | None = None,
    ):
        self.settings = settings
        self._clock = clock
        self._counter = counter
        self._on_closed = on_closed
        self._service: MemoryService | None = None
        self._users = 0
        self._lock = anyio.Lock()

    @asynccontextmanager
    async def lifespan(self, _server: MCPServer[Any]) -> AsyncIterator[MemoryService]:
        async with self._lock:
            if self._service is None:
                self._service = await MemoryService.open(
                    self.settings, clock=self._clock, counter=self._counter
                )
                log.info("opened %s", self.settings.database)
            self._users += 1
            service = self._service
        try:
            yield service
        finally:
            # Shielded: a client that dies mid-call cancels this scope, and an unclosed store
            # leaves aiosqlite's (non-daemon) thread waiting, so the process would never exit.
            with anyio.CancelScope(shield=True):
                await self._release()

    async def _release(self) -> None:
        async with self._lock:
            self._users -= 1
            if self._users > 0 or self._service is None:
                return
            with anyio.move_on_after(CLOSE_TIMEOUT_S) as waited:
                await self._service.close()
            self._service = None
            if waited.cancel_called:
                log.warning("closing %s took over %.1f s (a call still waits for the "
                            "database); exiting without it",
                            self.settings.database, CLOSE_TIMEOUT_S)
            else:
                log.info("closed %s", self.settings.database)
        if self._on_closed is not None:
            self._on_closed()

    @property
    def service(self) -> MemoryService:
        if self._service is None:
            raise RuntimeError("the memory service is not open (no client connected)")
        return self._service


class _Server(MCPServer[MemoryService]):
    """MCPServer that refuses tool arguments it does not know, and says what is wrong with
    the ones it knows in the tool's words.

    The SDK (2.x) validates tool arguments with pydantic's default `extra="ignore"`, so a
    misspelled `tag` for `tags` is dropped and the call succeeds doing something else. The raw
    arguments are checked here, before that validation, against the tool's parameters. A value
    of the wrong type or range fails the SDK's validation; its pydantic report becomes the
    message of arguments.explain.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.accepted: dict[str, tuple[str, ...]] = {}
        """Tool name → its argument names, filled by `_tool`."""

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport reading stdin through wire.GuardedLines, so a message
        nested too deep for the SDK's parser gets an error answer instead of none."""
        async with wire.claimed_stdin() as lines:
            if lines is None:
                await super().run_stdio_async()
                return
            async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
                lines.answer_on(write_stream)
                lowlevel = self._lowlevel_server
                await lowlevel.run(read_stream, write_stream,
                                   lowlevel.create_initialization_options())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        accepted = self.accepted.get(name)
        unknown = [] if accepted is None else [a for a in arguments if a not in accepted]
        if accepted is not None and unknown:
            raise ToolError(unknown_arguments(name, unknown, accepted))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            tool = self._tool_manager.get_tool(name)
            if isinstance(err.__cause__, ValidationError) and tool is not None:
                errors = err.__cause__.errors(include_url=False)
                raise ToolError(explain_arguments(name, errors, tool.parameters)) from None
            raise


def unknown_arguments(tool: str, unknown: Sequence[str], accepted: Sequence[str]) -> str:
    """The fix-it message for arguments a tool does not take (with the closest spelling)."""
    hints = []
    for arg in unknown:
        close = difflib.get_close_matches(arg, accepted, n=1)
        hints.append(f"{arg!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (f"{tool} does not take {', '.join(hints)}; nothing was done. "
            f"Accepted arguments: {', '.join(accepted)}")


# ------------------------------------------------------------------------ factory


def build_server(
    settings: Settings,
    *,
    clock: Clock = time.time,
    counter: TokenCounter | None = None,
    on_closed: Callable[[], None] | None = None,
) -> MCPServer[MemoryService]:
    """The configured server; nothing is opened until a client connects (the lifespan).

    `clock` and `counter` are for tests (a fake clock, a fixed token counter); by default
    the service loads its token counter lazily, on the first write. `on_closed` runs once
    the store is closed after the last client left (`main` uses it to bound the exit).
    """
    rt = _Runtime(settings, clock, counter, on_closed)
    app = _Server(
        SERVER_NAME,
        title="Persistent memory (pma)",
        description="Tiered long-term memory for agents over one SQLite file",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=rt.lifespan,
        log_level=settings.log_level,
        extensions=[_apps(settings)],
    )
    _add_tools(app, rt)
    _add_resources(app, rt)
    _add_prompts(app, rt)
    return app


def _apps(settings: Settings) -> Apps:
    """MCP Apps: the `ui://` view recall and inspect link to (clients without app support
    ignore it and read the same results as before)."""
    apps = Apps()
    apps.add_html_resource(
        mcp_app.APP_URI, mcp_app.document(settings.weights), name="memory-view",
        title="Memory view", description="Recall results with their score parts; one "
        "memory's breakdown, GC prediction and lineage", prefers_border=True,
    )
    return apps


P = ParamSpec("P")
R = TypeVar("R")


def _annotations(
    *, read_only: bool, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """All four hints explicit: the spec's defaults (destructive, open-world) are pessimistic."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent or read_only,
        open_world_hint=False,
    )


READ_ONLY = _annotations(read_only=True)


def _tool(
    app: _Server,
    rt: _Runtime,
    name: str,
    title: str,
    annotations: ToolAnnotations,
    meta: dict[str, Any] | None = None,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Register `fn` as tool `name`: one call at a time, errors turned into messages an
    agent can act on."""

    def register(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                if kwargs.get("namespace") is not None:
                    kwargs["namespace"] = _allowed_namespace(rt.settings, kwargs["namespace"])
                return await fn(*args, **kwargs)
            except PmaError as err:
                raise ToolError(str(err)) from None
            except Exception:
                log.exception("tool %s failed", name)
                raise ToolError(
                    f"internal error in {name}; the details are in the pma-mcp log (stderr). "
                    "The server is still running: retry, or continue without memory"
                ) from None

        app.accepted[name] = tuple(inspect.signature(fn).parameters)
        app.add_tool(
            call,
            name=name,
            title=title,
            description=" ".join((fn.__doc__ or "").split()),  # one paragraph, unwrapped
            annotations=annotations,
            meta=meta,
        )
        return call

    return register


def _allowed_namespace(settings: Settings, value: object) -> str:
    """An explicit `namespace` argument, canonical, if this project may use it.

    Without this any tool call could read, supersede or collect another project's memories
    by naming its namespace (more so on a shared database).
    """
    name = validation.namespace(value)
    if namespace_allowed(settings, name):
        return name
    raise InvalidInputError(
        "namespace",
        f"{name!r} is not this project's namespace; a tool call may name only "
        f"{settings.namespace!r} (this project), {settings.global_namespace!r} (global) or a "
        "namespace listed in PMA_READ_NAMESPACES (comma-separated, 'prefix/*' for a family; "
        "set it in the server's environment to allow this one)",
    )


# -------------------------------------------------------------------------- tools


def _add_tools(app: _Server, rt: _Runtime) -> None:
    @_tool(app, rt, "remember", "Remember", _annotations(read_only=False))
    async def remember(
        content: Content,
        importance: Annotated[
            Importance | None,
            Field(description="0.9-1.0 rules/preferences never to lose; 0.6-0.8 decisions "
                  "and facts; 0.3-0.5 routine events. Omitted: 0.5, or the importance of "
                  "the memory it supersedes"),
        ] = None,
        memory_type: StartTier = None,
        tags: Annotated[Tags | None, Field(
            description="Short topic labels, e.g. ['db']. Omitted on a correction: the "
            "superseded memory's")] = None,
        linked_entities: Annotated[Entities | None, Field(
            description="Files, modules, services or people this is about, e.g. "
            "['pma_mcp/db.py']. Omitted on a correction: the superseded memory's")] = None,
        metadata: Metadata = {},  # noqa: B006 - the SDK validates a fresh value for every call
        session_id: SessionId = None,
        namespace: Namespace = None,
        supersedes: Supersedes = None,
        kind: KindArg = None,
    ) -> StoredMemory:
        """Use when a decision is made, a fact is learned, the user states a preference or
        rule, or work reaches a result worth knowing in a later session. Stores one memory
        in this project's namespace (namespace="default" for rules that apply everywhere).
        Give its kind (what it is) and choose importance deliberately: importance is what
        makes a memory last. Storing the same text again reinforces the existing memory
        (deduplicated=true). The answer's similar lists stored memories of the same kind
        this one likely repeats or contradicts. To correct a memory pass supersedes=<its
        id>: the old one stops being recalled, and the correction keeps its kind,
        importance, tags and entities unless given.
        """
        added = await rt.service.add(
            content, importance=importance, memory_type=memory_type, tags=tags,
            linked_entities=linked_entities, metadata=metadata, session_id=session_id,
            namespace=namespace, supersedes=supersedes, kind=kind,
        )
        return StoredMemory.of(added)

    @_tool(app, rt, "recall", "Recall memories", READ_ONLY, mcp_app.tool_meta())
    async def recall(
        query: Query,
        limit: Annotated[
            int, Field(ge=1, le=MAX_LIMIT, strict=True, description="How many results")
        ] = 5,
        memory_type: Annotated[Tier | None, Field(
            description="Only this tier (where the collector keeps it); rarely needed")] = None,
        tags: Annotated[
            list[Label] | None,
            Field(max_length=MAX_LABELS, description="Only memories with any of these tags"),
        ] = None,
        namespace: Namespace = None,
        min_score: Annotated[
            float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True,
                         description="Drop results scoring below this")
        ] = 0.0,
        include_global: IncludeGlobal = True,
        kind: Annotated[Kind | None, Field(
            description="Only memories of this kind (fact, decision, preference, event, "
            "note)")] = None,
    ) -> RecallResult:
        """Use before answering anything about earlier work, past decisions, or the user's
        preferences and conventions. Returns the memories that best match query, ranked by a
        composite of relevance, importance, recency and use, each with its score breakdown.
        Searches this project's namespace and the global one; an empty query ranks by score
        alone. Narrow with kind (e.g. only decisions) or tags.
        """
        found = await rt.service.search(
            query, namespace=namespace, memory_type=memory_type, tags=tags, limit=limit,
            min_score=min_score, include_global=include_global, kind=kind,
        )
        return RecallResult.of(found)

    @_tool(app, rt, "forget", "Forget a memory",
           _annotations(read_only=False, destructive=True, idempotent=True))
    async def forget(memory_id: MemoryId) -> Forgotten:
        """Use when a stored memory is wrong, outdated or stored by mistake (to correct it,
        remember the new text with supersedes instead). Deletes one memory by full id or a
        unique prefix of at least 6 characters, as recall shows them. Only memories in this
        project's namespace and the global one can be deleted. Its lineage is kept.
        """
        return Forgotten.model_validate(await rt.service.delete(memory_id))

    @_tool(app, rt, "update", "Edit a memory",
           _annotations(read_only=False, destructive=False, idempotent=True))
    async def update(
        memory_id: MemoryId,
        content: Annotated[Content | None, Field(description="New text (replaces the old)")]
        = None,
        importance: Annotated[Importance | None, Field(description="New importance")] = None,
        memory_type: Annotated[Tier | None, Field(
            description="Move to this tier (the collector may move it again)")] = None,
        tags: Annotated[Tags | None, Field(description="New tags (replace the old)")] = None,
        linked_entities: Annotated[
            Entities | None, Field(description="New linked entities (replace the old)")
        ] = None,
        metadata: Annotated[Metadata | None, Field(description="New metadata (replaces)")]
        = None,
        kind: Annotated[Kind | None, Field(description="What it is, if it was labelled "
                                           "wrongly")] = None,
    ) -> UpdatedOut:
        """Use when a stored memory needs a small fix that keeps it the same memory: a typo,
        a sharper wording, a better importance, kind, tags or entities. Edits it in place
        (same id, access history kept; the change is recorded in lineage); give only the
        fields to change. For a memory that became wrong, remember the correction with
        supersedes instead, so the old statement stays on record.
        """
        done = await rt.service.update(
            memory_id, content=content, importance=importance, memory_type=memory_type,
            tags=tags, linked_entities=linked_entities, metadata=metadata, kind=kind,
        )
        return UpdatedOut.of(done)

    @_tool(app, rt, "load_context", "Load context", READ_ONLY)
    async def load_context(
        query: Query = "",
        token_budget: Annotated[
            int,
            Field(ge=1, le=MAX_TOKEN_BUDGET, strict=True,
                  description="Most tokens the memories may take"),
        ] = 2048,
        namespace: Namespace = None,
        include_global: IncludeGlobal = True,
    ) -> ContextResult:
        """Use at the start of a task, or after the context was compacted, to load what
        earlier sessions learned. Returns the best memories that fit token_budget, packed by
        score, and text: the same memories as one block ready to read. Pass the task in a
        few words as query so relevance counts; without one, importance and recency decide.
        """
        pack = await rt.service.get_context(
            query, token_budget=token_budget, namespace=namespace, include_global=include_global
        )
        return ContextResult.of(pack, namespace or rt.settings.namespace,
                                rt.settings.global_namespace)

    @_tool(app, rt, "inspect", "Inspect a memory", READ_ONLY, mcp_app.tool_meta())
    async def inspect_memory(
        memory_id: MemoryId,
        query: Annotated[
            str | None,
            Field(max_length=MAX_QUERY_CHARS, description="Include relevance to this query"),
        ] = None,
    ) -> InspectOut:
        """Use to understand why a memory ranks where it does, or what the garbage collector
        will do to it. Returns the memory (its kind: what it is; its tier: where the
        collector keeps it now), its score breakdown (relevance only if query is given), the
        next gc_run's action and reason, the tier it would move to, and its lineage
        (created, accessed, promoted, merged, superseded ...).
        """
        return InspectOut.model_validate(await rt.service.inspect(memory_id, query=query))

    @_tool(app, rt, "gc_preview", "Preview garbage collection", READ_ONLY)
    async def gc_preview(namespace: Namespace = None) -> GCPreviewOut:
        """Use before gc_run to see what it would change; changes nothing. Dry run of the
        tiered garbage collector for the namespace: the memories it would promote, demote,
        archive, delete or merge (near-duplicates), each with its reason, and the change in
        stored tokens.
        """
        return GCPreviewOut.of(await rt.service.gc_preview(namespace=namespace))

    @_tool(app, rt, "gc_run", "Run garbage collection",
           _annotations(read_only=False, destructive=True))
    async def gc_run(namespace: Namespace = None) -> GCRunOut:
        """Use when memory_stats shows gc_pressure, after checking gc_preview. Applies the
        plan gc_preview shows for this moment: promotes, demotes, archives, deletes and
        merges memories by score, age and tier capacity. Every change is kept in lineage.
        """
        return GCRunOut.of(await rt.service.gc_run(namespace=namespace))

    @_tool(app, rt, "memory_stats", "Memory statistics", READ_ONLY)
    async def memory_stats(namespace: Namespace = None) -> StatsOut:
        """Use to see how much the namespace holds and whether it needs garbage collection.
        Returns totals, per-tier counts, tokens and average scores, gc_pressure (how many
        memories the next gc_run would change) and the average composite score.
        """
        return StatsOut.model_validate(await rt.service.stats(namespace=namespace))

    @_tool(app, rt, "related", "Related memories", READ_ONLY)
    async def related(
        entity: Annotated[
            str,
            Field(min_length=1, max_length=MAX_LABEL_CHARS,
                  description="A tag or linked entity, e.g. a file path, module or person"),
        ],
        namespace: Namespace = None,
    ) -> RelatedOut:
        """Use to find what is known about a file, module, person or topic that memories
        were tagged or linked with. Returns those memories and the other tags and entities
        that occur beside it (searches this project's namespace and the global one).
        """
        return RelatedOut.model_validate(await rt.service.related(entity, namespace=namespace))


# ---------------------------------------------------------- resources and prompts


def _resource_error(err: PmaError) -> ResourceError:
    if isinstance(err, NotFoundError | InvalidInputError | AmbiguousError):
        return ResourceNotFoundError(str(err))
    return ResourceError(str(err))


def _add_resources(app: MCPServer[Any], rt: _Runtime) -> None:
    @app.resource(
        "memory://stats",
        name="stats",
        title="Memory statistics",
        description="memory_stats for this project's namespace, as JSON",
        mime_type="application/json",
    )
    async def stats_resource() -> str:
        try:
            stats = await rt.service.stats()
        except PmaError as err:
            raise _resource_error(err) from None
        return StatsOut.model_validate(stats).model_dump_json(indent=2)

    @app.resource(
        "memory://{id}",
        name="memory",
        title="One memory",
        description="A memory by id (or unique prefix of 6+ characters), as JSON",
        mime_type="application/json",
    )
    async def memory_resource(id: str) -> str:
        try:
            memory = await rt.service.get(id)
        except PmaError as err:
            raise _resource_error(err) from None
        return MemoryOut.model_validate(memory).model_dump_json(indent=2)


def _add_prompts(app: MCPServer[Any], rt: _Runtime) -> None:
    # `topic` is checked here, not by a pydantic constraint: the SDK reports a prompt's
    # argument validation failure as an opaque internal error, this gives -32602 and a fix.
    @app.prompt(name="recall_topic", title="Recall a topic")
    async def recall_topic(topic: str) -> str:
        """Load what earlier sessions stored about a topic into the conversation."""
        if not topic.strip():
            raise MCPError(INVALID_PARAMS, "topic: give a few words, e.g. 'database migrations'")
        try:
            pack = await rt.service.get_context(topic, token_budget=2048)
        except PmaError as err:
            raise MCPError(INVALID_PARAMS, str(err).replace("query:", "topic:", 1)) from None
        return (
            f"What do we already know about {topic.strip()!r}? "
            "These memories were stored in earlier sessions:\n\n"
            f"{context_text(pack, rt.settings.namespace, rt.settings.global_namespace)}\n\n"
            "Use what is relevant, and say if something looks outdated "
            "(forget it, or remember a correction with supersedes)."
        )


# --------------------------------------------------------------------------- main


def configure_logging(settings: Settings) -> None:
    """Logs go to stderr only: stdout carries the protocol."""
    logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # aiosqlite logs every statement at DEBUG; that drowns the server's own messages.
    logging.getLogger("aiosqlite").setLevel(
        max(logging.INFO, logging.getLevelName(settings.log_level)))
    if settings.unknown_log_level is not None:
        log.warning("PMA_LOG_LEVEL=%r is not one of %s; using WARNING",
                    settings.unknown_log_level, ", ".join(LOG_LEVELS))


def banner(settings: Settings, *, tty: bool) -> str:
    """The stderr lines at startup: where memories go, and on a terminal what this is."""
    scope = " (global)" if settings.namespace == settings.global_namespace else ""
    line = (
        f"pma-mcp {__version__}: namespace {settings.namespace!r}{scope}, "
        f"database {settings.database}\n"
    )
    return line + tty_hint() if tty else line


def _pma_error(exc: BaseException) -> PmaError | None:
    """The PmaError behind a startup failure (the lifespan's errors arrive grouped)."""
    if isinstance(exc, PmaError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _pma_error(inner)
            if found is not None:
                return found
    if exc.__cause__ is not None:
        return _pma_error(exc.__cause__)
    return None


Beside = Callable[[Callable[[str], None]], AbstractContextManager[object]]
"""What runs beside the stdio server for its lifetime, given a way to log a warning: the
hooks' socket (cli.py, hooks/listener.py), which this face does not import."""


def main(argv: Sequence[str] = (), beside: Beside | None = None) -> int:
    """`pma-mcp [serve]`: serve stdio until the client closes stdin. Exit 1 on bad config."""
    args = list(argv)
    if args and args[0] in ("-h", "--help", "help"):
        sys.stderr.write(USAGE)
        return 0
    if args:
        sys.stderr.write(f"pma-mcp serve: unexpected argument {args[0]!r}\n{USAGE}")
        return 2
    try:
        settings = Settings.from_env()
    except ConfigError as err:
        sys.stderr.write(f"pma-mcp: configuration error: {err}\n")
        return 1
    configure_logging(settings)
    try:  # Ctrl-C from the banner on ends it quietly, like Ctrl-D
        sys.stderr.write(banner(settings, tty=sys.stdin.isatty()))
        with _beside(beside, settings):
            anyio.run(build_server(settings, on_closed=_exit_soon).run_stdio_async)
    except BaseException as exc:
        if _only(exc, KeyboardInterrupt):
            return 130
        if _only(exc, CLIENT_GONE):
            log.info("the client closed the connection with replies pending; store closed")
            return 0
        cause = _pma_error(exc)
        if cause is None:
            raise
        sys.stderr.write(f"pma-mcp: cannot start: {cause}\n")
        return 1
    return 0


def _beside(beside: Beside | None, settings: Settings) -> AbstractContextManager[object]:
    if beside is None or not settings.hook_handoff:
        return nullcontext()
    return beside(log.warning)


CLIENT_GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError,
               anyio.ClosedResourceError)
"""What the transport raises when the client died or closed its pipes mid-reply."""


def _exit_soon() -> None:
    """Exit EXIT_GRACE_S after the store closed, even if a transport thread still blocks.

    A normal exit (stdin EOF) ends the process well before the timer fires; it is a daemon
    thread, so it never delays that. Only a process that would otherwise linger (an orphan
    blocking WAL checkpoints) is ended, and its store is already closed.
    """
    def force() -> None:
        log.info("transport still blocked %.1f s after the store closed; exiting", EXIT_GRACE_S)
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(EXIT_GRACE_S, force)
    timer.daemon = True
    timer.start()


def _only(
    exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]
) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)
