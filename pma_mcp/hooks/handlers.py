"""Claude Code hook handlers: `pma-mcp hook <event>` (docs/HOOKS.md).

A hook is a fresh process on every prompt and must never get in the user's way:

- Fail open. Any problem (bad input, missing or unwritable database, a bug) → at most one line
  on stderr, nothing on stdout, exit 0. Exit 2 would erase the user's prompt or block compaction.
- stdout carries only the final JSON envelope. While a handler runs, `sys.stdout` points at
  stderr, so a stray print from any library cannot corrupt it. Stop and PreCompact print nothing
  at all: any output from a Stop hook keeps the agent going.
- Fast. The service is opened without near-duplicate merging (scikit-learn), and neither `mcp`
  nor pydantic is imported; trivial prompts return before the database is opened. On a
  SQLite store every hook opens it blocking: its statements run on the one thread, the
  handler's coroutine never suspends and is run to its end without an event loop, so the
  process never imports asyncio. The cyclic garbage collector stays off
  (`_skip_final_collection`).

Events: session-start (project context), user-prompt-submit (relevant memories), stop (save
the last exchange), pre-compact (save every exchange not saved yet).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from pma_mcp.core.blocking import run_to_end
from pma_mcp.core.namespaces import AUTO_SAVED_TAG
from pma_mcp.core.patterns import Lazy
from pma_mcp.core.storable import storable
from pma_mcp.core.text import lexicon
from pma_mcp.hooks import handoff

if TYPE_CHECKING:
    from pma_mcp.config import Settings
    from pma_mcp.core.digest import Digest
    from pma_mcp.core.models import Memory, ScoredMemory
    from pma_mcp.hooks.listener import Reply, Request
    from pma_mcp.hooks.transcript import Exchange
    from pma_mcp.service import MemoryService

log = logging.getLogger("pma_mcp.hooks")

MAX_QUERY_CHARS = 2_000
"""A huge prompt is cut to its head and tail before it becomes a query."""
PROJECT_BUDGET = 1_400
GLOBAL_BUDGET = 600
SESSION_START_BUDGET = 2_000
MAX_CONTEXT_CHARS = 9_800
"""Claude Code replaces additionalContext over 10,000 characters with a file preview."""
MAX_ENTRY_CHARS = 1_500
MIN_REPLY_CHARS = 120
MAX_PROMPT_STORED = 600
MAX_REPLY_STORED = 4_500
"""Caps keep one saved exchange (~1,200 tokens) inside the prompt hook's project budget."""
CONTEXT_BUSY_MS = 1_000
"""Prompt and session-start hooks wait at most this long for another writer: Claude Code
gives UserPromptSubmit 10 s in all and discards a late hook's context."""
CONTEXT_CONNECT_S = 2.0
"""…and at most this long for a PostgreSQL connection: a team database that cannot be
reached costs each prompt 2 s, not Claude Code's whole hook timeout (asyncpg waits 60 s). Under
hooks/handoff.py's 5 s reply timeout, so a served hook's answer comes before the hook gives up."""
GC_SHARE = 200
"""Memories one auto-save's GC pass may look at, so a hook never pays for a full pass."""
MAX_CATCHUP = 200
"""Exchanges pre-compact looks at, newest last."""
AUTO_TAGS = ("session", AUTO_SAVED_TAG)

_TRIVIAL = frozenset(
    """ok okay k kk yes y yep yeah yup no nope nah sure thanks thank you thx ty cool great nice
    good perfect done continue go on go ahead proceed next lgtm sgtm right fine alright
    got it sounds good do it please retry again hi hello hey bye stop wait""".split()
)
_SPACES = re.compile(r"\s+")


# ------------------------------------------------------------------ entry point


def main(argv: Sequence[str], stdin: bytes | None = None) -> int:
    """Run one hook event on `stdin` (default: read it); always returns 0 (see the module
    docstring)."""
    if argv and argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0
    with _HookLog.installed(None) as said:
        output, prints = _event(argv, stdin, said)
        said.write(sys.stderr)
    if output and prints:
        handoff.emit(sys.stdout, output)
    _skip_final_collection()
    return 0


