"""Input checks for everything that writes (pure).

Each failure raises `InvalidInputError` naming the field and what is allowed; nothing is coerced
silently (an unknown tier is refused, never read as "episodic").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import KINDS, MemoryKind, MemoryType
from pma_mcp.core.namespaces import canonical_namespace

if TYPE_CHECKING:
    from pma_mcp.core.records import MemoryEdit, NewMemory

MAX_CONTENT_CHARS = 100_000
MAX_LABELS = 64
MAX_LABEL_CHARS = 200
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 32
"""Objects and lists nested in metadata, the metadata object itself counted: a deeper value
is refused before anything (encoding, redaction) walks it recursively."""
MAX_ID_CHARS = 200
MAX_NAMESPACE_CHARS = 4_096
MIN_PREFIX = 6

TIERS = ", ".join(t.value for t in MemoryType)


def text_field(field: str, value: object, *, max_chars: int, allow_empty: bool = False) -> str:
    """A string that SQLite can store as UTF-8 and that is within `max_chars`."""
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidInputError(field, "must not be empty or only whitespace")
    if len(value) > max_chars:
        raise InvalidInputError(
            field, f"is {len(value):,} characters; at most {max_chars:,} are allowed"
        )
    if "\x00" in value:
        raise InvalidInputError(field, "must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "contains invalid Unicode (a lone surrogate)") from None
    return value


def importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError("importance", f"must be a number in [0, 1], got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError("importance", f"must be a number in [0, 1], got {value!r}")
    return number


_Choice = TypeVar("_Choice", MemoryType, MemoryKind)


def _choice(names: type[_Choice], value: object, field: str, allowed: str) -> _Choice:
    """One of an enum's values, spelled in any case; anything else is refused, never read
    as a default."""
    if isinstance(value, names):
        return value
    if isinstance(value, str):
        try:
            return names(value.strip().lower())
        except ValueError:
            pass
    raise InvalidInputError(field, f"must be one of {allowed}; got {value!r}")


def memory_type(value: object, field: str = "memory_type") -> MemoryType:
    """A tier: where a memory sits (the collector moves it)."""
    return _choice(MemoryType, value, field, TIERS)


def kind(value: object, field: str = "kind") -> MemoryKind:
    """What a memory is (fact, decision, …)."""
    return _choice(MemoryKind, value, field, KINDS)


def labels(field: str, values: object) -> list[str]:
    """Tags or entities: a list of non-empty strings; whitespace trimmed, repeats dropped."""
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise InvalidInputError(field, f"must be a list of strings, got {type(values).__name__}")
    if len(values) > MAX_LABELS:
        raise InvalidInputError(
            field, f"has {len(values):,} items; at most {MAX_LABELS} are allowed")
    out: list[str] = []
    for i, item in enumerate(values):
        text = text_field(f"{field}[{i}]", item, max_chars=MAX_LABEL_CHARS).strip()
        if text not in out:
            out.append(text)
    return out


def metadata(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata", f"must be a JSON object, got {type(value).__name__}")
    shallow(value)
    try:
        encoded = json.dumps(dict(value), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("metadata", f"must be JSON-serialisable: {exc}") from None
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError("metadata", "contains invalid Unicode (a lone surrogate)") from None
    if size > MAX_METADATA_BYTES:
        raise InvalidInputError(
            "metadata", f"is {size:,} bytes as JSON; at most {MAX_METADATA_BYTES:,} allowed"
        )
    decoded: dict[str, Any] = json.loads(encoded)
    return decoded


def shallow(value: object, field: str = "metadata", limit: int = MAX_METADATA_DEPTH) -> None:
    """Refuse `value` if objects and lists nest in it more than `limit` deep (itself counted).

    Walked with a stack, never recursively, and stopped at the first level past the limit, so
    a value nested a million deep costs no more than one nested `limit + 1` deep."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (item.values() if isinstance(item, Mapping)
                    else item if isinstance(item, list | tuple) else None)
        if children is None:
            continue
        if depth > limit:
            raise InvalidInputError(
                field, f"is nested more than {limit} levels deep (objects and lists inside "
                f"each other); at most {limit} are allowed")
        stack.extend((child, depth + 1) for child in children)


def optional_id(field: str, value: object) -> str | None:
    if value is None:
        return None
    return text_field(field, value, max_chars=MAX_ID_CHARS).strip()


