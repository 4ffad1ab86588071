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
