"""Reaching a backend's own store from a service, for tests of that backend's internals."""

from __future__ import annotations

from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.store import SQLiteStore


def sqlite_store(service: MemoryService) -> SQLiteStore:
    """The service's store, which the test needs to be SQLite (it reads SQLite internals)."""
    assert isinstance(service.store, SQLiteStore), "this test is about the SQLite store"
    return service.store
