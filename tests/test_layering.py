"""The dependency direction of DESIGN.md, enforced by parsing imports.

cli → server | hooks | commands → service → (retrieval, collector, budget, graph,
consolidate, ...) → pure helpers (scoring, validation, redact, transcript) and the store.
Anyone may import models, errors, config. Nothing imports server, hooks, commands or cli
(except cli itself). Modules are named by their dotted path inside the package; a package's
modules may import each other freely, its layer is what the rest of the code sees.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pma_mcp"
SHARED = {"models", "errors", "config", "__init__", "identity", "gitconfig"}
LAYERS: dict[str, float] = {
    "__main__": 6, "cli": 5,
    "server": 4, "hooks": 4, "commands": 4, "ui": 4,
    "ui.guard": 3.5, "ui.pages": 3.5, "ui.mcp_app": 3.5,
    "render": 3.5, "schemas": 3.5, "outfile": 3.5,
    "service": 3,
    "retrieval": 2, "collector": 2, "budget": 2, "graph": 2, "consolidate": 2,
    "repair": 2.5, "diagnosis": 2.5, "migrate": 2.5,
    "transfer": 2, "seeding": 2, "launch": 2, "editing": 2,
    "importing": 3.2, "importers": 2.3,
    "importers.base": 2.1,
    "scoring": 1.5, "validation": 1.5, "redact": 1.5, "transcript": 1.5,
    "store": 1,
    "lexicon": 0.5, "bm25": 0.5, "secret_rules": 0.5,
}
STORE_USERS = {"service", "retrieval", "collector", "graph", "consolidate", "repair",
               "diagnosis", "migrate"}
"""The only modules outside the store package that may import it: the service and the
helpers it hands its store to."""
DRIVERS = {"sqlite3", "aiosqlite", "psycopg", "psycopg_pool", "asyncpg"}
FOREIGN_FILES = {"importers.claude_mem"}
"""Reads another program's SQLite file (never our store), so it may use sqlite3."""


def name_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {name_of(p): p for p in PACKAGE.rglob("*.py")}


def resolve(dotted: str) -> str:
    """A `pma_mcp.x.y` import as a module name of `modules()` (its package if not a file)."""
    parts = dotted.split(".")[1:]
    while parts and not ((PACKAGE.joinpath(*parts)).with_suffix(".py").exists()
                         or (PACKAGE.joinpath(*parts)).is_dir()):
        parts.pop()
    return ".".join(parts)


def local_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pma_mcp":
                found.update(alias.name for alias in node.names)
            elif node.module.startswith("pma_mcp."):
                for alias in node.names:
                    child = resolve(f"{node.module}.{alias.name}")
                    found.add(child if child.count(".") > resolve(node.module).count(".")
                              else resolve(node.module))
        elif isinstance(node, ast.Import):
            found.update(resolve(a.name) for a in node.names if a.name.startswith("pma_mcp."))
    return found


def driver_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found & DRIVERS


def layer(name: str) -> float:
    parts = name.split(".")
    while parts:
        if ".".join(parts) in LAYERS:
            return LAYERS[".".join(parts)]
        parts.pop()
    return -1


def package(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def test_every_module_has_a_layer() -> None:
    unknown = {n for n in modules() if layer(n) < 0 and n not in SHARED}
    assert not unknown, f"add {unknown} to LAYERS in this test"


def test_imports_only_point_down() -> None:
    problems = []
    for name, path in modules().items():
        if name in SHARED:
            continue
        for target in local_imports(path):
            if target in SHARED or package(target) == package(name):
                continue
            if layer(target) >= layer(name):
                problems.append(f"{name} imports {target}")
    assert not problems, problems


def test_only_the_service_touches_the_store() -> None:
    problems = [f"{name} imports {target}" for name, path in modules().items()
                if package(name) != "store" and name not in STORE_USERS
                for target in local_imports(path) if package(target) == "store"]
    assert not problems, problems


def test_no_database_driver_above_the_store() -> None:
    problems = [f"{name} imports {sorted(driver_imports(path))}"
                for name, path in modules().items()
                if package(name) != "store" and name not in FOREIGN_FILES
                and driver_imports(path)]
    assert not problems, problems


def test_shared_modules_import_no_layer() -> None:
    for name in SHARED - {"__init__"}:
        path = PACKAGE / f"{name}.py"
        assert local_imports(path) <= SHARED, name
