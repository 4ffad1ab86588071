"""`--from claude-code`: Claude Code's own memory files → semantic memories, one per section.

PATH is a project directory (default: the working directory). Read from it: `CLAUDE.md`,
`.claude/CLAUDE.md`, `CLAUDE.local.md` and `.claude/rules/*.md`; and the project's auto memory,
`<claude home>/projects/<project>/memory/*.md`, where `<project>` is the directory's path with
every character that is not a letter or digit replaced by `-`. PATH may also be a memory folder
or one Markdown file. Memories go to the namespace a server started in the project would use.
Auto-memory topic files may open with YAML front matter (`name`, `description`, `type`): it is
kept in the metadata and `type` becomes a tag. A rule's `paths:` front matter (the globs it is
scoped to, as a YAML list or one comma-separated line) becomes one `paths:<glob>` tag each and
the list `paths` in the metadata, so the scoping survives. `MEMORY.md` in the auto-memory folder
is Claude Code's index of the topic files (links and one-line hooks), not a memory: skipped.

Files are read as `seed` reads a project's docs (project_docs.read_inside): a file found in the
project or the memory folder whose real location lies outside it (a `CLAUDE.md` linked to
`~/.aws/credentials`) is skipped with a note, so is anything that is not a regular file, and
at most project_docs.MAX_FILE_BYTES of a file are read (noted when cut).
"""

from __future__ import annotations

import re
from pathlib import Path

from pma_mcp import files as guarded
from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers import project_docs
from pma_mcp.importers.base import FormatError, Reader, Source, labels, mtime

NAME = "claude-code"
EXPECTS = ("a Claude Code project directory (with CLAUDE.md, .claude/rules/*.md or auto-memory "
           "files under ~/.claude/projects/<project>/memory/), a memory folder or a .md file")
PROJECT_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
RULES_GLOB = ".claude/rules/*.md"
MEMORY_INDEX = "MEMORY.md"
IMPORTANCE = {"instructions": 0.7, "rules": 0.7, "auto-memory": 0.6}
_FRONT = re.compile(r"\A---[ \t]*\r?\n(?P<body>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FIELD = re.compile(r"^(?P<key>[A-Za-z_][\w-]*):[ \t]*(?P<value>.*?)[ \t]*$")


def memory_dir(claude_home: Path, project: Path) -> Path:
    """Where Claude Code keeps a project's auto memory: a folder named after the project's
    path with every character but letters and digits as `-`."""
    return claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / "memory"


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser().resolve()
    files, namespace = _files(path, source)
    if not files:
        raise FormatError(NAME, path, EXPECTS, "no memory files found there (looked for "
                          f"{', '.join(PROJECT_FILES)}, {RULES_GLOB} and "
                          f"{memory_dir(source.claude_home, path)})")
    items: list[ImportItem] = []
    for kind, file, root in files:
        items.extend(_items(kind, file, root, namespace, source))
    return items


def _files(path: Path, source: Source) -> tuple[list[tuple[str, Path, Path]], str]:
    """(kind, file, the folder it must really lie in) for each file to read, and the
    namespace. A file named as PATH is read where it leads; one found in a folder is read
    only if it really lies inside that folder (project_docs.read_inside, as `seed` does)."""
    if path.is_file():
        if path.suffix.lower() != ".md":
            raise FormatError(NAME, path, EXPECTS, "not a Markdown file")
        return [("auto-memory" if path.parent.name == "memory" else "instructions", path,
                 path.parent)], source.namespace or source.current
    if not path.is_dir():
        why = guarded.not_regular(path) or "no such file or directory"  # a FIFO: what it is
        raise FormatError(NAME, path, EXPECTS, why)
    if path.name == "memory" and path.parent.parent.name == "projects":
        return [("auto-memory", f, path) for f in sorted(path.glob("*.md"))
                if f.name != MEMORY_INDEX], (
            source.namespace or source.current)
    files = [("instructions", path / name, path) for name in PROJECT_FILES
             if (path / name).is_file()]
    files += [("rules", f, path) for f in sorted(path.glob(RULES_GLOB)) if f.is_file()]
    auto = memory_dir(source.claude_home, path)
    auto_real = auto.resolve()
    files += [("auto-memory", f, auto_real) for f in sorted(auto.glob("*.md"))
              if f.is_file() and f.name != MEMORY_INDEX]
    return files, source.namespace or source.project_namespace(path)


def _items(kind: str, file: Path, root: Path, namespace: str, source: Source
           ) -> list[ImportItem]:
    try:
        text, cut = project_docs.read_inside(file, root.resolve())
    except project_docs.Refused as refused:
        source.note(str(file), f"skipped: {refused}")
        return []
    if cut:
        source.note(str(file), cut)
    front, body = front_matter(text)
    when = mtime(file)
    extra: dict[str, object] = {k: v for k, v in front.items()
                                if k in ("name", "description", "type")}
    scope = scoped_paths(text) if kind == "rules" else []
    if scope:
        extra["paths"] = scope
    items = []
    for number, section in enumerate(project_docs.split_sections(body, file.name)):
        items.append(ImportItem(
            key=f"{NAME}\0{file}\0{number}\0{section.text}",
            content=section.text,
            namespace=namespace,
            memory_type=MemoryType.SEMANTIC,
            importance=IMPORTANCE[kind],
            tags=labels([NAME, kind, front.get("type", ""), *(f"paths:{p}" for p in scope)]),
            metadata={"source": NAME, "file": str(file), "section": section.heading, **extra},
            created_at=when,
        ))
    return items


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """`key: value` lines of a leading `---` block, and the text after it."""
    match = _FRONT.match(text)
    if match is None:
        return {}, text
    fields = {}
    for line in match["body"].splitlines():
        found = _FIELD.match(line)
        if found:
            fields[found["key"]] = found["value"].strip("'\"")
    return fields, text[match.end():]


_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(?P<value>.*?)[ \t]*$|^-[ \t]+(?P<top>.*?)[ \t]*$")


def scoped_paths(text: str) -> list[str]:
    """The globs of a rule's `paths:` front matter: a YAML block list (`- "src/**/*.ts"`), a
    flow list (`["a", "b"]`) or one line of comma-separated globs."""
    match = _FRONT.match(text)
    if match is None:
        return []
    lines = match["body"].splitlines()
    for index, line in enumerate(lines):
        found = _FIELD.match(line)
        if found is None or found["key"] != "paths":
            continue
        value = found["value"]
        if value:
            return _globs(value.strip("[]").split(","))
        block = []
        for item in lines[index + 1:]:
            entry = _LIST_ITEM.match(item)
            if entry is None:
                break
            block.append(entry["value"] if entry["value"] is not None else entry["top"])
        return _globs(block)
    return []


def _globs(values: list[str]) -> list[str]:
    cleaned = (v.strip().strip("'\"").strip() for v in values)
    return list(dict.fromkeys(v for v in cleaned if v))


READER = Reader(read, EXPECTS)
