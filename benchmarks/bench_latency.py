"""Latency in use, each figure beside its floor measured in the same run.

    uv run python -m benchmarks.bench_latency [--sizes 20000 100000] [--runs 60]
        [--db-dir DIR] [--backend sqlite|postgres|both] [--database-url URL]
        [--base CHECKOUT] [--only start recall remember hook]

- start: `pma-mcp` spawned → `tools/list` answered (SDK client, fresh store), beside a
  minimal server on the same SDK with one tool (FLOOR_SERVER); target ≤ 1.3×.
- recall: `recall` over stdio, limit 5, p50, beside the floor server's echo-tool round trip;
  targets p50 ≤ 10 ms at 100k and ≤ 6× the echo at 20k.
- remember: `remember` over stdio, a new text each call, p50; target ≤ 4 ms at 100k.
- prompt hook: `pma-mcp hook user-prompt-submit`, whole process, p50, beside `python -c pass`
  from the same venv; target p50 ≤ 80 ms at 100k and ≤ 4×. Measured as Claude Code runs it,
  with the MCP server running beside it (which answers it: hooks/handoff.py), and ours alone
  too ("hook alone", PMA_HOOK_HANDOFF=0: what a hook costs when no server is running).

Stores hold the developer-conversation corpus of benchmarks/bench_hooks.py (one project
namespace plus 5% global), bulk-loaded through the store; with --db-dir a SQLite store of each
size is kept and reused. Runs of ours and the floor alternate, so machine noise hits both
alike; the ratio of p50s is the figure that counts on a shared machine.

`--base CHECKOUT` measures another checkout (its own `.venv`, e.g. a worktree at main) in the
same run against the same stores and floors: each figure then has a "base" row beside "ours",
the before/after of a change on a noisy machine. Each code runs on its own copy of the
store. A SQLite store is then built by the base's own code (its schema may be older; ours
upgrades its copy when it opens it), and kept in `--db-dir` under the base's commit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from benchmarks import places
from benchmarks.bench_hooks import (
    BATCH,
    PROJECT,
    build,
    hook_command,
    memories,
    prompt_text,
    write_transcript,
)
from benchmarks.corpus import store_in
from benchmarks.locomo import machine

FLOOR_SERVER = '''
from mcp.server import MCPServer

app = MCPServer("floor")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


app.run()
'''
"""The least an SDK server can be: one tool, stdio, nothing else."""

FIGURES = ("start", "recall", "remember", "hook")
Arguments = Callable[[int], dict[str, Any]]
"""A tool's arguments for call i (negative: warm-up)."""

TARGETS: dict[str, str | dict[int, str]] = {
    "start": "≤ 1.3× floor",
    "recall": {20_000: "≤ 6× floor", 100_000: "p50 ≤ 10 ms"},
    "remember": {100_000: "p50 ≤ 4 ms"},
    "prompt hook": {100_000: "p50 ≤ 80 ms, ≤ 4× floor"},
}


@dataclass(frozen=True)
class Code:
    """Which checkout's pma-mcp runs: `python` from its venv; `checkout` for another one."""

    label: str
    python: str
    checkout: Path | None = None

    @property
    def hook(self) -> list[str]:
        return hook_command(self.python)


@dataclass
class Row:
    code: str
    figure: str
    size: int | None
    ours: list[float]
    floor: list[float]
    floor_name: str

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours) / statistics.median(self.floor)


