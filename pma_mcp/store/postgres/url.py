"""Database URLs for people: a password never leaves this process in a message.

`location` is what `doctor`, `stats` and errors show: the URL without its password (and
without query parameters, which may hold one as `password=`). `redact` is the one function
every message that could quote the URL passes through.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from pma_mcp.config import url_passwords as secrets
from pma_mcp.config import url_without_password

_PASSWORD_PARAM = re.compile(r"(password=)[^&\s]*", re.IGNORECASE)


def location(url: str) -> str:
    """`url` without its password or query string: postgresql://user@host:port/db (the one
    spelling Settings.database shows too)."""
    return url_without_password(url)


def query_value(url: str, name: str) -> str | None:
    """The value of query parameter `name` in `url`, if it has one."""
    try:
        for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
            if key == name:
                return value
    except ValueError:
        pass
    return None


def redact(text: str, url: str) -> str:
    """`text` with `url` shown as its `location` and any password of it masked."""
    text = text.replace(url, location(url))
    for secret in sorted(secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return _PASSWORD_PARAM.sub(r"\1***", text)
