"""pma-mcp installed the ways a user installs it, for tests that run what they print.

A wheel built with `uv build` and installed (locked dependency versions, offline from uv's
cache) into a fresh virtual environment outside the checkout; a clean clone (the files git
would check out, links kept as links, no .venv or caches).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.node_tools import base_python, uv_binary

ROOT = Path(__file__).resolve().parents[1]


def uv(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run([uv_binary(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def build_wheel(out: Path) -> Path:
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree to build from")
    uv("build", "--wheel", "--offline", "--out-dir", str(out), "--quiet")
    return next(out.glob("pma_mcp-*.whl"))


def wheel_venv(wheel: Path, where: Path) -> Path:
    """A new virtual environment holding the wheel and the locked server dependencies."""
    pins = where / "requirements.txt"
    uv("export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "--quiet",
       "-o", str(pins))
    uv("venv", "--quiet", "--python", base_python(), str(where / "venv"))
    python = where / "venv" / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", str(python), "-r", str(pins), str(wheel))
    return where / "venv"


def clean_clone(target: Path) -> Path:
    """The files git would check out (tracked plus new, not ignored) copied to `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a clone would hold")
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if not name or not (source.is_symlink() or source.is_file()):
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target / name)
        else:
            shutil.copy2(source, target / name)
    return target