def _env(db: Path, url: str | None) -> dict[str, str]:
    """A user's environment: no PMA_/CLAUDE_ overrides but the store; bytecode caching on."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMA_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PMA_DB_PATH": str(db), "PMA_NAMESPACE": PROJECT, "PMA_LOG_LEVEL": "WARNING"}
    if url:
        env["PMA_DATABASE_URL"] = url
    return env


def _params(args: list[str], env: dict[str, str], cwd: Path,
            python: str = sys.executable) -> StdioServerParameters:
    return StdioServerParameters(command=python, args=args, env=env, cwd=str(cwd))


async def _start_ms(params: StdioServerParameters) -> float:
    """Spawn → initialised → tools/list answered, in ms."""
    t = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        return (time.perf_counter() - t) * 1000


def _process_ms(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    return _process(cmd, stdin, env)[0]


def _process(cmd: list[str], stdin: bytes,
             env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return (time.perf_counter() - t) * 1000, proc


async def _alternate(ours: Callable[[], Awaitable[float]], floor: Callable[[], Awaitable[float]],
                     runs: int) -> tuple[list[float], list[float]]:
    a, b = [], []
    for i in range(-1, runs):
        x, y = await ours(), await floor()
        if i >= 0:
            a.append(x)
            b.append(y)
    return a, b


async def bench_start(code: Code, work: Path, floor: StdioServerParameters, runs: int,
                      url: str | None) -> Row:
    counter = iter(range(1_000_000))

    async def ours() -> float:
        fresh = work / f"start-{code.label}-{next(counter)}.db"
        return await _start_ms(_params(["-m", "pma_mcp"], _env(fresh, url), work,
                                       code.python))

    async def bare() -> float:
        return await _start_ms(floor)

    a, b = await _alternate(ours, bare, runs)
    return Row(code.label, "start", None, a, b, "minimal SDK server")


async def _interleaved(calls: list[tuple[StdioServerParameters, str, Arguments]],
                       runs: int) -> list[list[float]]:
    """ms per call of each (server, tool, arguments), one session each, taking turns call by
    call after 5 warm-up rounds: a load spike on the shared machine hits every one alike."""
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(params, mode="legacy"))
                   for params, _, _ in calls]
        times: list[list[float]] = [[] for _ in calls]
        for i in range(-5, runs):
            for client, (_, tool, arguments), out in zip(clients, calls, times, strict=True):
                t = time.perf_counter()
                result = await client.call_tool(tool, arguments(i))
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content}")
                if i >= 0:
                    out.append((time.perf_counter() - t) * 1000)
        return times


async def bench_store(codes: list[Code], db: Path, url: str | None, size: int, work: Path,
                      floor: StdioServerParameters, runs: int,
                      only: frozenset[str] = frozenset(FIGURES)) -> list[Row]:
    """recall, remember and the prompt hook of every code, taking turns with the floor.

    On SQLite every code gets its own copy of the store, so a newer code's schema upgrade
    never locks an older one out."""
    envs = [_env(_copy_for(db, code) if url is None else db, url) for code in codes]
    servers = [_params(["-m", "pma_mcp"], env, work, code.python)
               for code, env in zip(codes, envs, strict=True)]
    rng = random.Random(size)
    questions = [prompt_text(rng) for _ in range(runs + 5)]
    echo: Arguments = lambda i: {"text": questions[i + 5]}  # noqa: E731
    rows = []
    recall: Arguments = lambda i: {"query": questions[i + 5], "limit": 5}  # noqa: E731
    if "recall" in only:
        *ours, bare = await _interleaved([*[(s, "recall", recall) for s in servers],
                                          (floor, "echo", echo)], runs)
        rows += [Row(c.label, "recall", size, t, bare, "echo round trip")
                 for c, t in zip(codes, ours, strict=True)]
    if "remember" in only:
        rows += await _remember(codes, servers, floor, echo, questions, size, runs)
    if "hook" in only:
        rows += _hook(codes, envs, questions, work, size, runs)
    return rows


async def _remember(codes: list[Code], servers: list[StdioServerParameters],
                    floor: StdioServerParameters, echo: Arguments, questions: list[str],
                    size: int, runs: int) -> list[Row]:
    tag = uuid.uuid4().hex[:8]
    remembers = [
        (s, "remember",
         (lambda i, k=k: {"content": f"Decision {tag}-{k}-{i}: {questions[i + 5]} "
                                     f"We chose option {i}."}))
        for k, s in enumerate(servers)]
    *ours, bare = await _interleaved([*remembers, (floor, "echo", echo)], runs)
    return [Row(c.label, "remember", size, t, bare, "echo round trip")
            for c, t in zip(codes, ours, strict=True)]


def _hook(codes: list[Code], envs: list[dict[str, str]], questions: list[str], work: Path,
          size: int, runs: int) -> list[Row]:
    """The prompt hook as Claude Code runs it, with the session's MCP server running beside
    it (a code that has the hand-off, hooks/handoff.py, is answered by it), and ours in its
    own process too ("hook alone": PMA_HOOK_HANDOFF=0), each beside `python -c pass`."""
    cases = [(code.label, code, {**env, "PMA_RUNTIME_DIR": str(work / f"run-{code.label}")},
              "prompt hook") for code, env in zip(codes, envs, strict=True)]
    cases.append(("ours", codes[0], {**envs[0], "PMA_HOOK_HANDOFF": "0",
                                     "PMA_RUNTIME_DIR": str(work / "run-alone")},
                  "hook alone"))
    hooks: list[list[float]] = [[] for _ in cases]
    printed = [0 for _ in cases]
    passes = []
    with contextlib.ExitStack() as servers:
        for _, code, env, figure in cases:
            Path(env["PMA_RUNTIME_DIR"]).mkdir(mode=0o700, exist_ok=True)
            if figure == "prompt hook":
                servers.enter_context(_beside(code, env))
        for i in range(-2, runs):
            for k, ((_, code, env, _), out) in enumerate(zip(cases, hooks, strict=True)):
                session = str(uuid.uuid4())
                transcript = work / f"{session}.jsonl"
                write_transcript(transcript, session, questions[i + 2], "ok")
                stdin = (f'{{"session_id": "{session}", "transcript_path": "{transcript}", '
                         f'"cwd": "{PROJECT}", "permission_mode": "default", '
                         f'"hook_event_name": "UserPromptSubmit", '
                         f'"prompt": "{questions[i + 2]}"}}').encode()
                x, proc = _process([*code.hook, "hook", "user-prompt-submit"], stdin, env)
                transcript.unlink()
                if proc.stderr.strip():
                    raise SystemExit(f"{code.label} hook said: {proc.stderr.decode()[-3000:]}")
                if i >= 0:
                    out.append(x)
                    printed[k] += bool(proc.stdout.strip())
            y = _process_ms([sys.executable, "-c", "pass"], b"", envs[0])
            if i >= 0:
                passes.append(y)
    for (label, _, _, figure), n in zip(cases, printed, strict=True):
        print(f"{label} {figure}, {size:,}: context printed for {n} of {runs} prompts "
              "(the default relevance floor; a hook's stderr stops the run)", flush=True)
    return [Row(label, figure, size, t, passes, "python -c pass")
            for (label, _, _, figure), t in zip(cases, hooks, strict=True)]


@contextlib.contextmanager
def _beside(code: Code, env: dict[str, str]) -> Iterator[None]:
    """`pma-mcp serve` of `code` on the hook's environment for the block, once its hooks'
    socket is open; nothing for a code without the hand-off (hooks/listener.py)."""
    root = code.checkout or Path(__file__).resolve().parents[1]
    if not (root / "pma_mcp" / "hooks" / "listener.py").exists():
        yield
        return
    proc = subprocess.Popen([code.python, "-m", "pma_mcp", "serve"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(Path(env["PMA_RUNTIME_DIR"]).glob(f"*-{proc.pid}.sock")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{code.label}: the server opened no hooks' socket")
            time.sleep(0.05)
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


BUILD = ("import asyncio, sys\nfrom pathlib import Path\nfrom benchmarks.bench_hooks import build\n"
         "asyncio.run(build(Path(sys.argv[1]), int(sys.argv[2])))")
"""A store built by another checkout's own code (its benchmarks/bench_hooks.py)."""


