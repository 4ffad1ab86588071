"""A memory's kind when whoever stored it named none (pure, deterministic, no model).

The same rules give the kind of a new memory stored without one and of every memory an older
store held before kinds existed (the migrations), tried in this order:

  1. an exchange a hook saved (tag "auto-saved", or metadata source "hook:…") → event;
  2. a tag that names a kind ("decision", "preferences", "rule" → preference, …) → that kind;
  3. words of the content: a decision ("decided", "we chose", "going with", …) → decision;
     a preference or rule ("prefers", "always", "never", "convention", …) → preference;
     something that happened ("yesterday", "deployed", "failed", …) → event;
  4. stored in the semantic tier (what older callers were told meant "a lasting fact") → fact;
  5. otherwise → note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pma_mcp.core.models import MemoryKind, MemoryType
from pma_mcp.core.namespaces import AUTO_SAVED_TAG
from pma_mcp.core.patterns import Lazy

_TAG_KINDS: dict[str, MemoryKind] = {
    **{k.value: k for k in MemoryKind},
    **{f"{k.value}s": k for k in MemoryKind},
    "rule": MemoryKind.PREFERENCE,
    "rules": MemoryKind.PREFERENCE,
    "convention": MemoryKind.PREFERENCE,
    "conventions": MemoryKind.PREFERENCE,
}

_WORDS: tuple[tuple[MemoryKind, Lazy], ...] = (
    (MemoryKind.DECISION, Lazy(
        r"\b(decided|decides|decision|we chose|chose to|agreed to|agreed on|going with|"
        r"settled on|opted for|we will use|we'll use|switched to)\b")),
    (MemoryKind.PREFERENCE, Lazy(
        r"\b(prefers?|preferred|preference|always|never|likes|dislikes|wants|"
        r"convention|must not|do not use|don't use)\b")),
    (MemoryKind.EVENT, Lazy(
        r"\b(yesterday|today|this morning|last (?:night|week|month|year)|happened|deployed|"
        r"released|shipped|failed|crashed|broke|went down|was fixed|outage|incident)\b")),
)


def hook_saved(tags: Iterable[str], metadata: Mapping[str, Any]) -> bool:
    """Whether a memory is an exchange a hook saved (its tag, or its metadata's source)."""
    source = metadata.get("source")
    return AUTO_SAVED_TAG in tags or (isinstance(source, str) and source.startswith("hook:"))


def infer(
    content: str, tags: Iterable[str], metadata: Mapping[str, Any], tier: MemoryType
) -> MemoryKind:
    """The kind the module's rules give (see the module docstring)."""
    labels = list(tags)
    if hook_saved(labels, metadata):
        return MemoryKind.EVENT
    for tag in labels:
        if (named := _TAG_KINDS.get(tag.strip().lower())) is not None:
            return named
    text = content.lower()
    for kind, pattern in _WORDS:
        if pattern.search(text):
            return kind
    return MemoryKind.FACT if tier is MemoryType.SEMANTIC else MemoryKind.NOTE
