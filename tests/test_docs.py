"""Docs that leave the repository: README links must work on a package index page."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_links_are_absolute_and_point_at_the_repository() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    relative = [link for link in links if not re.match(r"^(https?://|#)", link)]
    assert not relative
    ours = [link for link in links if "github.com" in link]
    assert ours and all(link.startswith(urls["Repository"]) for link in ours)


def test_changelog_and_license_ship() -> None:
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()


def _code_paths(text: str) -> set[str]:
    """Backticked file paths (`core/scoring.py`, `store/seam.py`, …) in a Markdown text."""
    return {p.split(" ")[0] for p in re.findall(r"`([\w./-]+\.(?:py|json))", text)}


def test_the_architecture_map_names_files_that_exist() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = text.split("## Where to change what", 1)[1]
    named = _code_paths(text)
    assert len(_code_paths(table)) >= 20
    missing = sorted(p for p in named if not any(
        (base / p).exists() for base in (ROOT, ROOT / "pma_mcp", ROOT / "hooks")))
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
