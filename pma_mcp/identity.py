"""Where and who: a project's team namespace (from its git remote) and the author of a write.

Two teammates' checkouts of one repository sit at different paths, so a path namespace would
split the team's memory; the normalised remote (`gitconfig.remote_namespace`) is the same in
every clone. The author is the person git would name for a commit there. Both come from one
read of git's config files (no subprocess: see gitconfig.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pma_mcp import gitconfig
from pma_mcp.core.models import UNKNOWN_AUTHOR
from pma_mcp.core.validation import MAX_NAMESPACE_CHARS, author_text, namespace_name

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Identity:
    """What git says about a project directory; None where it says nothing usable."""

    namespace: str | None = None
    """`git:<host>/<path>` of the repository's origin (else first) network remote."""
    root: Path | None = None
    """The repository's work-tree root (a namespace of its path may hold older memories)."""
    email: str | None = None
    """`user.email` as git resolves it there (repository config over the global files)."""


def identify(project_dir: str | None, env: Mapping[str, str], home: Path) -> Identity:
    """What git's files say about `project_dir` (canonical), read once for both lookups.

    A repository whose root is the home directory or "/" (a dotfiles checkout) is not taken
    as the project: every folder under home would otherwise share its namespace.
    """
    repo = gitconfig.find_repository(project_dir) if project_dir else None
    if repo is not None and repo.root in (Path(os.path.realpath(home)), Path(repo.root.anchor)):
        repo = None
    config, remotes = gitconfig.read_config(gitconfig.global_config_paths(env, home), repo, home)
    email = author_text(gitconfig.last(config, "user.email") or "")
    if repo is None:
        return Identity(email=email)
    remote = gitconfig.remote_of(config, remotes)
    namespace = gitconfig.remote_namespace(remote.url) if remote is not None else None
    if namespace is not None and not namespace_name(namespace):
        # Neither stored nor shown: a remote's bytes are whatever a cloned repository's
        # config says (terminal escapes, bidi overrides, NUL, megabytes).
        log.warning("this checkout's git remote does not make a usable namespace (control "
                    "or bidi characters, or over %d characters); using the directory's path "
                    "instead. Fix the remote's URL or set PMA_NAMESPACE", MAX_NAMESPACE_CHARS)
        namespace = None
    return Identity(namespace=namespace, root=repo.root, email=email)




def os_user() -> str | None:
    """The login name (LOGNAME/USER/… then the password database), or None if there is none."""
    import getpass  # only when neither PMA_AUTHOR nor git names the author

    try:
        return author_text(getpass.getuser())
    except (OSError, KeyError, ImportError):
        return None


def home_dir(env: Mapping[str, str]) -> Path:
    """HOME as git reads it (falling back to the password database)."""
    home = env.get("HOME", "").strip()
    return Path(home) if home else Path(os.path.expanduser("~"))


def person_key(author: str | None) -> str:
    """An author as part of a namespace name: case folded (one person, one spelling)."""
    return (author or UNKNOWN_AUTHOR).casefold()
