"""What pma-mcp needs from git, read from git's own files: the remote and `user.email`.

Hooks are fresh processes on the prompt path, so git is never spawned: the repository is found
by walking up from the project directory (a `.git` folder, or a `.git` file saying `gitdir:`
as worktrees and submodules have), and its config is parsed here. Only what the two lookups
need is understood: sections, subsections, quoting and escapes, continuation lines,
`include.path`, `includeIf "gitdir:…"` (matched with fnmatch, whose `*` also crosses a `/`
where git's does not) and `url.<base>.insteadOf`. A file that cannot be read is skipped, never
an error: the caller falls back to the path namespace / the OS user.

Every file is read through `pma_mcp.files`: a FIFO, device or socket named as a config file,
an include, `.git` or `commondir` is skipped without blocking. Includes nest at most
MAX_INCLUDE_DEPTH deep as in git, and one lookup reads at most MAX_CONFIG_FILES files and
MAX_CONFIG_TOTAL_BYTES in all, so a file including itself several times costs a bounded
number of parses instead of one per path through the include tree.

A remote becomes one spelling for every clone (`remote_namespace`): `git:<host>/<path>`,
host and path lowercased, credentials, scheme, port, `.git` and slashes left out. Nothing
before the host (a user, a password, a token) is ever returned, so it cannot be stored or
logged.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pma_mcp import files

NAMESPACE_PREFIX = "git:"
MAX_INCLUDE_DEPTH = 10
"""git's own limit on nested includes."""
MAX_CONFIG_BYTES = 1 << 20
"""A config file past this is not a config file; it is skipped."""
MAX_CONFIG_FILES = 200
"""Config files (includes counted) one read_config parses at most; the rest are skipped."""
MAX_CONFIG_TOTAL_BYTES = 8 << 20
"""Bytes one read_config parses at most over all its files."""
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_SCP = re.compile(r"^(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+):(.*)$", re.DOTALL)
_ESCAPED = re.compile(r"\\(.)")
_NETWORK_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git", "git", "http", "https", "ftp", "ftps"})

Config = dict[str, list[str]]
"""Variables by canonical name (`section.key` or `section.<subsection>.key`, section and key
lowercased, subsection as written), each with its values in file order (the last one wins)."""


@dataclass(frozen=True, slots=True)
class Repository:
    """A work tree's root and its git directories (`common` holds `config` and remotes)."""

    root: Path
    git_dir: Path
    common_dir: Path


@dataclass(frozen=True, slots=True)
class Remote:
    name: str
    url: str


@dataclass(slots=True)
class _Parsed:
    values: Config = field(default_factory=dict)
    remotes: list[str] = field(default_factory=list)
    """Remote names in the order their url first appears."""
    files_left: int = MAX_CONFIG_FILES
    bytes_left: int = MAX_CONFIG_TOTAL_BYTES


def find_repository(start: str | os.PathLike[str]) -> Repository | None:
    """The git repository holding `start` (itself or an ancestor), or None.

    `start` is expected canonical (config.canonical_namespace has resolved it).
    """
    here = Path(start)
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        try:
            git_dir = dot_git if dot_git.is_dir() else _gitdir_of(dot_git)
        except OSError:
            continue
        if git_dir is not None:
            return Repository(root=folder, git_dir=git_dir, common_dir=_common_dir(git_dir))
    return None


