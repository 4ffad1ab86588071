"""`pma-mcp <command>`: the commands for people (stats, search, inspect, gc, export, import,
seed, doctor).

Every command goes through `MemoryService`, so what a person sees is what the agent gets: the
same retrieval (without counting an access), the same GC plan, the same namespace resolution.
Output: tables for people on stdout, `--json` for scripts, one line on stderr for an error.

Exit codes: 0 ok (doctor: the store is healthy, warnings allowed); 1 an error, or doctor found
a failure; 2 bad arguments; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from pma_mcp import __version__, files
from pma_mcp.admin import doctor
from pma_mcp.commands import outfile, render
from pma_mcp.config import Settings, url_passwords
from pma_mcp.core.errors import NotFoundError, PmaError, error_line
from pma_mcp.core.export_format import dumps
from pma_mcp.core.models import Finding, GCDecision, MemoryKind, MemoryType
from pma_mcp.core.validation import MAX_METADATA_DEPTH
from pma_mcp.importers import project_docs
from pma_mcp.service import MAX_LIMIT, MemoryService

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
PROGRESS_MIN_RECORDS = 500
MAX_EXPORT_BYTES = 2_000_000_000
"""An export file `import` reads (bounded like every read; far past any real export)."""
"""Imports smaller than this finish too fast for a progress bar to help."""
DEFAULT_WIDTH = 100
DEBUG_HINT = "set PMA_LOG_LEVEL=DEBUG for details"
PROGRAM = "pma-mcp"

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]


# ------------------------------------------------------------------ entry


def main(argv: Sequence[str]) -> int:
    """Parse `argv`, run one command, return its exit code (never raises, never a traceback)."""
    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as stop:  # --help, --version, or a usage error already printed
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    try:
        settings = Settings.from_env()
    except PmaError as exc:
        if args.command == "doctor":
            return _report([Finding("config", "fail", str(exc),
                                    "correct or unset the variable named above")], args.json)
        return _fail(str(exc))
    logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                        format="pma-mcp: %(levelname)s %(name)s: %(message)s")
    handler: Handler = args.handler
    return _guarded(lambda: asyncio.run(handler(args, settings)))


def _guarded(run: Callable[[], int]) -> int:
    """Run a command; every failure becomes one line on stderr and exit code 1."""
    try:
        return run()
    except KeyboardInterrupt:
        _fail("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `pma-mcp export | head`: the reader left, nothing to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except PmaError as exc:
        return _fail(_for_people(str(exc)))
    except Exception as exc:
        if not isinstance(exc, OSError):
            log.debug("unexpected error", exc_info=True)
        sys.stderr.write(error_line(PROGRAM, exc, hint=DEBUG_HINT))
        return EXIT_FAILURE


def _for_people(message: str) -> str:
    """Service messages address the agent ("call recall"); say the CLI equivalent."""
    return (message.replace("call recall to find ids", "`pma-mcp search QUERY` lists ids")
            .replace("(as shown by recall)", "(as `pma-mcp search` shows them)"))


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROGRAM}: error: {message}\n")
    return EXIT_FAILURE


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _width() -> int | None:
    """The terminal's width, to fit table rows to it; None (nothing cut) when stdout is not
    a terminal: a pipe or a file gets every memory's whole text."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


# ----------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pma-mcp",
        description="Look inside, back up and check pma-mcp's memory store. "
                    "`pma-mcp` alone serves MCP over stdio; `pma-mcp hook EVENT` is a "
                    "Claude Code hook; `pma-mcp ui` opens the memory browser.",
        epilog="exit codes: 0 ok, 1 error (or doctor found a failure), 2 bad arguments",
    )
    parser.add_argument("--version", action="version", version=f"pma-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_stats, _add_search, _add_inspect, _add_edit, _add_ui, _add_gc,
                _add_export, _add_import, _add_seed, _add_doctor, _add_migrate, _add_hook,
                _add_serve):
        add(sub)
    return parser