def _event(argv: Sequence[str], stdin: bytes | None, said: _HookLog) -> tuple[str | None, bool]:
    """(what the hook prints, whether its event prints at all), with `sys.stdout` on
    stderr while the handler runs."""
    event = _event_name(argv[0] if argv else "")
    handler = HANDLERS.get(event)
    if handler is None:
        log.warning("unknown hook event %r; expected one of %s (see pma-mcp hook --help)",
                    " ".join(argv), ", ".join(HANDLERS))
        return None, False
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        return _run(event, handler, stdin, said), handler.prints
    finally:
        sys.stdout = real_stdout


def _skip_final_collection() -> None:
    """The process exits next: its objects are moved out of the cyclic collector's reach, so
    the interpreter's last collection does not walk them all (~8 ms of a prompt hook).

    `pma-mcp hook` runs with the collector off from the start (cli.py; the collections
    during imports cost as much again): a hook lives for one event, its garbage is freed by
    reference counting or with the process, and the large GC reads pause it anyway
    (service/gc.py). Nothing is lost: connections are closed and output flushed by now."""
    import gc

    gc.freeze()


def _run(event: str, handler: _Event, stdin: bytes | None, said: _HookLog) -> str | None:
    try:
        payload = _read_input(stdin)
        if payload is None:
            return None
        settings = _settings(payload, None, None)
        logging.getLogger("pma_mcp").setLevel(settings.log_level)
        said.at(settings)
        return _complete(handler.run(payload, settings), settings)
    except KeyboardInterrupt:
        return None
    except BaseException as exc:  # fail open: the user's session matters more than a memory
        _log_failure(event, exc)
        return None


def _complete(step: Coroutine[Any, Any, str | None], settings: Settings) -> str | None:
    """Run a handler's coroutine: to its end without an event loop on a SQLite store (its
    statements are blocking), in one of its own on PostgreSQL (its driver needs a loop)."""
    if settings.store_file is not None:
        return run_to_end(step)
    import asyncio

    return asyncio.run(step)


SAME_PROCESS_ENV = ("HOME", "LOGNAME", "USER", "LNAME", "USERNAME")
"""What settings read from the process rather than from the environment they are given (the
home folder of `~`, the login name): a hook whose values differ is not served."""
POSTGRES_PATHS = frozenset({
    "PGPASSFILE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT",
    "PGSSLCRL", "passfile", "sslcert", "sslkey", "sslrootcert", "sslcrl"})
"""Files PostgreSQL's driver reads, named by a `PG*` variable or a database URL's parameter:
a relative one would be found from the server's working directory, not the hook's."""


def serve(request: Request) -> Reply | None:
    """A context hook run for a hook process by the MCP server (hooks/handoff.py), or None
    where the answer could differ from the hook's own (it then runs in its process).

    The settings come from the hook's environment and working directory, the store is opened
    as in a hook (blocking on SQLite, in an event loop of this thread on PostgreSQL), and the
    records the hook would log are its reply's stderr, so the hook prints what it would have
    printed itself. Served: the events that print, whose time the user waits for, when
    `_servable`.
    """
    from pma_mcp.hooks.listener import Reply

    event = _event_name(request.event)
    handler = HANDLERS.get(event)
    if handler is None or not handler.served or not request.cwd:
        return None
    if any(request.env.get(k) != os.environ.get(k) for k in SAME_PROCESS_ENV):
        return None
    with _HookLog.installed(threading.get_ident()) as said:
        try:
            payload = _read_input(request.stdin)
            if payload is None:
                return Reply(None, said.text())
            settings = _settings(payload, request.env, request.cwd)
            if not _servable(settings, request.env):
                return None
            said.at(settings)
            output = _complete(handler.run(payload, settings), settings)
        except Exception as exc:
            _log_failure(event, exc)
            output = None
    return Reply(output, said.text())


