"""What every use case shares: the store, the settings, the clock, the token counter and the
intake door, and the rules of which namespaces a call sees and how it names a memory.

A memory is visible to a caller only in the caller's namespace and, where asked, the global
one ("default", or "default/<author>" on a shared database); ids and id prefixes are
resolved inside those namespaces only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict

from pma_mcp.config import Settings
from pma_mcp.core import validation
from pma_mcp.core.budget import TokenCounter, default_counter
from pma_mcp.core.errors import AmbiguousError, InvalidInputError, NotFoundError
from pma_mcp.core.models import Memory, Scope, build_memory, to_datetime
from pma_mcp.service.intake import Intake
from pma_mcp.store import Store

if TYPE_CHECKING:
    from pma_mcp.core.records import NewMemory

Clock = Callable[[], float]
DAY = 86_400.0


class Options(TypedDict, total=False):
    """The keyword arguments a service is opened with (see `Context`)."""

    clock: Clock
    counter: TokenCounter | None
    merge_near_duplicates: bool


class Context:
    """The parts of one open service, shared by its use cases."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        clock: Clock = time.time,
        counter: TokenCounter | None = None,
        merge_near_duplicates: bool = True,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.merge = merge_near_duplicates
        """Whether GC merges near-duplicates (off for benchmarks that measure the rest)."""
        self.intake = Intake(redact=settings.redact)
        self._counter = counter

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    @property
    def counter(self) -> TokenCounter:
        """The token counter, made on first use (the real one loads a vocabulary)."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def own(self, namespace: str | None) -> str:
        """The namespace a call writes to or reads alone: its own unless it names one."""
        if namespace is None:
            return self.namespace
        name = validation.namespace(namespace)
        if self.settings.someone_elses(name):
            raise NotFoundError(f"namespace {name!r} is another member's personal namespace; "
                                "only they see it (docs/TEAM.md)")
        return name

    def visible(self, namespace: str | None, include_global: bool = True) -> tuple[str, ...]:
        """The namespaces a call reads: its own, then the global one unless left out."""
        own = self.own(namespace)
        personal = self.settings.global_namespace
        if include_global and own != personal:
            return (own, personal)
        return (own,)

    def scope(
        self, namespace: str | None, include_global: bool, memory_type: object, tags: object,
        kind: object = None,
    ) -> Scope:
        return Scope(
            namespaces=self.visible(namespace, include_global),
            memory_type=None if memory_type is None else validation.memory_type(memory_type),
            tags=tuple(validation.labels("tags", tags)),
            kind=None if kind is None else validation.kind(kind),
        )

    async def resolve(
        self, memory_id: object, namespaces: Sequence[str], field: str = "memory_id"
    ) -> Memory:
        """The one memory `memory_id` (a full id or a unique prefix) names in `namespaces`."""
        prefix = validation.id_prefix(memory_id, field)
        matches = await self.store.find_by_prefix(prefix, namespaces)
        exact = [m for m in matches if m.id == prefix]
        if exact:
            return exact[0]
        if not matches:
            raise NotFoundError(
                f"{field}: no memory {prefix!r} in namespace {namespaces[0]!r}"
                + (" or the global namespace" if len(namespaces) > 1 else "")
                + "; call recall to find ids"
            )
        if len(matches) > 1:
            raise AmbiguousError(prefix, [m.id for m in matches])
        return matches[0]

    def memory(self, new: NewMemory, memory_id: str, created: float) -> Memory:
        """A memory from a write that passed the intake door; its token count is made here."""
        when = to_datetime(created)
        return build_memory(new, memory_id=memory_id, token_count=self.counter.count(new.content),
                            created_at=when, accessed_at=when)


def bounded_int(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            field, f"must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(field, f"must be from {low} to {high}, got {value}")
    return value


def unit(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        0.0 <= float(value) <= 1.0
    ):
        raise InvalidInputError(field, f"must be a number in [0, 1], got {value!r}")
    return float(value)