ENTRY_POINTS = {
    "ui": "the memory browser: a local web page on 127.0.0.1 over the same service "
          "(`pma-mcp ui --help`)",
    "hook": "one Claude Code hook: hook JSON on stdin, its reply on stdout "
            "(`pma-mcp hook --help` lists the events)",
    "serve": "serve MCP over stdio, as `pma-mcp` alone does (what MCP client configs run)",
}
"""The commands the entry point (cli.py) starts before this parser sees them: listed here
so `pma-mcp --help` names every command."""


def _entry_point(name: str) -> Callable[[Any], None]:
    def add(sub: Any) -> None:
        sub.add_parser(name, help=ENTRY_POINTS[name], add_help=False).set_defaults(
            handler=_not_here)
    return add


_add_ui, _add_hook, _add_serve = (_entry_point(n) for n in ("ui", "hook", "serve"))


async def _not_here(args: argparse.Namespace, settings: Settings) -> int:
    """Only reached when this parser is called directly, not through `pma-mcp`."""
    return _fail(f"`{args.command}` is started by the pma-mcp command: run `pma-mcp "
                 f"{args.command}`")


def _namespace_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("--namespace", metavar="NS",
                   help="namespace to use (default: the one the server resolves here)")


def _json_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LIMIT}, got {value}")
    return value


def _add_stats(sub: Any) -> None:
    p = sub.add_parser("stats", help="per-tier counts, tokens, average score, GC pressure")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_stats)


def _add_search(sub: Any) -> None:
    p = sub.add_parser("search", help="ranked memories with their score breakdown "
                                      "(like recall, without counting an access)")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("-n", "--limit", type=_limit, default=10, metavar="N",
                   help=f"how many results, 1-{MAX_LIMIT} (default 10)")
    p.add_argument("--kind", choices=[k.value for k in MemoryKind],
                   help="only memories of this kind (what a memory is)")
    p.add_argument("--tier", choices=[t.value for t in MemoryType],
                   help="only this tier (where the collector keeps it)")
    p.add_argument("--tag", action="append", default=[], metavar="TAG",
                   help="only memories with this tag (repeatable)")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_search)


def _add_inspect(sub: Any) -> None:
    p = sub.add_parser("inspect", help="one memory: score breakdown, next GC action, lineage")
    p.add_argument("id", metavar="ID", help="memory id or a unique prefix of it")
    p.add_argument("--query", help="also score the memory's similarity to this query")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_inspect)


def _add_edit(sub: Any) -> None:
    p = sub.add_parser("edit", help="change a memory in place (same id; recorded in lineage)")
    p.add_argument("id", metavar="ID", help="memory id or a unique prefix of it")
    p.add_argument("--content", help="new text (replaces the old)")
    p.add_argument("--importance", type=float, metavar="X", help="new importance, 0-1")
    p.add_argument("--kind", choices=[k.value for k in MemoryKind],
                   help="what the memory is, if it was labelled wrongly")
    p.add_argument("--tier", choices=[t.value for t in MemoryType],
                   help="move to this tier (the collector may move it again)")
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="new tags, replacing the old (repeatable)")
    p.add_argument("--no-tags", action="store_true", help="remove every tag")
    p.add_argument("--entity", action="append", metavar="ENTITY",
                   help="new linked entities, replacing the old (repeatable)")
    p.add_argument("--no-entities", action="store_true", help="remove every linked entity")
    p.add_argument("--metadata", type=_json_object, metavar="JSON",
                   help="new metadata as a JSON object (replaces the old)")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_edit)


def _json_object(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError(
            f"nested too deep; at most {MAX_METADATA_DEPTH} levels") from None


def _add_gc(sub: Any) -> None:
    p = sub.add_parser("gc", help="run the garbage collector (promote, demote, archive, "
                                  "delete, merge) and show why")
    p.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_gc)