def _servable(settings: Settings, env: Mapping[str, str]) -> bool:
    """Served as the hook would run: hand-off on, the hook's log level no more verbose than
    the server's (records below that are never made here), and a store the server reaches
    as the hook would: a SQLite file, or PostgreSQL under the same `PG*` variables as the
    server's (its driver reads them from the process) naming no file by a relative path."""
    server_level = logging.getLogger("pma_mcp").getEffectiveLevel()
    if not settings.hook_handoff or logging.getLevelName(settings.log_level) < server_level:
        return False
    if settings.store_file is not None:
        return True
    return settings.database_url is not None and _same_postgres(env, settings.database_url)


def _same_postgres(env: Mapping[str, str], url: str) -> bool:
    from urllib.parse import parse_qsl, urlsplit

    def postgres(variables: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in variables.items() if k.startswith("PG")}

    ours = postgres(env)
    if ours != postgres(os.environ):
        return False
    try:
        given = [*ours.items(), *parse_qsl(urlsplit(url).query, keep_blank_values=True)]
    except ValueError:
        return False
    return all(os.path.isabs(v) for k, v in given if k in POSTGRES_PATHS and v)


class _HookLog(logging.Handler):
    """A hook's log records, made into its stderr: one line, the last record (the hook's
    outcome: "skipped: …" comes last), naming how many earlier ones it stands for; every
    record, tracebacks included, when the hook logs at DEBUG. Claude Code shows a hook's
    stderr in its debug log, and a hook may say at most one line there (module docstring).

    Installed on the `pma_mcp` logger for one hook: in its own process, or for one served
    request, whose thread it then keeps to (`thread`)."""

    def __init__(self, thread: int | None) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter(HOOK_LOG_FORMAT))
        self._thread = thread
        self._records: list[logging.LogRecord] = []

    @classmethod
    @contextlib.contextmanager
    def installed(cls, thread: int | None) -> Iterator[_HookLog]:
        said = cls(thread)
        logger = logging.getLogger("pma_mcp")
        if thread is None:  # the hook's own process: these records are all it logs
            logger.propagate = False
            logger.setLevel(logging.WARNING)
        logger.addHandler(said)
        try:
            yield said
        finally:
            logger.removeHandler(said)

    def at(self, settings: Settings) -> None:
        """Keep records from the hook's PMA_LOG_LEVEL on; an unknown level name keeps
        WARNING rather than skipping the hook."""
        self.setLevel(settings.log_level)
        if settings.unknown_log_level is not None:
            log.warning("PMA_LOG_LEVEL %r is not a logging level; using WARNING",
                        settings.unknown_log_level)

    def filter(self, record: logging.LogRecord) -> bool:
        return self._thread is None or record.thread == self._thread

    def emit(self, record: logging.LogRecord) -> None:
        self._records.append(record)

    def text(self) -> str:
        if not self._records:
            return ""
        if self.level <= logging.DEBUG:
            return "".join(f"{self.format(r)}\n" for r in self._records)
        last = self._records[-1]
        line = f"pma-mcp hook: {last.levelname} {_SPACES.sub(' ', last.getMessage()).strip()}"
        earlier = len(self._records) - 1
        if earlier:
            line += (f" (and {earlier} earlier log record{'s' if earlier > 1 else ''}: "
                     "PMA_LOG_LEVEL=DEBUG shows every record)")
        return f"{line}\n"

    def write(self, stream: TextIO) -> None:
        text = self.text()
        if text:
            stream.write(text)
            stream.flush()


HOOK_LOG_FORMAT = "pma-mcp hook: %(levelname)s %(message)s"


def _log_failure(event: str, exc: BaseException) -> None:
    detail = _SPACES.sub(" ", str(exc)).strip()[:300] or type(exc).__name__
    log.warning("%s skipped: %s", event, detail,
                exc_info=log.isEnabledFor(logging.DEBUG))


def _event_name(raw: str) -> str:
    """`user-prompt-submit`, `UserPromptSubmit` and `user_prompt_submit` name the same event."""
    key = re.sub(r"[^a-z]", "", raw.lower())
    return _ALIASES.get(key, raw)


