"""`--from claude-code`: Claude Code's own memory files → semantic memories, one per section.

PATH is a project directory (default: the working directory). Read from it: `CLAUDE.md`,
`.claude/CLAUDE.md`, `CLAUDE.local.md` and `.claude/rules/*.md`; and the project's auto memory,
`<claude home>/projects/<project>/memory/*.md`, where `<project>` is the directory's path with
every character that is not a letter or digit replaced by `-`. PATH may also be a memory folder
or one Markdown file. Memories go to the namespace a server started in the project would use.
Auto-memory topic files may open with YAML front matter (`name`, `description`, `type`): it is
kept in the metadata and `type` becomes a tag.

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
        return [("auto-memory", f, path) for f in sorted(path.glob("*.md"))], (
            source.namespace or source.current)
    files = [("instructions", path / name, path) for name in PROJECT_FILES
             if (path / name).is_file()]
    files += [("rules", f, path) for f in sorted(path.glob(RULES_GLOB)) if f.is_file()]
    auto = memory_dir(source.claude_home, path)
    auto_real = auto.resolve()
    files += [("auto-memory", f, auto_real) for f in sorted(auto.glob("*.md")) if f.is_file()]
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
    extra = {k: v for k, v in front.items() if k in ("name", "description", "type")}
    items = []
    for number, section in enumerate(project_docs.split_sections(body, file.name)):
        items.append(ImportItem(
            key=f"{NAME}\0{file}\0{number}\0{section.text}",
            content=section.text,
            namespace=namespace,
            memory_type=MemoryType.SEMANTIC,
            importance=IMPORTANCE[kind],
            tags=labels([NAME, kind, front.get("type", "")]),
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


READER = Reader(read, EXPECTS)