def _gitdir_of(dot_git: Path) -> Path | None:
    """The directory a `.git` file points at (`gitdir: <path>`, relative to the file)."""
    if not dot_git.is_file():
        return None
    text = _read(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    git_dir = target if target.is_absolute() else dot_git.parent / target
    return git_dir if git_dir.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    """A linked worktree's `commondir` file names the main repository's git directory."""
    text = _read(git_dir / "commondir")
    if not text or not text.strip():
        return git_dir
    target = Path(text.strip())
    return target if target.is_absolute() else (git_dir / target)


def _read(path: Path) -> str | None:
    return files.read_text(path, MAX_CONFIG_BYTES)


# ------------------------------------------------------------------ config files


def global_config_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    """The files git reads before the repository's own, lowest precedence first."""
    system = Path("/etc/gitconfig")
    if env.get("GIT_CONFIG_NOSYSTEM", "").strip().lower() in ("1", "true", "yes"):
        paths = []
    else:
        paths = [Path(env["GIT_CONFIG_SYSTEM"]) if env.get("GIT_CONFIG_SYSTEM") else system]
    if env.get("GIT_CONFIG_GLOBAL"):
        return [*paths, Path(env["GIT_CONFIG_GLOBAL"]).expanduser()]
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    paths.append((Path(xdg) if xdg else home / ".config") / "git" / "config")
    paths.append(home / ".gitconfig")
    return paths


def read_config(
    paths: list[Path], repo: Repository | None, home: Path
) -> tuple[Config, list[str]]:
    """Every variable of `paths` and then the repository's config, with its includes; and the
    repository's remote names in file order."""
    merged = _Parsed()
    for path in paths:
        _parse_file(path, merged, repo, home, 0)
    remotes_before = len(merged.remotes)
    if repo is not None:
        _parse_file(repo.common_dir / "config", merged, repo, home, 0)
    return merged.values, merged.remotes[remotes_before:]


def _parse_file(path: Path, into: _Parsed, repo: Repository | None, home: Path,
                depth: int) -> None:
    if depth > MAX_INCLUDE_DEPTH or into.files_left <= 0 or into.bytes_left <= 0:
        return
    into.files_left -= 1
    text = _read(path)
    if text is None:
        return
    into.bytes_left -= len(text)
    for name, value in parse(text):
        into.values.setdefault(name, []).append(value)
        section, _, key = name.rpartition(".")
        if key == "url" and section.startswith("remote.") and section[7:] not in into.remotes:
            into.remotes.append(section[7:])
        included = _include_target(name, value, path, repo, home)
        if included is not None:
            _parse_file(included, into, repo, home, depth + 1)


def _include_target(
    name: str, value: str, path: Path, repo: Repository | None, home: Path
) -> Path | None:
    """The file an `include.path` or matching `includeIf "gitdir:…".path` names."""
    if name == "include.path":
        pass
    elif name.startswith("includeif.") and name.endswith(".path"):
        condition = name[len("includeif."):-len(".path")]
        if repo is None or not _gitdir_matches(condition, repo.git_dir, path, home):
            return None
    else:
        return None
    target = home / value[2:] if value.startswith("~/") else Path(value)
    return target if target.is_absolute() else path.parent / target


def _gitdir_matches(condition: str, git_dir: Path, config_path: Path, home: Path) -> bool:
    """`gitdir:` / `gitdir/i:` conditions (git's rules for `~/`, `./`, a trailing `/`)."""
    fold = condition.startswith("gitdir/i:")
    if not fold and not condition.startswith("gitdir:"):
        return False  # onbranch:, hasconfig: … are not evaluated
    pattern = condition.partition(":")[2]
    if pattern.startswith("~/"):
        pattern = f"{home}/{pattern[2:]}"
    elif pattern.startswith("./"):
        pattern = f"{config_path.parent}/{pattern[2:]}"
    elif not pattern.startswith("/"):
        pattern = f"**/{pattern}"
    if pattern.endswith("/"):
        pattern += "**"
    subject = f"{os.path.realpath(git_dir)}/"
    if fold:
        pattern, subject = pattern.lower(), subject.lower()
    return fnmatch.fnmatchcase(subject, pattern) or fnmatch.fnmatchcase(subject[:-1], pattern)


def parse(text: str) -> Iterator[tuple[str, str]]:
    """(canonical variable name, value) for each assignment in one git config file."""
    section = ""
    lines = iter(text.splitlines())
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            header, _, rest = stripped[1:].partition("]")
            section = _section_name(header)
            stripped = rest.strip()
            if not stripped or stripped[0] in "#;":
                continue
        if not section:
            continue
        key, eq, raw = stripped.partition("=")
        key = key.strip().lower()
        if not key or not re.fullmatch(r"[a-z][a-z0-9-]*", key):
            continue
        if not eq:
            yield f"{section}.{key}", "true"
            continue
        while _continues(raw):
            raw = raw[:-1] + next(lines, "")
        yield f"{section}.{key}", _value(raw)


def _section_name(header: str) -> str:
    """`core`, `remote "origin"` → `remote.origin`; the legacy `[remote.origin]` form too."""
    name, space, sub = header.partition(" ")
    name = name.strip().lower()  # [section.subsection]: git lowercases that subsection too
    sub = sub.strip()
    if space and len(sub) >= 2 and sub[0] == sub[-1] == '"':
        return name + "." + _ESCAPED.sub(r"\1", sub[1:-1])
    return name


def _continues(raw: str) -> bool:
    """A value ending in an unescaped backslash, outside quotes, goes on on the next line."""
    trailing = len(raw) - len(raw.rstrip("\\"))
    return raw.endswith("\\") and trailing % 2 == 1


def _value(raw: str) -> str:
    """Quotes removed, escapes decoded, an unquoted comment cut, outer whitespace trimmed."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    chars = iter(raw.strip())
    for ch in chars:
        if ch == '"':
            quoted = not quoted
            continue
        text = ch
        if ch == "\\":
            escaped = next(chars, "")
            text = {"n": "\n", "t": "\t", "b": "\b"}.get(escaped, escaped)
        elif not quoted and ch in "#;":
            break
        elif not quoted and ch.isspace():
            pending_space += ch
            continue
        out.append(pending_space + text)
        pending_space = ""
    return "".join(out)


def last(config: Config, name: str) -> str | None:
    values = config.get(name)
    return values[-1] if values else None


# --------------------------------------------------------------------- remotes


def remote_of(config: Config, remote_names: list[str]) -> Remote | None:
    """`origin` if the repository has it, else its first remote (in file order)."""
    names = remote_names
    if not names:
        return None
    chosen = "origin" if "origin" in names else names[0]
    urls = config.get(f"remote.{chosen}.url")  # git fetches from the first of several
    return Remote(chosen, _rewritten(config, urls[0])) if urls and urls[0] else None


def _rewritten(config: Config, url: str) -> str:
    """`url.<base>.insteadOf` applied as git applies it: the longest matching prefix."""
    best = ("", "")
    for name, values in config.items():
        if name.startswith("url.") and name.endswith(".insteadof"):
            base = name[len("url."):-len(".insteadof")]
            for prefix in values:
                if prefix and url.startswith(prefix) and len(prefix) > len(best[0]):
                    best = (prefix, base)
    return best[1] + url[len(best[0]):] if best[0] else url


def remote_namespace(url: str) -> str | None:
    """One spelling of a network remote for every clone: `git:<host>/<path>`, or None.

    `git@github.com:Acme/api.git`, `https://user:token@github.com/acme/api` and
    `ssh://git@github.com:22/acme/api.git/` are all `git:github.com/acme/api`. The path is
    lowercased as the host is: the hosting services (GitHub, GitLab, Bitbucket) treat it
    case-insensitively, so two teammates typing `Acme/API` and `acme/api` share a namespace;
    the cost is that two repositories on one host differing only by case would share one.
    The port is dropped: one self-hosted server is often cloned over SSH on port 2222 and
    over HTTPS on 443. A local path or `file://` remote names no shared repository: None.
    """
    host_path = _host_and_path(url.strip())
    if host_path is None:
        return None
    host, path = host_path
    host = host.lower().rstrip(".")
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    while parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
        if not parts[-1]:
            parts.pop()
    if not host or not parts or any(ch.isspace() or ord(ch) < 32 for ch in host):
        return None
    return f"{NAMESPACE_PREFIX}{host}/{'/'.join(parts).lower()}"


def _host_and_path(url: str) -> tuple[str, str] | None:
    scheme_match = _SCHEME.match(url)
    if scheme_match:
        scheme, rest = scheme_match.group(1).lower(), scheme_match.group(2)
        if scheme not in _NETWORK_SCHEMES:
            return None
        # Everything up to the last "@" is user, password or token, and is never kept: a
        # password written with a raw "/" in it must not become part of the path.
        rest = re.split(r"[?#]", rest, maxsplit=1)[0].rpartition("@")[2]
        hostport, _, path = rest.partition("/")
        if hostport.startswith("["):
            host = hostport[: hostport.find("]") + 1]
        else:
            host = hostport.partition(":")[0]
        return host, path
    if "://" in url or url.startswith(("/", ".", "~")):
        return None
    scp = _SCP.match(url)
    if scp is None:
        return None
    host, path = scp.group(1), scp.group(2)
    if len(host) == 1 and path.startswith(("\\", "/")):  # C:\repo — a Windows path
        return None
    return host, path