def namespace(value: object) -> str:
    """A namespace argument in its canonical spelling (a path as its real path)."""
    return canonical_namespace(text_field("namespace", value, max_chars=MAX_NAMESPACE_CHARS))


def author(value: object) -> str | None:
    """Who stored a memory: one line of printable text (not secret, so not redacted)."""
    if value is None:
        return None
    text = text_field("author", value, max_chars=MAX_AUTHOR_CHARS)
    checked = author_text(text)
    if checked is None:
        raise InvalidInputError("author", "must be one line without control characters")
    return checked


def id_prefix(value: object, field: str = "memory_id") -> str:
    """A full id or a prefix of at least MIN_PREFIX hex characters."""
    text = text_field(field, value, max_chars=MAX_ID_CHARS).strip().lower()
    if len(text) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in text):
        raise InvalidInputError(
            field,
            f"must be a memory id or a unique prefix of at least {MIN_PREFIX} hex characters "
            f"(as shown by recall); got {value!r}",
        )
    return text


def new_memory(
    *,
    content: object,
    namespace_: object,
    importance_: object = 0.5,
    memory_type_: object = MemoryType.EPISODIC,
    tags: object = None,
    linked_entities: object = None,
    metadata_: object = None,
    session_id: object = None,
    supersedes: object = None,
    author_: object = None,
    kind_: object = None,
) -> NewMemory:
    """Validate every field of a write; the first problem found is raised."""
    from pma_mcp.core.records import NewMemory  # loaded by the first write, not by readers

    return NewMemory(
        content=text_field("content", content, max_chars=MAX_CONTENT_CHARS),
        namespace=namespace(namespace_),
        importance=importance(importance_),
        memory_type=memory_type(memory_type_),
        tags=labels("tags", tags),
        linked_entities=labels("linked_entities", linked_entities),
        metadata=metadata(metadata_),
        session_id=optional_id("session_id", session_id),
        supersedes=None if supersedes is None else id_prefix(supersedes, "supersedes"),
        author=author(author_),
        kind=None if kind_ is None else kind(kind_),
    )


EDITABLE = ("content", "importance", "memory_type", "tags", "linked_entities", "metadata",
            "kind")
"""The fields an in-place edit may change; id, namespace, counts and times stay."""


def memory_edit(
    *,
    content: object = None,
    importance_: object = None,
    memory_type_: object = None,
    tags: object = None,
    linked_entities: object = None,
    metadata_: object = None,
    kind_: object = None,
) -> MemoryEdit:
    """Validate an in-place edit with the rules of `new_memory`; None means "unchanged"."""
    from pma_mcp.core.records import MemoryEdit

    edit = MemoryEdit(
        content=None if content is None else text_field(
            "content", content, max_chars=MAX_CONTENT_CHARS),
        importance=None if importance_ is None else importance(importance_),
        memory_type=None if memory_type_ is None else memory_type(memory_type_),
        tags=None if tags is None else labels("tags", tags),
        linked_entities=None if linked_entities is None else labels(
            "linked_entities", linked_entities),
        metadata=None if metadata_ is None else metadata(metadata_),
        kind=None if kind_ is None else kind(kind_),
    )
    if all(getattr(edit, f) is None for f in EDITABLE):
        raise InvalidInputError(
            "update", f"give at least one field to change: {', '.join(EDITABLE)}")
    return edit


# ------------------------------------------------------------------ authors

MAX_AUTHOR_CHARS = 200

def author_text(value: str) -> str | None:
    """`value` as an author, or None when it cannot be one (empty, too long, control chars).

    The author is not secret (no redaction), but it is shown in every context block, so it is
    held to one line of printable text.
    """
    text = value.strip()
    if len(text) > MAX_AUTHOR_CHARS or not printable(text):
        return None
    return text


def namespace_name(text: str) -> bool:
    """Whether `text` may name a namespace taken from configuration (PMA_NAMESPACE, a git
    remote): printable on one line and within MAX_NAMESPACE_CHARS, so it is stored and shown
    as it is."""
    return len(text) <= MAX_NAMESPACE_CHARS and printable(text)


def printable(text: str) -> bool:
    """Non-empty, and no control, format (bidi overrides) or line-separator characters."""
    import unicodedata

    return bool(text) and all(
        unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp") for ch in text)