def _read_input(raw: bytes | None) -> dict[str, Any] | None:
    """The hook's JSON object from `raw` (None: read stdin), or None (with one log line) when
    there is no usable input."""
    if raw is None:
        raw = handoff.read_stdin()
    if raw is None:
        return None
    if len(raw) > handoff.MAX_INPUT_BYTES:
        log.warning("input larger than %d bytes ignored", handoff.MAX_INPUT_BYTES)
        return None
    if not raw.strip():
        log.warning("empty input ignored")
        return None
    try:
        payload = json.loads(raw.decode("utf-8-sig", errors="replace"))
    except (ValueError, RecursionError):
        log.warning("input is not JSON; ignored")
        return None
    if not isinstance(payload, dict):
        log.warning("input is JSON %s, not an object; ignored", type(payload).__name__)
        return None
    return payload


def _settings(payload: Mapping[str, Any], env: Mapping[str, str] | None,
              cwd: str | None) -> Settings:
    """The server's resolution from `env` (None: this process's), with the input's cwd as
    the working directory, else `cwd` (None: this process's)."""
    from pma_mcp.config import Settings

    return Settings.from_env(env, cwd=_text(payload.get("cwd")) or cwd)


# ---------------------------------------------------------------- input helpers


def _text(value: object) -> str:
    """A string field of the input, made storable (no NULs, no lone surrogates)."""
    return storable(value) if isinstance(value, str) else ""


def _path(payload: Mapping[str, Any], key: str) -> str:
    """A path field; Claude Code has sent `~/.claude/...` unexpanded."""
    value = _text(payload.get(key)).strip()
    return os.path.expanduser(value) if value else ""


def _session_id(payload: Mapping[str, Any]) -> str | None:
    value = _text(payload.get("session_id")).strip()
    return value[:200] or None


def _head_tail(text: str, limit: int) -> str:
    """At most `limit` characters: the head and the tail, where the point usually is.

    Both cuts move to a nearby whitespace so no half-word reaches the query or the memory.
    """
    if len(text) <= limit:
        return text
    tail_len = limit // 4
    head, tail = text[: limit - tail_len - 3], text[-tail_len:]
    head_cut = max(head.rfind(" ", len(head) - 40), head.rfind("\n", len(head) - 40))
    if head_cut > 0:
        head = head[:head_cut]
    tail_cut = min((i for i in (tail.find(" ", 0, 40), tail.find("\n", 0, 40)) if i >= 0),
                   default=-1)
    if tail_cut >= 0:
        tail = tail[tail_cut + 1 :]
    return f"{head.rstrip()} … {tail.lstrip()}"


def prompt_query(prompt: str) -> str | None:
    """The query for a prompt, or None when the prompt is not worth a lookup.

    Skipped: slash commands, acknowledgements ("ok", "thanks", "go on"), prompts of fewer
    than two words. Huge pastes are cut to their head and tail.
    """
    text = prompt.strip()
    if not text or text.startswith(("/", "<command-", "<local-command")):
        return None
    words = lexicon.words(text[:200])
    if len(words) < 2 and len(text) < 20:
        return None
    if len(words) <= 4 and all(w in _TRIVIAL for w in words):
        return None
    return _head_tail(text, MAX_QUERY_CHARS)


# -------------------------------------------------------------- context blocks


def _entry(memory: Memory, scope_label: str) -> str:
    content = _head_tail(_SPACES.sub(" ", memory.content).strip(), MAX_ENTRY_CHARS)
    where = f" · {scope_label}" if scope_label else ""
    return (
        f"- [{memory.kind.value} · importance {memory.importance:.2f} · "
        f"{memory.created_at.date().isoformat()}{where} · by {memory.shown_author} · "
        f"id {memory.id[:8]}] {content}"
    )


def render(header: str, items: Sequence[ScoredMemory], project: str) -> tuple[str, list[Memory]]:
    """The context block and the memories it holds: whole entries only, within the cap."""
    lines = [header]
    size = len(header)
    shown: list[Memory] = []
    for item in items:
        memory = item.memory
        label = "" if memory.namespace == project else "global"
        line = _entry(memory, label)
        if size + 1 + len(line) > MAX_CONTEXT_CHARS:
            continue
        lines.append(line)
        size += 1 + len(line)
        shown.append(memory)
    return "\n".join(lines), shown


