"""`pma-mcp migrate --to TARGET`: copy a whole store to another one (SQLite ⇄ PostgreSQL).

Lossless: every memory of every namespace verbatim (id, tier, counts, timestamps, labels,
metadata, supersede links), its whole lineage, and the hooks' per-session records. The target
rebuilds its own index, term vectors and statistics from the memories, written in the
source's order so session neighbours stay neighbours.

Resumable: memories and lineage are copied in pages, each page one transaction in the target,
and where the copy got to is kept in a small state file (under XDG_STATE_HOME) after every
page. Run the same command again after an interruption and it carries on from there; the
state file goes once the copy is complete. A memory the target already holds (same id, or
same content in the same namespace) is skipped, so a page repeated after a crash is harmless.

A target that already holds memories is refused unless `merge` is given (or it is the
unfinished copy being resumed): copying into a live store mixes two histories.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pma_mcp.config import POSTGRES_SCHEMES, Settings
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.store import Store, open_store

PAGE = 500
"""Memories (or lineage events) per target transaction."""

Progress = Callable[[int, int], None]


@dataclass
class CopyReport:
    """What one run copied (a resumed run counts only its own part)."""

    source: str
    target: str
    memories_copied: int = 0
    memories_skipped: int = 0
    lineage_copied: int = 0
    sessions_copied: int = 0
    resumed: bool = False


@dataclass
class _Progress:
    """Where an unfinished copy got to: the last source seq and lineage id copied."""

    path: Path
    memory_seq: int = 0
    lineage_id: int = 0
    memories_done: int = 0

    @classmethod
    def load(cls, path: Path) -> _Progress | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(path, int(data["memory_seq"]), int(data["lineage_id"]),
                       int(data.get("memories_done", 0)))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError("--to", f"the progress file {path} of an earlier copy cannot "
                               f"be read ({exc}); delete it and run with --merge") from exc

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = self.path.with_suffix(".tmp")
        body = json.dumps({"memory_seq": self.memory_seq, "lineage_id": self.lineage_id,
                           "memories_done": self.memories_done}).encode()
        # 0600 whatever the umask: it names the stores being copied.
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, body)
        finally:
            os.close(fd)
        scratch.replace(self.path)

    def finish(self) -> None:
        self.path.unlink(missing_ok=True)


def target_settings(settings: Settings, target: str) -> Settings:
    """The settings that open `target`: a postgresql:// URL, else a SQLite file path."""
    target = target.strip()
    if not target:
        raise InvalidInputError("--to", "give a postgresql:// URL or a SQLite file path")
    if target.startswith(POSTGRES_SCHEMES):
        return dataclasses.replace(settings, database_url=target, storage="sqlite")
    return dataclasses.replace(settings, database_url=None, storage="sqlite",
                               db_path=Path(target).expanduser().resolve())


def state_dir(env: dict[str, str] | None = None) -> Path:
    """Where unfinished copies keep their progress."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base) / "pma-mcp"


async def migrate(
    settings: Settings,
    target: str,
    *,
    merge: bool = False,
    progress: Progress | None = None,
    states: Path | None = None,
) -> CopyReport:
    """Copy the store `settings` open into `target` (see the module docstring)."""
    destination = target_settings(settings, target)
    if (destination.store_file is not None and settings.store_file is not None
            and _same_file(settings.store_file, destination.store_file)):
        # Checked before the target is opened: SQLite names its journal after the path, so a
        # second spelling of an open file must never be opened at all.
        raise _itself(destination.database)
    source = await open_store(settings)
    try:
        sink = await open_store(destination)
        try:
            if await source.identity() == await sink.identity():
                raise _itself(destination.database)
            return await _copy(source, sink, merge=merge, progress=progress,
                               states=states or state_dir())
        finally:
            await sink.close()
    finally:
        await source.close()


def _same_file(source: Path, target: Path) -> bool:
    """Whether `target` is the file `source` (a hard link, a symlink, another spelling)."""
    try:
        return os.path.samefile(source.expanduser(), target)
    except OSError:  # the target does not exist yet: it cannot be the source
        return False


def _itself(shown: str) -> InvalidInputError:
    return InvalidInputError("--to", f"{shown} is the store being copied (the same "
                             "data under another name); name another store")


async def _copy(
    source: Store, sink: Store, *, merge: bool, progress: Progress | None, states: Path
) -> CopyReport:
    key = hashlib.sha256(f"{source.backend}:{source.location}\0{sink.backend}:"
                         f"{sink.location}".encode()).hexdigest()[:24]
    state = _Progress.load(states / f"migrate-{key}.json")
    report = CopyReport(source=source.location, target=sink.location, resumed=state is not None)
    if state is None:
        held = await sink.count()
        if held and not merge:
            raise InvalidInputError("--to", f"{sink.location} already holds {held:,} memories; "
                               "pass --merge to copy into it (memories it already has are "
                               "skipped), or name an empty target")
        state = _Progress(states / f"migrate-{key}.json")
        state.save()
    total = await source.count()
    while page := await source.memories_after(state.memory_seq, PAGE):
        copied = await sink.insert_many(page, skip_existing=True, lineage=False)
        report.memories_copied += copied
        report.memories_skipped += len(page) - copied
        state.memory_seq = page[-1].seq
        state.memories_done += len(page)
        state.save()
        if progress is not None:
            progress(min(state.memories_done, total), total)
    while events := await source.lineage_after(state.lineage_id, PAGE):
        report.lineage_copied += await sink.restore_lineage([row for _, row in events])
        state.lineage_id = events[-1][0]
        state.save()
    sessions = await source.session_state()
    await sink.restore_session_state(sessions)
    report.sessions_copied = len({s for s, _, _ in sessions.injections}
                                 | {s for s, _ in sessions.resets})
    await sink.refresh_statistics()
    state.finish()
    return report
