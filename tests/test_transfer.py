"""Export/import (lossless, all-or-nothing) and seeding from project docs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.errors import InvalidInputError, StorageError
from pma_mcp.core.models import MemoryType
from pma_mcp.service import MemoryService
from tests.conftest import FakeClock


async def test_export_import_export_is_lossless(
    service: MemoryService, tmp_path: Path, clock: FakeClock
) -> None:
    await service.add("alpha fact", importance=0.9, tags=["a"], linked_entities=["e"],
                      metadata={"k": [1, 2, {"x": None}]}, session_id="s1")
    old = (await service.add("beta", memory_type="semantic")).memory
    await service.add("gamma", supersedes=old.id)
    clock.advance(2)
    await service.search("alpha")
    first = await service.export()
    assert len(first["memories"]) == 3

    target = Settings(db_path=tmp_path / "copy.db", namespace=service.namespace)
    async with await MemoryService.open(target, clock=clock, counter=WordEstimate()) as copy:
        report = await copy.import_document(json.loads(json.dumps(first)))
        assert (report.imported, report.skipped) == (3, 0)
        second = await copy.export()
        assert second["memories"] == first["memories"]
        assert (await copy.store.check_consistency()).ok
        again = await copy.import_document(first, skip_existing=True)
        assert (again.imported, again.skipped) == (0, 3)
        repeat = await copy.import_document(first)  # the same file again: already present
        assert (repeat.imported, repeat.skipped) == (0, 3)
        changed = json.loads(json.dumps(first))
        changed["memories"][0]["content"] = "alpha fact, rewritten"
        with pytest.raises(StorageError, match="skip-existing"):
            await copy.import_document(changed)
        assert (await copy.export())["memories"] == first["memories"]


def bad(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"format": "pma-mcp-export", "version": 1,
            "memories": [record, {**record, "id": "f" * 32, "content": "other", **changes}]}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"importance": 2}, "record 2, field 'importance'"),
        ({"memory_type": "cache"}, "record 2, field 'memory_type'"),
        ({"content": ""}, "record 2, field 'content'"),
        ({"id": "not-hex"}, "record 2, field 'id'"),
        ({"created_at": "yesterday"}, "record 2, field 'created_at'"),
        ({"access_count": -1}, "record 2, field 'access_count'"),
        ({"tags": "x"}, "record 2, field 'tags'"),
    ],
)
async def test_a_bad_record_refuses_the_whole_file(
    service: MemoryService, changes: dict[str, Any], message: str
) -> None:
    await service.add("seed record")
    doc = await service.export()
    record = dict(doc["memories"][0], id="e" * 32, content="first")
    with pytest.raises(InvalidInputError) as err:
        await service.import_document(bad(record, **changes), namespace="/fresh")
    assert message in str(err.value)
    assert await service.store.count("/fresh") == 0


@pytest.mark.parametrize("doc", [42, "text", {"memories": "x"}, {"format": "other"},
                                 {"format": "pma-mcp-export", "version": 9, "memories": []}])
async def test_malformed_documents_are_refused(service: MemoryService, doc: object) -> None:
    with pytest.raises(InvalidInputError):
        await service.import_document(doc)


async def test_seed_from_project_docs_is_idempotent(
    service: MemoryService, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "README.md").write_text(
        "# Acme API\n\nThe API serves invoices over REST for the billing team.\n\n"
        "## Setup\n\nRun `make dev` to start Postgres and the API locally with seed data.\n"
        "```\n# not a heading inside a fence\n```\n"
    )
    (project / "CLAUDE.md").write_text("Always run the linters before committing any change.\n")
    (project / "docs" / "ops.md").write_text(
        "# Ops\n\n## Deploys\n\nDeploys happen every Tuesday through the release pipeline.\n"
    )
    added = (await service.seed_from_project(project)).added
    sections = {r.memory.metadata["section"] for r in added}
    assert sections == {"Acme API", "Acme API > Setup", "CLAUDE.md", "Ops > Deploys"}
    assert all(r.memory.memory_type == MemoryType.SEMANTIC for r in added)
    assert all("seed" in r.memory.tags for r in added)
    setup = next(r.memory for r in added if r.memory.metadata["section"] == "Acme API > Setup")
    assert "not a heading inside a fence" in setup.content
    assert (await service.seed_from_project(project)).added == []
    assert await service.store.count() == 4
    with pytest.raises(InvalidInputError, match="not a directory"):
        await service.seed_from_project(tmp_path / "missing")