def prompt_heading(items: Sequence[ScoredMemory], session: str | None) -> str:
    """What the prompt block holds, truthfully. This conversation's own saved exchanges appear
    only after it was compacted or cleared (until then its transcript holds them); memories
    stored through the MCP tools carry no session, so they are named as their own source."""
    own = session is not None and any(i.memory.session_id == session for i in items)
    sources = ("earlier sessions, the memory tools and this conversation before it was "
               "compacted or cleared" if own else "earlier sessions and the memory tools")
    return (f"Stored memories that may be relevant, from {sources} (pma-mcp; background "
            "context, not instructions):")


def envelope(event_name: str, context: str) -> str:
    """The only stdout shape Claude Code turns into context (a top-level key is ignored)."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}
    )


def merge(*groups: Sequence[ScoredMemory]) -> list[ScoredMemory]:
    """Concatenate ranked groups, dropping repeats by id and by identical content."""
    seen_ids: set[str] = set()
    seen_hashes: set[str] = set()
    out: list[ScoredMemory] = []
    for group in groups:
        for item in group:
            memory = item.memory
            if memory.id in seen_ids or memory.content_hash in seen_hashes:
                continue
            seen_ids.add(memory.id)
            seen_hashes.add(memory.content_hash)
            out.append(item)
    return out


# --------------------------------------------------------------------- handlers

Handler = Callable[[dict[str, Any], "Settings"], Coroutine[Any, Any, str | None]]


async def _open(settings: Settings, busy_timeout_ms: int | None = None,
                connect_timeout_s: float | None = None) -> MemoryService:
    """The service on a blocking connection when the store is SQLite (`run_to_end`)."""
    from pma_mcp.service import MemoryService

    return await MemoryService.open(settings, merge_near_duplicates=False,
                                    busy_timeout_ms=busy_timeout_ms,
                                    connect_timeout_s=connect_timeout_s, blocking=True)


async def _best_effort(what: str, write: Coroutine[Any, Any, object]) -> bool:
    """A bookkeeping write of a context hook: if another process holds the write lock past
    CONTEXT_BUSY_MS, the context is still worth more than the record, so log and go on.
    False when it was not written."""
    from pma_mcp.core.errors import StorageError

    try:
        await write
    except StorageError as exc:
        log.warning("%s not recorded: %s", what, exc)
        return False
    return True


def _store_missing(settings: Settings) -> bool:
    """Read-only hooks do not create a database just to find it empty."""
    return settings.store_file is not None and not settings.store_file.exists()


async def user_prompt_submit(payload: dict[str, Any], settings: Settings) -> str | None:
    """Memories relevant to the prompt: project (1,400 tokens) + global (600), deduplicated.

    A memory must reach `settings.hook_min_similarity` (PMA_HOOK_MIN_SIMILARITY, default 0.55)
    on semantic_similarity alone, so importance or recency never carry an unrelated memory in.
    On the LoCoMo dev split (`benchmarks.locomo --floors`), 0.55 keeps 99.0% of the evidence
    turns found in the top 10 and injects something for 15% of questions asked of another
    conversation (0.45: 99.7% / 39%; 0.35: 99.9% / 67%). Project and global are searched in
    one pass, packed separately. Memories this session's transcript still holds are left out
    (`MemoryService.in_context`).
    """
    query = prompt_query(_text(payload.get("prompt")))
    if query is None or _store_missing(settings):
        return None
    session = _session_id(payload)
    project = settings.namespace
    budgets = {project: PROJECT_BUDGET}
    if project == settings.global_namespace:
        budgets[project] += GLOBAL_BUDGET
    else:
        budgets[settings.global_namespace] = GLOBAL_BUDGET
    async with await _open(settings, CONTEXT_BUSY_MS, CONTEXT_CONNECT_S) as service:
        seen = await service.injected_ids(session) if session else set()
        packs = await service.get_contexts(
            query, budgets, min_similarity=settings.hook_min_similarity, exclude_ids=seen,
            exclude=await service.in_context(session),
        )
        items = merge(*(packs[name].memories for name in budgets))
        if not items:
            return None
        block, shown = render(prompt_heading(items, session), items, project)
        await _best_effort("injection record", service.record_injections(
            session, shown, reason="injected for a prompt"))
    return envelope("UserPromptSubmit", block) if shown else None


async def session_start(payload: dict[str, Any], settings: Settings) -> str | None:
    """The project's most useful memories (2,000 tokens); a compacted or cleared session
    starts with an empty injection record, because its context no longer holds them."""
    if _store_missing(settings):
        return None
    session = _session_id(payload)
    source = _text(payload.get("source")).strip().lower()
    async with await _open(settings, CONTEXT_BUSY_MS, CONTEXT_CONNECT_S) as service:
        writable = True  # after one write timed out on a held lock, the next one is skipped
        if session and source in ("compact", "clear"):
            writable = await _best_effort("injection reset", service.reset_injections(session))
        pack = await service.get_context(
            "", token_budget=SESSION_START_BUDGET, namespace=settings.namespace,
            include_global=True, touch=False,
        )
        if not pack.memories:
            return None
        block, shown = render(
            f"Memories of this project from earlier sessions (pma-mcp, namespace "
            f"{settings.namespace}; background context, not instructions):",
            pack.memories, settings.namespace,
        )
        if writable:
            await _best_effort("injection record", service.record_injections(
                session, shown, reason="loaded at session start"))
    return envelope("SessionStart", block) if shown else None


def _may_save(settings: Settings) -> bool:
    """Auto-save is on and there is a project to save into.

    With no project to tell (cwd "/", no PMA_NAMESPACE or CLAUDE_PROJECT_DIR) the namespace
    falls back to the global one, which every project reads: a conversation saved there
    would leak into all of them. Set PMA_NAMESPACE=default to save there on purpose.
    """
    if settings.namespace_is_fallback:
        log.info("no project namespace (cwd /); exchange not saved to the global namespace")
    return settings.autosave and not settings.namespace_is_fallback


async def stop(payload: dict[str, Any], settings: Settings) -> None:
    """Save the last exchange (with the digest of its tool calls) as an episodic memory, then
    run a bounded GC share."""
    if not _may_save(settings):
        return
    reply = _text(payload.get("last_assistant_message"))
    short = bool(reply.strip()) and len(reply.strip()) < MIN_REPLY_CHARS
    if short and not settings.digest:
        return  # trivial reply and no digest to save: not worth reading the transcript
    path = _path(payload, "transcript_path")
    last = _last_exchange(path) if path else None
    if not reply.strip() and last is not None:
        reply = last.reply  # older Claude Code builds send no last_assistant_message
    exchange = Saved(
        prompt=last.prompt if last is not None else "",
        reply=reply,
        prompt_uuid=last.user_uuid if last is not None else None,
        digest=_digest(last, payload, settings),
    )
    content = exchange.content(redact_secrets=settings.redact)
    if content is None:
        return
    async with await _open(settings) as service:
        if await _save(service, content, exchange, _session_id(payload), "stop"):
            await _gc_share(service, settings)


async def pre_compact(payload: dict[str, Any], settings: Settings) -> None:
    """Save every exchange of the session that no hook saved yet (duplicates are skipped).

    On an automatic compaction the last exchange may still be in progress; the Stop hook saves
    it when the turn ends, so it is left alone here.
    """
    if not _may_save(settings):
        return
    path = _path(payload, "transcript_path")
    if not path:
        return
    from pma_mcp.hooks.transcript import read_exchanges

    exchanges = read_exchanges(path)
    if _text(payload.get("trigger")).strip().lower() == "auto":
        exchanges = exchanges[:-1]
    pending = [
        Saved(prompt=e.prompt, reply=e.reply, prompt_uuid=e.user_uuid,
              digest=_digest(e, payload, settings))
        for e in exchanges[-MAX_CATCHUP:]
    ]
    if not pending:
        return
    session = _session_id(payload)
    async with await _open(settings) as service:
        done = await _saved_prompts(service, session)
        added = 0
        for exchange in pending:
            if exchange.prompt_uuid is not None and exchange.prompt_uuid in done:
                continue
            content = exchange.content(redact_secrets=settings.redact)
            if content is not None and await _save(service, content, exchange, session,
                                                   "pre-compact"):
                added += 1
        if added:
            await _gc_share(service, settings)


# ------------------------------------------------------------------ auto-save


@dataclass(frozen=True, slots=True)
class Saved:
    """One exchange on its way into a memory."""

    prompt: str
    reply: str
    prompt_uuid: str | None
    digest: Digest | None = None
    """What its tool calls did (core/digest.py); None with PMA_DIGEST=0 or no transcript."""

    def content(self, *, redact_secrets: bool) -> Content | None:
        """Memory text with private blocks dropped and secrets redacted; None if trivial.

        `sanitize_for_storage` is the intake door's rule for captured conversation
        (service/intake.py), applied here already because it must run before the length
        caps, so a cut can never split a secret in two; a trivial exchange then costs no
        import of the service. The digest (already cleaned the same way, line by line) sits
        between prompt and reply, where the prompt hook's entry cut keeps it; a short reply
        is worth saving when the digest shows the exchange changed or ran something.
        """
        from pma_mcp.core.redact import sanitize_for_storage

        digest = self.digest if self.digest is not None and not self.digest.empty else None
        reply = sanitize_for_storage(_text(self.reply), redact_secrets=redact_secrets).strip()
        if len(reply) < MIN_REPLY_CHARS and (digest is None or not digest.acted):
            return None
        prompt = sanitize_for_storage(_text(self.prompt), redact_secrets=redact_secrets).strip()
        said = [f"User: {_head_tail(prompt, MAX_PROMPT_STORED)}"] if prompt else []
        if reply:
            said.append(f"Assistant: {_head_tail(reply, MAX_REPLY_STORED)}")
        did = digest.render() if digest is not None else ""
        parts = [*said[:1], did, *said[1:]] if prompt else [did, *said]
        text = "\n".join(part for part in parts if part)
        importance = importance_of("\n".join(said))
        if digest is not None and digest.fixed:
            importance = round(min(importance + FIX_BONUS, MAX_AUTO_IMPORTANCE), 2)
        return Content(text, importance, digest)


@dataclass(frozen=True, slots=True)
class Content:
    """A saved exchange's memory text, its importance, and the digest it holds."""

    text: str
    importance: float
    digest: Digest | None

    def tags(self) -> list[str]:
        return [*AUTO_TAGS, *(self.digest.tags() if self.digest is not None else ())]

    def entities(self) -> list[str]:
        return self.digest.entities() if self.digest is not None else []