def _add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="write memories as JSON (stdout by default)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--namespace", metavar="NS",
                       help="namespace to export (default: the one the server resolves here)")
    scope.add_argument("--all", action="store_true", help="export every namespace")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (replaced atomically, mode 0600) instead of stdout; a "
                        "FIFO or device is written to as it is")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="if FILE is a symlink, replace the file it points at")
    p.set_defaults(handler=_export)


def _add_import(sub: Any) -> None:
    from pma_mcp.importers import FORMATS

    p = sub.add_parser("import", help="load an export file (all records or none), or another "
                                      "tool's memory with --from FORMAT")
    p.add_argument("file", metavar="PATH", nargs="?",
                   help="export file, or - for stdin; with --from: what that format reads "
                        "(claude-code: a project directory, default .; claude-mem: its "
                        "database, default ~/.claude-mem/claude-mem.db)")
    p.add_argument("--from", dest="source_format", choices=list(FORMATS), metavar="FORMAT",
                   help=f"read another tool's memory: {', '.join(FORMATS)} (docs/IMPORT.md); "
                        "records already imported are skipped, so re-running adds nothing")
    p.add_argument("--dry-run", action="store_true",
                   help="with --from: count what would be imported, write nothing")
    p.add_argument("--namespace", metavar="NS",
                   help="put every memory in NS (default: keep each record's namespace)")
    p.add_argument("--skip-existing", action="store_true",
                   help="skip memories whose id or content is already stored")
    _json_opt(p)
    p.set_defaults(handler=_import)


def _add_seed(sub: Any) -> None:
    p = sub.add_parser("seed", help="semantic memories from a project's CLAUDE.md, README.md "
                                    "and docs/*.md (re-running adds nothing new)")
    p.add_argument("path", nargs="?", metavar="PATH", help="project directory (default: .)")
    _namespace_opt(p)
    _json_opt(p)
    p.set_defaults(handler=_seed)


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check the store and this project's Claude Code setup")
    p.add_argument("--repair", action="store_true",
                   help="salvage a damaged store into a new file (the damaged one is kept "
                   "beside it); stop running pma-mcp servers first")
    _json_opt(p)
    p.set_defaults(handler=_doctor)


def _add_migrate(sub: Any) -> None:
    p = sub.add_parser(
        "migrate", help="copy the whole store (every namespace, lineage, session records) "
        "into another store: a postgresql:// URL or a SQLite file")
    p.add_argument("--to", required=True, metavar="URL_OR_PATH",
                   help="where to copy to; the source is the configured store "
                   "(PMA_DATABASE_URL, else PMA_DB_PATH)")
    p.add_argument("--merge", action="store_true",
                   help="copy into a target that already holds memories (those it has are "
                   "skipped)")
    _json_opt(p)
    p.set_defaults(handler=_migrate)


# --------------------------------------------------------------- commands


@contextlib.contextmanager
def _progress_bar(label: str, min_total: int = 0) -> Iterator[render.ProgressBar]:
    """A progress bar on stderr when it is a terminal, closed however the job ends."""
    bar = render.ProgressBar(sys.stderr, label, enabled=sys.stderr.isatty(),
                             min_total=min_total)
    try:
        yield bar
    finally:
        bar.close()


async def _open(settings: Settings) -> MemoryService:
    return await MemoryService.open(settings)


def _own(args: argparse.Namespace, settings: Settings) -> str:
    namespace: str | None = args.namespace
    return settings.namespace if namespace is None else namespace


async def _stats(args: argparse.Namespace, settings: Settings) -> int:
    async with await _open(settings) as service:
        stats = await service.stats(namespace=args.namespace)
    _out(dumps(stats) if args.json else render.stats_text(stats))
    return EXIT_OK


async def _search(args: argparse.Namespace, settings: Settings) -> int:
    async with await _open(settings) as service:
        results = await service.search(
            args.query, namespace=args.namespace, memory_type=args.tier, tags=args.tag,
            limit=args.limit, touch=False, kind=args.kind,
        )
    own = _own(args, settings)
    if args.json:
        _out(dumps({
            "query": args.query,
            "namespace": own,
            "results": [render.scored_json(i, r) for i, r in enumerate(results, 1)],
        }))
    else:
        _out(render.search_text(args.query, own, results, _width()))
    return EXIT_OK


