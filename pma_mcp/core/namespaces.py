"""Namespace rules: the global namespace, the auto-saved tag, and one spelling per namespace.

A path namespace is canonical when it is the directory's real path without a trailing
separator, so every process (server, hooks, CLI) names one project the same way whatever
spelling it was handed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

GLOBAL_NAMESPACE = "default"
"""The namespace for rules that apply everywhere; queried beside the project's own."""
AUTO_SAVED_TAG = "auto-saved"
"""The tag the hooks give every exchange they save (the browser counts auto-saved by it)."""


def canonical_namespace(name: str) -> str:
    """The one spelling of a namespace: a path is its real path without a trailing separator.

    Claude Code hands hooks its `cwd` / CLAUDE_PROJECT_DIR as typed (a symlink, a trailing
    slash, `..`), the server sees its physical working directory; without this one function in
    every process a project splits into several namespaces. A name that is not an absolute path
    ("default", "locomo/conv-1") is kept as given, stripped. `os.path.realpath` resolves what
    exists and normalises the rest, so a removed directory still has one spelling.
    """
    name = name.strip()
    if not os.path.isabs(name) or "\x00" in name:  # NUL: left for validation to refuse
        return name
    try:
        real = os.path.realpath(name)
    except (OSError, ValueError):
        real = os.path.normpath(name)
    return real.rstrip(os.sep) or os.sep


def uncanonical_namespaces(names: Iterable[str]) -> dict[str, str]:
    """Stored namespaces that are not in their canonical spelling → the canonical one."""
    moves = {}
    for name in names:
        canonical = canonical_namespace(name)
        if canonical and canonical not in (name, os.sep):
            moves[name] = canonical
    return moves
