"""A deterministic digest of what an agent did in one exchange: its tool calls.

The text of an exchange says what the agent concluded ("Done — tests pass."); the tool calls
say what it did: the files it read, created and edited, the commands it ran and whether they
failed, the error it hit and the change that fixed it. `build` folds the calls of one exchange
into a `Digest` by fixed rules (no model), and `Digest.render` gives a bounded text that is
stored with the exchange and found by what it names.

Privacy: every string kept passes `redact.sanitize_for_storage` (the captured-conversation
rule: `<private>` blocks dropped, secrets redacted) *before* it is cut, so a cut never splits
a secret. File contents (Write, Edit) are never read at all; of a command's output only a few
error lines (a failure) or the last line (a success) are kept.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pma_mcp.core import redact
from pma_mcp.core.patterns import Lazy
from pma_mcp.core.storable import storable

__all__ = ["Command", "Digest", "ToolCall", "build"]

MAX_RENDER_CHARS = 1_200
"""The rendered digest, beside a reply of at most 4,500 characters, keeps a saved exchange
inside the prompt hook's project budget."""
MAX_ITEMS = 10
"""Paths, tests, pages or tasks listed per line of the rendered text."""
MAX_COMMANDS = 8
MAX_COMMAND_CHARS = 160
MAX_NOTE_CHARS = 160
MAX_ENTITIES = 40
MAX_CALLS = 400
"""Tool calls of one exchange looked at; a runaway loop beyond this adds nothing new."""
_SCAN_CHARS = 8_000
"""Of a command's output, only this much of the head is searched for error lines."""

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "NotebookEdit"})
WRITE_TOOLS = frozenset({"Write"})
READ_TOOLS = frozenset({"Read"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
SEARCH_TOOLS = frozenset({"Grep", "Glob"})
AGENT_TOOLS = frozenset({"Task", "Agent"})

_EXIT = Lazy(r"^\s*Exit code:?\s*(-?\d+)")
_ERROR_LINE = Lazy(
    r"(?i)\b(?:error|errors|failed|failure|fail|exception|traceback|assert\w*|fatal|"
    r"denied|not found|no such|cannot|can't|undefined|panic)\b")
_TEST_RUNNER = Lazy(
    r"(?i)(?:^|[\s;&|(/])(?:pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|"
    r"phpunit|ctest|go\s+test|cargo\s+(?:test|nextest)|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|"
    r"make\s+\w*test\w*|manage\.py\s+test|mix\s+test|gradle\w*\s+test|mvn\s+test)\b")
_TEST_NAMES = Lazy(
    r"(?:[\w.\-/]*\btests?[\w.\-/]*\.py(?:::[\w\[\]\-.]+)*"  # tests/test_x.py::test_y
    r"|[\w.\-/]+(?:[._](?:test|spec)\.[cm]?[jt]sx?|_test\.go|_spec\.rb|Test\.java)"
    r"|\btest_\w+|\bTest[A-Z]\w*)")
_FAILED_TEST = Lazy(r"^(?:FAILED|ERROR)\s+(\S+::\S+)", re.M)
_ENV_ASSIGNMENT = Lazy(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "npx", "bunx", "pnpm", "yarn",
                      "npm", "run", "exec", "python", "python3", "-m", "sudo", "time", "env"})
_RULES = Lazy(r"[=\-]{3,}")
_SPACES = Lazy(r"\s+")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool_use block and what came back for it (transcript order).

    `output` is already bounded by the reader (its head and tail); `is_error` is None when no
    result was seen (the exchange was cut off, or the result lies past the transcript's end).
    `result_type` is the tool-specific result's own `type` when it has one (Write: "create" or
    "update").
    """

    name: str
    input: Mapping[str, Any]
    output: str = ""
    is_error: bool | None = None
    result_type: str | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """A shell command, cleaned and cut, with how it ended."""

    text: str
    failed: bool | None
    """True: error flag or non-zero exit; False: it passed; None: no result seen."""
    exit_code: int | None = None
    note: str = ""
    """A failure: its first error lines. A success: its last output line (a summary)."""
    key: str = ""
    """The program it runs, past env assignments and runners (`uv run`, `npx`)."""

    def rendered(self) -> str:
        if self.failed is None:
            status = "no result"
        elif self.failed:
            status = "failed" if self.exit_code is None else f"failed (exit {self.exit_code})"
        else:
            status = "passed"
        note = f": {self.note}" if self.note else ""
        return f"`{self.text}` {status}{note}"


@dataclass(frozen=True, slots=True)
class Digest:
    """What one exchange did, by category, in first-seen order and without repeats."""

    read: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    commands: tuple[Command, ...] = ()
    tests: tuple[str, ...] = ()
    fetched: tuple[str, ...] = ()
    searched: tuple[str, ...] = ()
    subagents: tuple[str, ...] = ()
    tools: tuple[tuple[str, int], ...] = ()
    """(tool name, calls), most used first."""
    fixed: bool = False
    """A command failed, a file was edited, and then the same program passed."""

    @property
    def empty(self) -> bool:
        return not self.tools

    @property
    def acted(self) -> bool:
        """It changed or ran something (reading and searching alone do not count)."""
        return bool(self.created or self.edited or self.commands or self.subagents
                    or self.fetched)

    def entities(self) -> list[str]:
        """Linked entities: the paths it touched and the tests it named."""
        seen = dict.fromkeys((*self.edited, *self.created, *self.tests, *self.read))
        return [e for e in seen if e][:MAX_ENTITIES]

    def tags(self) -> list[str]:
        """One `tool:<name>` tag per tool used, plus `fix` when the exchange fixed something."""
        tags = [f"tool:{name.lower()}" for name, _ in self.tools[:16]]
        return [*tags, "fix"] if self.fixed else tags

    def render(self, limit: int = MAX_RENDER_CHARS) -> str:
        """The digest as lines of text, whole lines only, at most `limit` characters.

        When not everything fits, lines are kept by what they tell: the fix, edits and
        creations, failures and the pass after them, tests and subagents, then reads, the
        other commands, searches and the tool counts; kept lines stay in display order.
        """
        lines: list[tuple[int, str]] = []
        if self.fixed:
            lines.append((0, "Fix: a failing command passed after an edit."))
        for label, items in (("Edited", self.edited), ("Created", self.created)):
            if items:
                lines.append((1, f"{label}: {_listing(items)}"))
        lines += [(2 if key else 5, f"Ran: {c.rendered()}")
                  for c, key in _shown_commands(self.commands)]
        for rank, label, items in ((3, "Tests", self.tests), (3, "Subagent", self.subagents),
                                   (4, "Fetched", self.fetched), (4, "Read", self.read),
                                   (6, "Searched", self.searched)):
            if items:
                lines.append((rank, f"{label}: {_listing(items)}"))
        if self.tools:
            lines.append((7, "Tools: " + ", ".join(
                name if n == 1 else f"{name} ×{n}" for name, n in self.tools)))
        kept: set[int] = set()
        size = 0
        for i in sorted(range(len(lines)), key=lambda i: lines[i][0]):
            cost = len(lines[i][1]) + 1
            if size + cost <= limit + 1:
                kept.add(i)
                size += cost
        return "\n".join(text for i, (_, text) in enumerate(lines) if i in kept)


def build(calls: Sequence[ToolCall], *, root: str | None = None,
          redact_secrets: bool = True) -> Digest:
    """The digest of one exchange's tool calls; `root` makes paths under it relative."""
    acc = _Accumulator(root, redact_secrets)
    for call in calls[:MAX_CALLS]:
        acc.add(call)
    return acc.finish()


# ------------------------------------------------------------------ internals


@dataclass(slots=True)
class _Accumulator:
    root: str | None
    redact_secrets: bool
    read: dict[str, None] = field(default_factory=dict)
    created: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    tests: dict[str, None] = field(default_factory=dict)
    fetched: dict[str, None] = field(default_factory=dict)
    searched: dict[str, None] = field(default_factory=dict)
    subagents: dict[str, None] = field(default_factory=dict)
    tools: Counter[str] = field(default_factory=Counter)
    # Fix detection: programs that failed, and those of them that failed before an edit.
    failed_keys: set[str] = field(default_factory=set)
    pending_keys: set[str] = field(default_factory=set)
    fixed: bool = False

    def clean(self, text: str, limit: int) -> str:
        """One line as it may be stored: storable (no NULs or lone surrogates, which the store
        refuses and a transcript can hold), sanitized whole, then squeezed and cut."""
        text = storable(text)
        text = redact.sanitize_for_storage(text, redact_secrets=self.redact_secrets)
        text = _SPACES.sub(" ", text).strip()
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

    def path(self, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            return ""
        path = value.strip()
        if self.root and path.startswith("/"):
            norm = posixpath.normpath(path)
            root = posixpath.normpath(self.root)
            if norm == root:
                path = "."
            elif norm.startswith(root.rstrip("/") + "/"):
                path = norm[len(root.rstrip("/")) + 1 :]
        return self.clean(path, 200)

    def add(self, call: ToolCall) -> None:
        name = _SPACES.sub(" ", storable(call.name)).strip()[:80] or "unknown"
        self.tools[name] += 1
        args = call.input
        if name in READ_TOOLS:
            _put(self.read, self.path(args.get("file_path")))
        elif name in EDIT_TOOLS:
            path = self.path(args.get("file_path") or args.get("notebook_path"))
            if path:
                if path not in self.created:  # a file made here and then edited was created
                    _put(self.edited, path)
                self.pending_keys |= self.failed_keys
        elif name in WRITE_TOOLS:
            path = self.path(args.get("file_path"))
            if path:
                target = self.edited if (call.result_type == "update" or path in self.read
                                         or path in self.edited) else self.created
                if path not in self.created and path not in self.edited:
                    _put(target, path)
                self.pending_keys |= self.failed_keys
        elif name in SHELL_TOOLS:
            self.command(call)
        elif name in SEARCH_TOOLS:
            pattern = args.get("pattern")
            if isinstance(pattern, str) and pattern.strip():
                where = self.path(args.get("path"))
                _put(self.searched, self.clean(
                    f'"{pattern}"' + (f" in {where}" if where else ""), 100))
        elif name == "WebFetch":
            url = args.get("url")
            if isinstance(url, str):
                _put(self.fetched, self.clean(url, 200))
        elif name == "WebSearch":
            query = args.get("query")
            if isinstance(query, str):
                _put(self.fetched, self.clean(f"search: {query}", 120))
        elif name in AGENT_TOOLS:
            task = args.get("description") or args.get("prompt")
            if isinstance(task, str) and task.strip():
                kind = args.get("subagent_type")
                label = f"({kind}) " if isinstance(kind, str) and kind.strip() else ""
                _put(self.subagents, self.clean(label + task, 160))

    def command(self, call: ToolCall) -> None:
        raw = call.input.get("command")
        if not isinstance(raw, str) or not raw.strip():
            return
        text = self.clean(raw, MAX_COMMAND_CHARS)
        if not text:
            return
        output = call.output
        match = _EXIT.match(output)
        exit_code = int(match.group(1)) if match else None
        failed: bool | None = call.is_error
        if exit_code is not None:
            failed = exit_code != 0
        key = _program(raw)
        if failed:
            note = self.clean(" · ".join(_error_lines(output)), MAX_NOTE_CHARS)
            if key:
                self.failed_keys.add(key)
        elif failed is False:
            note = self.clean(_last_line(output), MAX_NOTE_CHARS)
            if key in self.pending_keys:
                self.fixed = True
        else:
            note = ""
        self.commands.append(Command(text, failed, exit_code, note, key))
        if _TEST_RUNNER.search(raw):
            for name in _TEST_NAMES.findall(raw):
                _put(self.tests, self.path(name))
        if failed:
            for name in _FAILED_TEST.findall(output[:_SCAN_CHARS * 4]):
                _put(self.tests, self.path(name))

    def finish(self) -> Digest:
        return Digest(
            read=_keys(self.read), created=_keys(self.created), edited=_keys(self.edited),
            commands=tuple(self.commands), tests=_keys(self.tests),
            fetched=_keys(self.fetched), searched=_keys(self.searched),
            subagents=_keys(self.subagents),
            tools=tuple(sorted(self.tools.items(), key=lambda kv: (-kv[1], kv[0]))),
            fixed=self.fixed,
        )


def _put(into: dict[str, None], value: str) -> None:
    if value:
        into[value] = None


def _keys(items: dict[str, None]) -> tuple[str, ...]:
    return tuple(items)


def _listing(items: Iterable[str]) -> str:
    items = list(items)
    more = len(items) - MAX_ITEMS
    shown = ", ".join(items[:MAX_ITEMS])
    return f"{shown} (+{more} more)" if more > 0 else shown


def _shown_commands(commands: Sequence[Command]) -> list[tuple[Command, bool]]:
    """At most MAX_COMMANDS in order, each with whether it is key: a failure or the first
    pass after one. Key commands are kept first, then the latest of the rest."""
    key: set[int] = set()
    after_failure = False
    for i, command in enumerate(commands):
        if command.failed:
            key.add(i)
            after_failure = True
        elif after_failure and command.failed is False:
            key.add(i)
            after_failure = False
    chosen = sorted(key)[:MAX_COMMANDS]
    rest = [i for i in range(len(commands)) if i not in key]
    room = MAX_COMMANDS - len(chosen)
    chosen += rest[len(rest) - room:] if room > 0 and rest else []
    return [(commands[i], i in key) for i in sorted(chosen)]


def _program(command: str) -> str:
    """The program a command line runs: `A=1 uv run pytest -q` → `pytest`."""
    first = command.strip().split("&&")[-1].split("|")[0]
    for word in first.split():
        if _ENV_ASSIGNMENT.match(word) or word in _RUNNERS or word.startswith("-"):
            continue
        return posixpath.basename(word.strip("'\""))
    return ""


def _error_lines(output: str, count: int = 2) -> list[str]:
    """The first lines of a failure that name the error (else its first lines)."""
    lines = [line.strip() for line in output[:_SCAN_CHARS].split("\n")]
    lines = [line for line in lines if line and not _EXIT.match(line) and not _RULES.fullmatch(
        line)]
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    return (errors or lines)[:count]


def _last_line(output: str) -> str:
    """The last output line, where runners print their summary; rule characters dropped."""
    for raw in reversed(output[-_SCAN_CHARS:].split("\n")):
        if line := _RULES.sub("", raw).strip():
            return line
    return ""