async def _inspect(args: argparse.Namespace, settings: Settings) -> int:
    w = settings.weights
    weights = (w.semantic, w.importance, w.recency, w.access)
    async with await _open(settings) as service:
        try:
            result = await service.inspect(args.id, query=args.query, namespace=args.namespace)
        except NotFoundError:
            events = await service.lineage_of(args.id, namespace=args.namespace)
            if args.json:
                _out(dumps({"memory_id": args.id, "deleted": True, "lineage": events}))
            else:
                _out(render.deleted_text(args.id, events))
            return EXIT_OK
    if args.json:
        _out(dumps({
            "memory": result.memory,
            "deleted": False,
            "breakdown": result.breakdown,
            "gc": {"action": result.gc_action, "reason": result.gc_reason,
                   "predicted_tier": result.predicted_tier},
            "lineage": result.lineage,
        }))
    else:
        _out(render.inspect_text(result, datetime.now(UTC), weights))
    return EXIT_OK


async def _edit(args: argparse.Namespace, settings: Settings) -> int:
    tags = [] if args.no_tags else args.tag
    entities = [] if args.no_entities else args.entity
    async with await _open(settings) as service:
        done = await service.update(
            args.id, content=args.content, importance=args.importance, memory_type=args.tier,
            tags=tags, linked_entities=entities, metadata=args.metadata,
            namespace=args.namespace, kind=args.kind,
        )
    if args.json:
        _out(dumps({"memory": done.memory, "changed": done.changed}))
    elif done.changed:
        _out(f"edited {done.memory.id}: {', '.join(done.changed)}")
    else:
        _out(f"nothing to change: {done.memory.id} already has those values")
    return EXIT_OK


async def _gc(args: argparse.Namespace, settings: Settings) -> int:
    async with await _open(settings) as service:
        if args.dry_run:
            plan = await service.gc_preview(namespace=args.namespace)
            namespace, decisions, kept = plan.namespace, plan.changes(), len(plan.to_keep)
            summary, delta = plan.summary, plan.token_delta
        else:
            done = await service.gc_run(namespace=args.namespace)
            namespace, decisions, kept = done.namespace, done.decisions, done.kept
            summary, delta = done.summary, done.token_delta
    if args.json:
        _out(dumps({
            "namespace": namespace,
            "applied": not args.dry_run,
            "summary": summary,
            "token_delta": delta,
            "counts": _gc_counts(decisions, kept),
            "decisions": [render.decision_json(d) for d in decisions],
        }))
    else:
        _out(render.gc_text(namespace, decisions, kept, summary, applied=not args.dry_run))
    return EXIT_OK


def _gc_counts(decisions: Sequence[GCDecision], kept: int) -> dict[str, int]:
    counts = dict.fromkeys(("promote", "demote", "archive", "delete", "merge"), 0)
    for d in decisions:
        counts[d.action] += 1
    counts["keep"] = kept
    return counts


async def _export(args: argparse.Namespace, settings: Settings) -> int:
    async with await _open(settings) as service:
        doc = await service.export(namespace="*" if args.all else args.namespace)
    data = (dumps(doc) + "\n").encode("utf-8")
    target: str | None = args.output
    if target is None or target == "-":
        sys.stdout.buffer.write(data)  # bytes: UTF-8 whatever the terminal's locale
        sys.stdout.buffer.flush()
    else:
        how = outfile.write(Path(target).expanduser(), data, follow_symlinks=args.follow_symlinks)
        verb = "wrote" if how == "stream" else "exported"
        sys.stderr.write(f"{verb} {len(doc['memories']):,} memories to {target}\n")
    return EXIT_OK


