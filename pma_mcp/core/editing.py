"""In-place edits of a memory (pure): the edited memory, what changed, and its lineage line.

An edit keeps the memory's id, namespace, counts and times; only the fields in
`validation.EDITABLE` change. The lineage reason says old → new for the scalar fields, and for
content only its size: the old text may be exactly what the edit removes (a secret, a wrong
name), so it is not copied into the audit trail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core.models import Memory
from pma_mcp.core.validation import EDITABLE

if TYPE_CHECKING:
    from pma_mcp.core.records import MemoryEdit


def applied(
    memory: Memory,
    edit: MemoryEdit,
    *,
    count_tokens: Callable[[str], int],
    content_hash: Callable[[str], str],
) -> Memory:
    """`memory` with the edit's given fields; token count and hash follow new content."""
    values = {name: getattr(edit, name) for name in EDITABLE if getattr(edit, name) is not None}
    if edit.content is not None and edit.content != memory.content:
        values["token_count"] = count_tokens(edit.content)
        values["content_hash"] = content_hash(edit.content)
    return dataclasses.replace(memory, **values)


def changed_fields(old: Memory, new: Memory) -> list[str]:
    """The editable fields whose value differs, in EDITABLE order."""
    return [name for name in EDITABLE if getattr(old, name) != getattr(new, name)]


def describe(old: Memory, new: Memory, changed: Sequence[str]) -> str:
    """One lineage line, e.g. "importance 0.5 → 0.9; tags +db −misc; content 12 → 15 tokens"."""
    parts: list[str] = []
    for name in changed:
        if name == "content":
            parts.append(f"content {old.token_count} → {new.token_count} tokens")
        elif name == "importance":
            parts.append(f"importance {old.importance:g} → {new.importance:g}")
        elif name == "memory_type":
            parts.append(f"memory_type {old.memory_type.value} → {new.memory_type.value}")
        elif name == "kind":
            parts.append(f"kind {old.kind.value} → {new.kind.value}")
        elif name in ("tags", "linked_entities"):
            parts.append(f"{name} {_label_diff(getattr(old, name), getattr(new, name))}")
        else:
            keys = sorted(set(old.metadata) ^ set(new.metadata) | {
                k for k in old.metadata.keys() & new.metadata.keys()
                if old.metadata[k] != new.metadata[k]})
            parts.append("metadata keys " + (", ".join(keys) if keys else "reordered"))
    return "edited: " + "; ".join(parts)


def _label_diff(old: Sequence[str], new: Sequence[str]) -> str:
    added = [f"+{v}" for v in new if v not in old]
    removed = [f"−{v}" for v in old if v not in new]
    return " ".join([*added, *removed]) or "reordered"
