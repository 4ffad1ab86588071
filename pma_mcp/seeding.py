"""Project docs → semantic memories (pure): the seed's `seed_project`.

CLAUDE.md, README.md and docs/*.md are split at Markdown headings; each section (with its
heading path for context) becomes one memory. Long sections are cut at paragraph boundaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SEED_FILES = ("CLAUDE.md", "README.md")
SEED_GLOB = "docs/*.md"
MAX_SECTION_CHARS = 4_000
MIN_SECTION_CHARS = 40
MAX_FILE_BYTES = 2_000_000

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    source: str
    heading: str
    text: str


def project_files(root: Path) -> list[Path]:
    files = [root / name for name in SEED_FILES if (root / name).is_file()]
    files.extend(sorted(p for p in root.glob(SEED_GLOB) if p.is_file()))
    return files


def split_sections(markdown: str, source: str) -> list[Section]:
    """Sections of a Markdown document, headings inside code fences ignored."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(body).strip()
        heading = " > ".join(title for _, title in path) if path else Path(source).name
        for chunk in _chunks(text):
            if len(chunk) >= MIN_SECTION_CHARS:
                sections.append(Section(source, heading, f"{heading}\n\n{chunk}"))
        body.clear()

    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, match.group(2)))
        else:
            body.append(line)
    flush()
    return sections


def _chunks(text: str) -> list[str]:
    if len(text) <= MAX_SECTION_CHARS:
        return [text] if text else []
    chunks: list[str] = []
    current = ""
    for block in re.split(r"\n\s*\n", text):
        para = block
        while len(para) > MAX_SECTION_CHARS:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(para[:MAX_SECTION_CHARS])
            para = para[MAX_SECTION_CHARS:]
        if current and len(current) + len(para) + 2 > MAX_SECTION_CHARS:
            chunks.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        chunks.append(current)
    return chunks


def read_sections(root: Path) -> list[Section]:
    sections: list[Section] = []
    for file in project_files(root):
        try:
            raw = file.read_bytes()[:MAX_FILE_BYTES]
        except OSError:
            continue
        text = raw.decode("utf-8", errors="replace").replace("\x00", "")
        sections.extend(split_sections(text, str(file.relative_to(root))))
    return sections