async def _import(args: argparse.Namespace, settings: Settings) -> int:
    if args.source_format is not None:
        return await _import_from(args, settings)
    if args.file is None or args.dry_run:
        raise _FileError("an export file is required (--dry-run needs --from FORMAT); "
                         "see `pma-mcp import --help`")
    doc = _read_json(args.file)
    with _progress_bar("importing", PROGRESS_MIN_RECORDS) as bar:
        async with await _open(settings) as service:
            report = await service.import_document(
                doc, namespace=args.namespace, skip_existing=args.skip_existing,
                progress=bar.update,
            )
    if args.json:
        _out(dumps(report))
    else:
        skipped = f" ({report.skipped:,} skipped: already stored)" if report.skipped else ""
        _out(f"imported {report.imported:,} memories from {args.file}{skipped}")
    return EXIT_OK


async def _import_from(args: argparse.Namespace, settings: Settings) -> int:
    """`import --from FORMAT PATH`: parse, then one call into the import pipeline."""
    from pma_mcp.commands import import_from
    from pma_mcp.config import claude_home
    from pma_mcp.importers import Source, claude_mem

    default = {"claude-code": Path("."), "claude-mem": claude_mem.default_path(Path.home())}
    if args.file is None and args.source_format not in default:
        raise _FileError(f"--from {args.source_format} needs a PATH to read")
    path = Path(args.file).expanduser() if args.file else default[args.source_format]
    source = Source(
        path=path, namespace=args.namespace, current=settings.namespace,
        project_namespace=lambda folder: Settings.from_env(cwd=str(folder)).namespace,
        claude_home=claude_home(),
    )
    batch = import_from.read(args.source_format, source)
    target = settings
    if args.dry_run and settings.store_file is not None and not settings.store_file.exists():
        # An absent store holds nothing: count against an empty one and leave the disk alone.
        target = dataclasses.replace(settings, storage="memory")
    with _progress_bar("importing") as bar:
        async with await _open(target) as service:
            outcome = await import_from.store(service, batch, dry_run=args.dry_run,
                                            progress=bar.update)
    if args.json:
        _out(dumps(outcome))
        return EXIT_OK
    for note in outcome.notes:
        _out(f"note: {note}")
    verb = "would import" if outcome.dry_run else "imported"
    where = ", ".join(outcome.namespaces) or "nothing"
    _out(f"{verb} {outcome.imported:,} of {outcome.read:,} memories read from {path} "
         f"({args.source_format}) into {where}"
         + (f"; {outcome.skipped:,} already stored" if outcome.skipped else ""))
    return EXIT_OK


def _read_json(name: str) -> object:
    """The parsed file; unreadable or malformed input is refused before the database opens."""
    if name == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:  # a regular file only: a FIFO is refused at once (pass "-" to read a pipe)
            raw = files.read_head(Path(name).expanduser(), MAX_EXPORT_BYTES).data
        except files.RefusedFileError as exc:
            regular = "not a regular" not in exc.reason
            pipe = "" if regular else "; pass `-` to read a pipe on standard input"
            raise _FileError(f"{name}: {exc.reason}{pipe}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _FileError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _FileError(
            f"{name}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise _FileError(f"{name}: nested too deep to read; a memory's metadata may nest at "
                         f"most {MAX_METADATA_DEPTH} levels") from None


class _FileError(PmaError):
    """An input file that cannot be read as an export."""


