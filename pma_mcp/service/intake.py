"""The intake door: every write passes through here, after validation and before the store.

Memories outlive the session that wrote them and are injected into later prompts, so what is
cleaned here is every string that gets stored: content, tags, linked entities, metadata keys
and values at any depth, the session id, and the lineage reasons that describe an edit. The
rule depends only on where the text comes from:

    source     comes from                                         <private> blocks  secrets
    CAPTURED   conversation a hook saved; records another tool    dropped           redacted
               captured (`import --from`)
    CHOSEN     text someone chose to store: `remember`, `update`, kept as written   redacted
               supersede, the browser's forms, `seed`, `import`
               of an export file

Captured text never had a reader choose what went in, so a `<private>` block is the user's
only way to keep a passage out. Chosen text may be about the tag itself (a doc explaining
it), and an unclosed one would hide the rest of a document. Secrets are redacted from both
(`redact.scrub`) unless PMA_REDACT=off, which turns redaction off here and so everywhere.

The hooks apply the captured rule to an exchange's text themselves (`Intake.text` uses the same
`redact.sanitize_for_storage`), since it must run before they cut the text to length; the
door then cleans it with every other field of the write.

The namespace is not cleaned: it is the address the caller chose, and cleaning it would file
the memory where nobody asked. Nor is the author: one printable line naming a person.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pma_mcp.core import redact, validation

if TYPE_CHECKING:
    from pma_mcp.core.records import ImportItem, MemoryEdit, NewMemory

_Write = TypeVar("_Write", "NewMemory", "MemoryEdit")  # names: records load on first write


class Source(enum.Enum):
    """Where a write's text comes from, which decides how `<private>` blocks are treated."""

    CAPTURED = "captured"
    CHOSEN = "chosen"


@dataclasses.dataclass(frozen=True, slots=True)
class Intake:
    """The door, with PMA_REDACT (`Settings.redact`) decided once."""

    redact: bool = True

    def text(self, text: str, source: Source = Source.CHOSEN) -> str:
        """One string as the store may keep it from `source`."""
        if source is Source.CAPTURED:
            return redact.sanitize_for_storage(text, redact_secrets=self.redact)
        return redact.scrub(text) if self.redact else text

    def write(self, write: _Write) -> _Write:
        """A validated new memory or edit, text chosen to be stored, with every stored string
        cleaned; fields an edit leaves unchanged (None) stay None. Labels that become empty
        are dropped and ones that become equal merge, as validation would have done."""
        from pma_mcp.core.records import NewMemory

        source = Source.CHOSEN
        changes: dict[str, Any] = {}
        if write.content is not None:
            changes["content"] = self.text(write.content, source)
        for name in ("tags", "linked_entities"):
            if (labels := getattr(write, name)) is not None:
                changes[name] = self._labels(labels, source)
        if write.metadata is not None:
            changes["metadata"] = self._metadata(write.metadata, source)
        if isinstance(write, NewMemory):
            changes["session_id"] = self.session(write.session_id, source)
        return dataclasses.replace(write, **changes)

    def item(self, item: ImportItem) -> ImportItem:
        """Another tool's record cleaned as captured text, before it is validated (an empty
        content is left for the caller to skip). Its depth is bounded first, so a hostile
        file cannot make the cleaning recurse without end."""
        validation.shallow(item.metadata)
        source = Source.CAPTURED
        return dataclasses.replace(
            item,
            content=self.text(item.content, source).strip(),
            tags=tuple(self._labels(item.tags, source)),
            linked_entities=tuple(self._labels(item.linked_entities, source)),
            metadata=self._metadata(item.metadata, source),
            session_id=self.session(item.session_id, source),
        )

    def reason(self, text: str) -> str:
        """A lineage reason: it may quote labels or keys stored before they were cleaned."""
        return self.text(text)

    def session(self, value: str | None, source: Source = Source.CHOSEN) -> str | None:
        """A session id as stored, and so as looked up (None if nothing is left of it)."""
        return None if value is None else self.text(value, source).strip() or None

    def _labels(self, labels: Iterable[str], source: Source) -> list[str]:
        cleaned = (self.text(label, source).strip() for label in labels)
        return list(dict.fromkeys(label for label in cleaned if label))

    def _metadata(self, metadata: dict[str, Any], source: Source) -> dict[str, Any]:
        cleaned: dict[str, Any] = redact.scrub_values(metadata, lambda s: self.text(s, source))
        return cleaned
