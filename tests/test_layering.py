"""The dependency direction of DESIGN.md, enforced by parsing imports.

cli → server | hooks | commands → service → (retrieval, collector, budget, graph,
consolidate, ...) → pure helpers (scoring, validation, redact, transcript) and repository → db.
Anyone may import models, errors, config.
Nothing imports server, hooks, commands or cli (except cli itself).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pma_mcp"
SHARED = {"models", "errors", "config", "__init__"}
LAYERS: dict[str, float] = {
    "__main__": 6, "cli": 5,
    "server": 4, "hooks": 4, "commands": 4, "ui": 4, "web": 4,
    "guard": 3.5, "pages": 3.5, "mcp_app": 3.5,
    "render": 3.5, "schemas": 3.5, "outfile": 3.5,
    "service": 3,
    "retrieval": 2, "collector": 2, "budget": 2, "graph": 2, "consolidate": 2,
    "repair": 2.5,
    "transfer": 2, "seeding": 2, "launch": 2, "editing": 2,
    "importing": 3.2, "importers": 2.3,
    "base": 2.1, "claude_code": 2.2, "claude_mem": 2.2, "mcp_memory": 2.2, "mem0": 2.2,
    "scoring": 1.5, "validation": 1.5, "redact": 1.5, "transcript": 1.5,
    "repository": 1,
    "lexicon": 0.5, "bm25": 0.5, "secret_rules": 0.5,
    "db": 0,
}


def local_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "pma_mcp":
                found.update(alias.name for alias in node.names)
            elif node.module.startswith("pma_mcp."):
                found.update(_targets(node.module.split("."), [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pma_mcp."):
                    found.add(alias.name.split(".")[1])
    return found


def _targets(parts: list[str], names: list[str]) -> list[str]:
    """Modules named by `from pma_mcp.X[.Y] import names`; inside a sub-package (pma_mcp/ui/)
    each module is a layer of its own."""
    if len(parts) > 2:
        return [parts[-1]]
    if (PACKAGE / parts[1]).is_dir():
        return names
    return [parts[1]]


def modules() -> dict[str, Path]:
    return {p.stem if p.name != "__init__.py" or p.parent == PACKAGE else p.parent.name: p
            for p in PACKAGE.rglob("*.py")}


def test_every_module_has_a_layer() -> None:
    unknown = set(modules()) - set(LAYERS) - SHARED
    assert not unknown, f"add {unknown} to LAYERS in this test"


def test_imports_only_point_down() -> None:
    problems = []
    for name, path in modules().items():
        if name in SHARED:
            continue
        for target in local_imports(path):
            if target in SHARED or target == name:
                continue
            if LAYERS.get(target, -1) >= LAYERS[name]:
                problems.append(f"{name} imports {target}")
    assert not problems, problems


def test_shared_modules_import_no_layer() -> None:
    for name in SHARED:
        path = PACKAGE / f"{name}.py"
        assert local_imports(path) <= SHARED, name