async def _seed(args: argparse.Namespace, settings: Settings) -> int:
    root = Path(args.path or ".").expanduser().resolve()
    namespace = args.namespace
    if namespace is None:  # the namespace a server started in PATH would use
        namespace = Settings.from_env(cwd=str(root)).namespace if args.path else (
            settings.namespace)
    async with await _open(settings) as service:
        result = await service.seed_from_project(root, namespace=namespace)
    added = result.added
    rows = [(r.memory.id, str(r.memory.metadata.get("source", "")),
             str(r.memory.metadata.get("section", ""))) for r in added]
    if args.json:
        _out(dumps({
            "path": str(root), "namespace": namespace,
            "added": [{"id": i, "source": s, "section": h} for i, s, h in rows],
            "skipped": [{"source": s, "reason": r} for s, r in result.skipped],
            "cut": [{"source": s, "reason": r} for s, r in result.cut],
        }))
        return EXIT_OK
    for source, reason in result.skipped:
        _out(f"skipped {source}: {reason}")
    for source, reason in result.cut:
        _out(f"cut {source}: {reason}")
    if not project_docs.project_files(root):
        _out(f"nothing to seed: no CLAUDE.md, README.md or docs/*.md in {root}")
    elif not added:
        _out(f"nothing new: every section of {root}'s docs is already stored in {namespace}")
    else:
        table = render.table(["id", "source", "section"],
                             [[i[:8], s, h] for i, s, h in rows], width=_width())
        _out(f"{table}\n\nseeded {len(added):,} semantic memories into {namespace}")
    return EXIT_OK


# ----------------------------------------------------------------- doctor


async def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    if args.repair:
        return await _repair(args, settings)
    findings = await doctor.check(settings, cwd=Path.cwd(), home=Path.home())
    return _report(findings, args.json)


def _report(findings: Sequence[Finding], as_json: bool) -> int:
    healthy = not any(f.status == "fail" for f in findings)
    if as_json:
        _out(dumps({"healthy": healthy, "findings": list(findings)}))
    else:
        _out(render.doctor_text(findings))
    return EXIT_OK if healthy else EXIT_FAILURE


async def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    """`migrate --to`: copy, resumably, with a progress bar on a terminal."""
    from pma_mcp.admin import migrate

    if url_passwords(args.to):
        sys.stderr.write("pma-mcp: warning: the --to URL carries a password, which other "
                         "users can read in the process list; leave it out of the URL and "
                         "set PGPASSWORD or add it to ~/.pgpass instead\n")
    with _progress_bar("copying", PROGRESS_MIN_RECORDS) as bar:
        report = await migrate.migrate(settings, args.to, merge=args.merge,
                                       progress=bar.update)
    if args.json:
        _out(dumps(report))
        return EXIT_OK
    skipped = (f" ({report.memories_skipped:,} skipped: already there)"
               if report.memories_skipped else "")
    _out(f"{'resumed: ' if report.resumed else ''}copied {report.memories_copied:,} "
         f"memories{skipped}, {report.lineage_copied:,} lineage events and "
         f"{report.sessions_copied:,} sessions' records from {report.source} to "
         f"{report.target}")
    return EXIT_OK


async def _repair(args: argparse.Namespace, settings: Settings) -> int:
    """`doctor --repair`: salvage into a new file and say what was saved and lost."""
    if settings.storage == "memory":
        return _fail("PMA_STORAGE=memory: there is no file to repair")
    from pma_mcp.admin import repair

    done = await repair.repair(settings.db_path)
    if done is None:
        _out(f"{settings.db_path} is healthy (integrity check ok, index and statistics "
             "consistent); nothing was changed")
        return EXIT_OK
    expected = "" if done.memories_expected is None else f" of {done.memories_expected:,}"
    lines = [
        f"saved {done.memories_saved:,}{expected} memories and {done.lineage_saved:,} "
        f"lineage events into a new {settings.db_path}",
        f"the damaged file is kept as {done.kept}",
        *(["read through sqlite3 .recover"] if done.used_recover else []),
        *([f"{done.memories_unreadable:,} rows were too damaged to use"]
          if done.memories_unreadable else []),
        *done.notes,
        "restart running pma-mcp servers: they still have the damaged file open",
    ]
    if args.json:
        _out(dumps({"repaired": True, "kept": str(done.kept),
                           "memories_saved": done.memories_saved,
                           "memories_expected": done.memories_expected,
                           "memories_unreadable": done.memories_unreadable,
                           "lineage_saved": done.lineage_saved,
                           "used_recover": done.used_recover, "notes": done.notes}))
    else:
        _out("\n".join(lines))
    return EXIT_OK