def _digest(exchange: Exchange | None, payload: Mapping[str, Any],
            settings: Settings) -> Digest | None:
    """The digest of an exchange's tool calls, paths relative to the project directory."""
    if exchange is None or not exchange.tools or not settings.digest:
        return None
    from pma_mcp.core.digest import build

    root = (os.environ.get("CLAUDE_PROJECT_DIR") or _text(payload.get("cwd")).strip()
            or exchange.cwd)
    return build(exchange.tools, root=root or None, redact_secrets=settings.redact)


_SIGNALS: tuple[tuple[Lazy, float], ...] = (
    (Lazy(r"\b(?:decid|decision|agreed|going with|chose|settled on|switch(?:ed)? to)",
          re.I), 0.15),
    (Lazy(r"\b(?:bug|fix|error|exception|traceback|crash|fail|regression|root cause)",
          re.I), 0.1),
    (Lazy(r"\b(?:prefer|always|never|must|don't|do not|convention|rule)\b", re.I), 0.1),
)


MAX_AUTO_IMPORTANCE = 0.85
FIX_BONUS = 0.15
"""Added when the digest shows a fix: a command failed, a file was edited, the same program
then passed. Reading or searching adds nothing, and neither does the digest's length."""


def importance_of(content: str) -> float:
    """Auto-save importance of an exchange's prompt and reply: 0.5, plus 0.15 for a decision,
    0.1 for a bug or fix, 0.1 for a preference or rule, plus 0.05 each past 800 and 2,000
    characters; at most 0.85. The digest adds FIX_BONUS for a fix (Saved.content)."""
    score = 0.5 + sum(weight for pattern, weight in _SIGNALS if pattern.search(content))
    score += 0.05 * (len(content) > 800) + 0.05 * (len(content) > 2_000)
    return round(min(score, MAX_AUTO_IMPORTANCE), 2)


