"""Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright.

Playwright's own browser download does not work offline, so it is given the system browser
(`executable_path`); the flags keep Chromium from reaching for the network (this machine's is
closed) and let it run as root in a container.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
INSTALL_HINT = ("browser tests skipped: no Chromium; `apt-get install -y chromium` (as .ci/run "
                "does) and rerun `uv run pytest tests/test_ui_browser.py`")


def chromium_path() -> Path | None:
    """The Chromium to drive, or None (the browser tests are then skipped)."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None
