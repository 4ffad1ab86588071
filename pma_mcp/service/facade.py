"""MemoryService: the one facade every face calls, and the only place the use cases meet.

Every caller (MCP tools, hooks, CLI, the local browser) goes through here, so validation,
the intake door, namespace visibility and lineage are the same for all. Each method is one
use case's, over one shared `Context`:

- memories.py: add, update, delete, get, has_content, lineage_of, related
- recall.py: search, get_context, get_contexts, inspect
- gc.py: gc_preview, gc_run, stats
- sessions.py: injected_ids, record_injections, reset_injections, in_context,
  session_memories
- transfer.py: export, import_document, import_items, seed_from_project
- browse.py: namespaces, count, browse, overview
"""

from __future__ import annotations

from types import TracebackType
from typing import Unpack

from pma_mcp.config import Settings
from pma_mcp.core.budget import TokenCounter
from pma_mcp.service.browse import Browsing
from pma_mcp.service.context import Context, Options
from pma_mcp.service.gc import GarbageCollection
from pma_mcp.service.memories import Memories
from pma_mcp.service.recall import Recall
from pma_mcp.service.sessions import Sessions
from pma_mcp.service.transfer import Transfer
from pma_mcp.store import Store, fold_namespaces, open_store


class MemoryService:
    """Open with `async with await MemoryService.open(settings) as service:`."""

    def __init__(self, store: Store, settings: Settings, **options: Unpack[Options]) -> None:
        self.store = store
        self.settings = settings
        self._ctx = ctx = Context(store, settings, **options)
        memories = Memories(ctx)
        self.add = memories.add
        self.update = memories.update
        self.delete = memories.delete
        self.get = memories.get
        self.has_content = memories.has_content
        self.lineage_of = memories.lineage_of
        self.related = memories.related
        gc = GarbageCollection(ctx)
        self.gc_preview = gc.gc_preview
        self.gc_run = gc.gc_run
        self.stats = gc.stats
        recall = Recall(ctx, gc)
        self.search = recall.search
        self.get_context = recall.get_context
        self.get_contexts = recall.get_contexts
        self.inspect = recall.inspect
        sessions = Sessions(ctx)
        self.injected_ids = sessions.injected_ids
        self.record_injections = sessions.record_injections
        self.reset_injections = sessions.reset_injections
        self.in_context = sessions.in_context
        self.session_memories = sessions.session_memories
        transfer = Transfer(ctx, memories)
        self.export = transfer.export
        self.import_document = transfer.import_document
        self.import_items = transfer.import_items
        self.seed_from_project = transfer.seed_from_project
        browsing = Browsing(ctx, gc)
        self.namespaces = browsing.namespaces
        self.count = browsing.count
        self.browse = browsing.browse
        self.overview = browsing.overview

    @classmethod
    async def open(
        cls, settings: Settings, *, busy_timeout_ms: int | None = None,
        connect_timeout_s: float | None = None, blocking: bool = False,
        **options: Unpack[Options],
    ) -> MemoryService:
        """`busy_timeout_ms`: how long a write waits for another process (default 15 s);
        `connect_timeout_s` and `blocking`: see store.open_store."""
        store = await open_store(settings, busy_timeout_ms=busy_timeout_ms,
                                 connect_timeout_s=connect_timeout_s, blocking=blocking)
        service = cls(store, settings, **options)
        await service._fold_path_namespaces()
        return service

    async def _fold_path_namespaces(self) -> None:
        """Memories of this project's older path namespaces join its git namespace.

        Before a project was named by its git remote its memories sat under its path
        (Settings.path_namespaces); the first open from that checkout moves them, merging
        exact duplicates (Store.move_namespace). Later opens find nothing to move: one
        indexed count per path. A failure (locked, read-only) leaves it for the next open.
        """
        moves = {old: self.namespace for old in self.settings.path_namespaces
                 if await self.store.count(old)}
        await fold_namespaces(self.store, moves, self._ctx.clock())

    @property
    def namespace(self) -> str:
        return self._ctx.namespace

    @property
    def counter(self) -> TokenCounter:
        return self._ctx.counter

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> MemoryService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