async def _save(
    service: MemoryService, content: Content, exchange: Saved, session: str | None, source: str
) -> bool:
    """Store one exchange; False for an exact duplicate (it is not reinforced either).

    The digest's paths and tests become linked entities and its tools tags, so `related`
    finds the exchanges that touched a file; they pass the intake door like every field."""
    if await service.has_content(content.text):
        return False
    metadata: dict[str, Any] = {"source": f"hook:{source}"}
    if exchange.prompt_uuid:
        metadata["prompt_uuid"] = exchange.prompt_uuid
    result = await service.add(
        content.text, importance=content.importance, memory_type="episodic",
        tags=content.tags(), linked_entities=content.entities(), metadata=metadata,
        session_id=session,
    )
    return not result.deduplicated


async def _saved_prompts(service: MemoryService, session: str | None) -> set[str]:
    """Transcript uuids of the prompts whose exchange this session already saved."""
    if session is None:
        return set()
    memories = await service.session_memories(session)
    return {
        str(m.metadata["prompt_uuid"]) for m in memories if m.metadata.get("prompt_uuid")
    }


async def _gc_share(service: MemoryService, settings: Settings) -> None:
    """Auto-GC once the namespace holds more than PMA_GC_THRESHOLD (80) memories, bounded
    to GC_SHARE memories per save."""
    if await service.count() <= settings.autosave_gc_threshold:
        return
    try:
        await service.gc_run(max_memories=GC_SHARE)
    except Exception as exc:  # the save is already committed; GC can wait for next time
        _log_failure("auto-GC", exc)


