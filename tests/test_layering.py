"""The layers are the package's folders, and imports only point down through them.

    cli → faces (server, hooks, commands, ui) → service, admin → store → core
                                                      importers ─┘ (readers: core only)

`core/` holds the rules and imports nothing above it; `store/` keeps memories and knows no use
case; `service/` and `admin/` are the only ones that hold a store; a face parses, makes one
call, and renders. The process's environment (config, identity, gitconfig, launch, runtime) sits
beside the rules: anyone above core may read it, it reads only core. `files` (the one guarded
way to read a path someone else named) is below every reader of files, importers included.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pma_mcp"
ENVIRONMENT = {"config", "identity", "gitconfig", "launch", "files", "runtime"}
FACES = {"server", "hooks", "commands", "ui"}
MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "store": {"core", "store", "config", "files"},
    "importers": {"core", "importers", "files"},
    "service": {"core", "store", "service", "importers"} | ENVIRONMENT,
    "admin": {"core", "store", "admin"} | ENVIRONMENT,
    "server": {"core", "service", "server"} | ENVIRONMENT,
    "hooks": {"core", "service", "hooks"} | ENVIRONMENT,
    "commands": {"core", "service", "admin", "importers", "commands"} | ENVIRONMENT,
    "ui": {"core", "service", "ui"} | ENVIRONMENT,
    "cli": FACES,
    "__main__": {"cli"},
    "__init__": set(),
    "config": {"core", "identity"},
    "identity": {"core", "gitconfig", "files"},
    "gitconfig": {"files"},
    "launch": set(),
    "runtime": set(),
    "files": {"core"},
}
"""Per top-level folder or module: the top-level folders and modules it may import."""
DRIVERS = {"sqlite3", "aiosqlite", "psycopg", "psycopg_pool", "asyncpg"}
DRIVER_EXCEPTIONS = {
    "core.text.analysis": "tokenises with SQLite's FTS5 in a private in-memory database",
    "importers.claude_mem": "reads another program's SQLite file, never our store",
}
MAX_TOP_LEVEL_MODULES = 12


def name_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {name_of(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """Every absolute module name `path` imports (at any depth of the file)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def top(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def local_tops(path: Path) -> set[str]:
    """The top-level folders and modules of pma_mcp that `path` imports."""
    out = set()
    for dotted in imports(path):
        parts = dotted.split(".")
        if parts[0] == "pma_mcp" and len(parts) > 1:
            out.add(parts[1])
    return out - {"__version__"}


def test_every_top_level_folder_and_module_has_a_rule() -> None:
    unknown = {top(n) for n in modules()} - set(MAY_IMPORT)
    assert not unknown, f"add {unknown} to MAY_IMPORT in this test"


def test_imports_only_point_down_through_the_folders() -> None:
    problems = [
        f"{name} imports pma_mcp.{target}"
        for name, path in modules().items()
        for target in local_tops(path) - MAY_IMPORT[top(name)] - {top(name)}
    ]
    assert not problems, problems


def test_faces_never_import_the_store() -> None:
    problems = [f"{name} imports the store" for name, path in modules().items()
                if top(name) in FACES and "store" in local_tops(path)]
    assert not problems, problems


def test_the_rules_import_nothing_above_them() -> None:
    problems = [f"{name} imports {sorted(local_tops(path) - {'core'})}"
                for name, path in modules().items()
                if top(name) == "core" and local_tops(path) - {"core"}]
    assert not problems, problems


def test_no_database_driver_outside_the_store() -> None:
    problems = [
        f"{name} imports {sorted({top(d) for d in imports(path)} & DRIVERS)}"
        for name, path in modules().items()
        if top(name) != "store" and name not in DRIVER_EXCEPTIONS
        and {top(d) for d in imports(path)} & DRIVERS
    ]
    assert not problems, problems


def test_the_package_top_level_stays_small() -> None:
    top_modules = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top_modules) <= MAX_TOP_LEVEL_MODULES, sorted(top_modules)