def _built_by(code: Code) -> str:
    """'' for ours, else '-<commit>' of the checkout that builds the store."""
    if code.checkout is None:
        return ""
    head = subprocess.run(["git", "-C", str(code.checkout), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    return f"-{head or code.label}"


def _copy_for(db: Path, code: Code) -> Path:
    copy = db.with_name(f"{db.stem}-{code.label}{db.suffix}")
    shutil.copy(db, copy)
    return copy


def _target(row: Row) -> str:
    target = TARGETS.get(row.figure)
    if isinstance(target, dict):
        return target.get(row.size or 0, "")
    return target or ""


def report(rows: list[Row], label: str) -> None:
    print(f"\n{label}: {'code':<6}{'figure':<12}{'memories':>9}{'p50 ms':>9}{'p95 ms':>9}  "
          f"{'floor':<20}{'floor p50':>10}{'ratio':>8}  target")
    for r in sorted(rows, key=lambda r: (r.figure != "start", r.size or 0, r.figure,
                                         r.code != "ours")):
        p95 = sorted(r.ours)[int(0.95 * (len(r.ours) - 1))]
        size = f"{r.size:,}" if r.size else "fresh"
        print(f"{'':<{len(label) + 2}}{r.code:<6}{r.figure:<12}{size:>9}"
              f"{statistics.median(r.ours):>9.2f}{p95:>9.2f}  {r.floor_name:<20}"
              f"{statistics.median(r.floor):>10.2f}{r.ratio:>7.2f}×  {_target(r)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--start-runs", type=int, default=15)
    parser.add_argument("--db-dir", type=Path, default=None,
                        help="keep each size's SQLite store here and reuse it")
    parser.add_argument("--base", type=Path, default=None,
                        help="also measure this checkout (its .venv) in the same run")
    parser.add_argument("--only", nargs="+", choices=FIGURES, default=list(FIGURES),
                        help="measure only these figures")
    places.add_arguments(parser)
    args = parser.parse_args()
    codes = [Code("ours", sys.executable)]
    if args.base is not None:
        python = args.base.resolve() / ".venv" / "bin" / "python"
        if not python.exists():
            parser.error(f"--base {args.base}: no {python}; run `uv sync` there first")
        codes.append(Code("base", str(python), args.base.resolve()))
    print(machine())
    with tempfile.TemporaryDirectory(prefix="pma-latency-") as tmp:
        work = Path(tmp)
        (work / "floor.py").write_text(FLOOR_SERVER)
        floor = _params([str(work / "floor.py")], dict(os.environ), work)
        try:
            oldest = codes[-1]  # the base when given: it builds the stores every code opens
            for place in places.places(args):
                stores = [(size, *await _store(place, work, args.db_dir, size, oldest))
                          for size in args.sizes]
                url = stores[0][2] if stores else None  # PostgreSQL: start against the server
                rows = [await bench_start(code, work, floor, args.start_runs, url)
                        for code in codes] if "start" in args.only else []
                for size, db, url in stores:
                    rows += await bench_store(codes, db, url, size, work, floor, args.runs,
                                              frozenset(args.only))
                report(rows, place.label)
        finally:
            await places.drop_kept()
    load = os.getloadavg()
    print(f"\n{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          "at the end; ratios of p50s measured in alternation are what count")


async def _store(place: places.Place, work: Path, keep: Path | None,
                 size: int, builder: Code) -> tuple[Path, str | None]:
    """A store of `size` memories at `place`: (SQLite path, PostgreSQL URL or None). A SQLite
    store is built by `builder`, the oldest code measured, so that every code can open it."""
    if place.backend == "sqlite":
        name = f"latency-{size}{_built_by(builder)}.db"
        kept = (keep / name) if keep else None
        if kept is not None and kept.exists():
            db = work / kept.name
            shutil.copy(kept, db)
            return db, None
        db = work / name
        started = time.perf_counter()
        if builder.checkout is None:
            await build(db, size)
        else:
            subprocess.run([builder.python, "-c", BUILD, str(db), str(size)],
                           cwd=builder.checkout, check=True)
        print(f"[{place.label}] built {size:,} memories in {time.perf_counter() - started:.0f} s",
              flush=True)
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(db, kept)
        return db, None
    settings = await place.keep(work, f"latency_{size}")
    await store_in(settings, memories(size, random.Random(size), time.time()), BATCH)
    await places.analyze(settings)
    return settings.db_path, settings.database_url


if __name__ == "__main__":
    asyncio.run(main())