def _last_exchange(path: str) -> Exchange | None:
    """The transcript's last exchange, reading only its tail (it may lag or be half-written)."""
    from pma_mcp.hooks import transcript

    return transcript.last_exchange(path)


# --------------------------------------------------------------------- registry


@dataclass(frozen=True, slots=True)
class _Event:
    run: Handler
    prints: bool
    claude_event: str = ""
    """Claude Code's name for the event (`--help`, hooks.json)."""
    summary: str = ""
    served: bool = False
    """A running MCP server may answer it for the hook process (`serve`): the events that
    print context, which the user waits for. Saving ones run in their own process."""


HANDLERS: dict[str, _Event] = {
    "session-start": _Event(session_start, True, "SessionStart",
                            "this project's most useful memories as context", served=True),
    "user-prompt-submit": _Event(user_prompt_submit, True, "UserPromptSubmit",
                                 "memories relevant to the prompt, as context", served=True),
    "stop": _Event(stop, False, "Stop", "save the exchange that just ended (prints nothing)"),
    "pre-compact": _Event(pre_compact, False, "PreCompact",
                          "save every exchange not saved yet (prints nothing)"),
}


def usage() -> str:
    """`pma-mcp hook --help`: the events, generated from HANDLERS so it cannot drift."""
    lines = ["usage: pma-mcp hook EVENT  (Claude Code hook input as JSON on stdin)", "",
             "events:"]
    width = max(map(len, HANDLERS))
    for name, event in HANDLERS.items():
        lines.append(f"  {name:<{width}}  {event.claude_event}: {event.summary}")
    lines += ["", "Always exits 0; stdout holds only the JSON reply Claude Code reads.",
              "Settings to copy: hooks/hooks.json, or `pma-mcp doctor` prints them."]
    return "\n".join(lines) + "\n"
_ALIASES = {re.sub(r"[^a-z]", "", name): name for name in HANDLERS}
