"""Regular expressions compiled the first time they are used.

A hook is a fresh process on every prompt: compiling a module's patterns at import costs it
~0.1 ms each, mostly for patterns the text at hand never reaches (the redaction helpers, the
digest of tool calls, kind inference on a read-only path). `Lazy` offers the `re.Pattern`
methods the code uses and compiles on the first call.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any


class Lazy:
    """`re.compile(source, flags)`, deferred to its first use."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0,
                  endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0,
                 endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def findall(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(text, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(repl, text, count)
