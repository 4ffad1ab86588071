"""Captured text made storable: the store refuses NULs and lone surrogates
(`validation.text_field`), and a transcript or hook input can hold both. Standard library
only, so the hooks' fast path can import it.
"""

from __future__ import annotations

__all__ = ["storable"]


def storable(text: str) -> str:
    """`text` without NULs, a lone surrogate replaced by U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text
