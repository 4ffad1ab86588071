"""Paths that name something hostile: FIFOs where git's files, a database or an import source
should be, git configs that include themselves, symlinks out of a project, compression bombs
and values an importer does not expect. Real files in tmp_path, real `pma-mcp` processes
(CLI, prompt hook, the stdio server through the SDK client), each under a timeout so a hang
fails the test instead of stalling the suite.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from benchmarks import bench_import_bombs as bombs
from pma_mcp import files, gitconfig
from tests.test_cli import assert_one_line_error

DEADLINE = 60
"""Seconds a process gets; a FIFO that blocked would hold it forever."""
REMOTE_NAMESPACE = "git:github.com/acme/api"
CANARY = "Q7kv-outside-the-project-canary"


def env_for(tmp_path: Path, home: Path | None = None, **extra: str) -> dict[str, str]:
    home = home or tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_", "GIT_"))}
    env.update({"HOME": str(home), "PMA_DB_PATH": str(tmp_path / "store.db"),
                "GIT_CONFIG_NOSYSTEM": "1", "XDG_CONFIG_HOME": str(home / ".config"),
                "CLAUDE_CONFIG_DIR": str(home / ".claude"), **extra})
    return env


def pma(env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str = ""
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pma_mcp", *args], env=env, cwd=cwd,
                          input=stdin, capture_output=True, text=True, timeout=DEADLINE,
                          check=False)


def repository(path: Path) -> Path:
    """A checkout as git leaves it (written by hand: no git process needed)."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/api.git\n')
    return path


# ------------------------------------------------------------ git's files as FIFOs


def fifo_in_git(tmp_path: Path, where: str) -> tuple[Path, Path]:
    """A project and a home where one of git's files is a FIFO nobody writes to."""
    home = tmp_path / "home"
    home.mkdir()
    project = repository(tmp_path / "api")
    if where == "~/.gitconfig":
        os.mkfifo(home / ".gitconfig")
    elif where == "include.path":
        os.mkfifo(tmp_path / "pipe")
        with (project / ".git" / "config").open("a") as handle:
            handle.write(f"[include]\n\tpath = {tmp_path / 'pipe'}\n")
    else:
        os.mkfifo(project / ".git" / "commondir")
    return project, home


@pytest.mark.parametrize("where", ["~/.gitconfig", "include.path", ".git/commondir"])
def test_a_fifo_among_git_files_blocks_neither_the_cli_nor_the_prompt_hook(
        tmp_path: Path, where: str) -> None:
    project, home = fifo_in_git(tmp_path, where)
    env = env_for(tmp_path, home, CLAUDE_PROJECT_DIR=str(project))

    stats = pma(env, "stats", "--json", cwd=project)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["namespace"] == REMOTE_NAMESPACE

    prompt = {"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"),
              "cwd": str(project), "hook_event_name": "UserPromptSubmit",
              "prompt": "How are invoices rendered?"}
    hooked = pma(env, "hook", "user-prompt-submit", cwd=project, stdin=json.dumps(prompt))
    assert hooked.returncode == 0
    assert "Traceback" not in hooked.stderr and len(hooked.stderr.splitlines()) <= 1


@pytest.mark.parametrize("where", ["~/.gitconfig", "include.path", ".git/commondir"])
async def test_a_fifo_among_git_files_lets_the_server_start(tmp_path: Path, where: str) -> None:
    project, home = fifo_in_git(tmp_path, where)
    params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                   cwd=str(project), env=env_for(tmp_path, home))
    with anyio.fail_after(DEADLINE):
        async with Client(params) as client:
            stored = await client.call_tool("remember", {
                "content": "Invoices are rendered as PDF by the billing service"})
    assert not stored.is_error and stored.structured_content is not None
    assert stored.structured_content["namespace"] == REMOTE_NAMESPACE


def test_a_config_including_itself_four_times_costs_a_bounded_number_of_reads(
        tmp_path: Path) -> None:
    """git stops at depth 10; 4 self-includes per file is 4^11 parses without a total bound."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\temail = dev@example.com\n" + f"[include]\n\tpath = {config}\n" * 4)

    values, _ = gitconfig.read_config([config], None, tmp_path)

    assert gitconfig.last(values, "user.email") == "dev@example.com"
    assert len(values["user.email"]) <= gitconfig.MAX_CONFIG_FILES
    env = env_for(tmp_path, GIT_CONFIG_GLOBAL=str(config))
    assert pma(env, "stats", cwd=tmp_path).returncode == 0


def test_includes_nest_at_most_ten_deep_as_in_git(tmp_path: Path) -> None:
    chain = [tmp_path / f"level{n}" for n in range(13)]
    for depth, path in enumerate(chain):
        nested = f"[include]\n\tpath = {chain[depth + 1]}\n" if depth + 1 < len(chain) else ""
        path.write_text(f"[user]\n\temail = level{depth}@example.com\n{nested}")

    values, _ = gitconfig.read_config([chain[0]], None, tmp_path)

    assert gitconfig.last(values, "user.email") == "level10@example.com"


# ------------------------------------------------------------ the database as a FIFO


def test_a_fifo_as_the_database_is_one_clear_line_everywhere(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "store.db")
    env = env_for(tmp_path)
    for args in (["stats"], ["search", "invoices"], ["export"]):
        assert_one_line_error(pma(env, *args, cwd=tmp_path), "store.db",
                              "FIFO (named pipe), not a regular file", "PMA_DB_PATH")
    served = subprocess.run([sys.executable, "-m", "pma_mcp"], env=env, cwd=tmp_path,
                            input="", capture_output=True, text=True, timeout=DEADLINE,
                            check=False)
    assert served.returncode == 1 and served.stdout == ""
    assert "Traceback" not in served.stderr
    assert "not a regular file" in served.stderr.strip().splitlines()[-1]
    prompt = {"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"),
              "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
              "prompt": "How are invoices rendered?"}
    hooked = pma(env, "hook", "user-prompt-submit", cwd=tmp_path, stdin=json.dumps(prompt))
    assert hooked.returncode == 0 and hooked.stdout == ""
    (line,) = hooked.stderr.strip().splitlines()
    assert "not a regular file" in line


# ------------------------------------------------------------ import sources


@pytest.mark.parametrize("fmt", ["mcp-memory", "mem0", "claude-mem", "claude-code"])
def test_a_fifo_as_the_import_source_is_a_clear_error_at_once(tmp_path: Path, fmt: str) -> None:
    os.mkfifo(tmp_path / "source")
    done = pma(env_for(tmp_path), "import", "--from", fmt, str(tmp_path / "source"))
    assert_one_line_error(done, f"--from {fmt}", "FIFO")
    assert not (tmp_path / "store.db").exists()


def test_import_from_claude_code_skips_links_out_of_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "rules").mkdir(parents=True)
    (outside / "notes.md").write_text(f"# Private\n\nA note that must stay out: {CANARY}.\n")
    (outside / "rules" / "x.md").write_text(f"# Leak\n\nAnother outside file: {CANARY}.\n")
    project = tmp_path / "api"
    (project / ".claude" / "rules").mkdir(parents=True)
    (project / "CLAUDE.md").symlink_to(outside / "notes.md")
    (project / ".claude" / "rules" / "linked.md").symlink_to(outside / "rules" / "x.md")
    (project / ".claude" / "rules" / "money.md").write_text(
        "# Money\n\nAmounts are integer cents everywhere, never floating point.\n")
    env = env_for(tmp_path, PMA_NAMESPACE="/home/dev/api")

    done = pma(env, "import", "--from", "claude-code", str(project))

    assert done.returncode == 0, done.stderr
    assert "imported 1 of 1" in done.stdout
    assert done.stdout.count("a symlink to a file outside the project") == 2
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("store.db*"))
    assert CANARY.encode() not in stored and b"integer cents" in stored


def test_mem0_odd_values_are_coerced_or_noted_and_the_import_goes_on(tmp_path: Path) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(500):
        node["child"] = {}
        node = node["child"]
    records = [
        {"id": "m1", "memory": "Releases go out on Tuesdays after the standup.", "categories": 7},
        {"id": "m2", "memory": "The team prefers squash merges for feature work.",
         "categories": "workflow"},
        {"id": "m3", "memory": "Staging is restored from last night's backup.", "created_at": -5},
        {"id": "m4", "memory": "Invoices are rendered as PDF by the billing service.",
         "metadata": deep},
        {"id": "m5", "memory": "Deploy keys rotate every ninety days.", "categories": ["ops"]},
    ]
    (tmp_path / "mem0.json").write_text(json.dumps({"results": records}))
    env = env_for(tmp_path, PMA_NAMESPACE="/home/dev/api")

    done = pma(env, "import", "--from", "mem0", str(tmp_path / "mem0.json"), "--json")

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["imported"] == 5
    notes = "\n".join(outcome["notes"])
    assert "'m3'" in notes and "no time" in notes
    assert "'m4'" in notes and "nested more than" in notes
    exported = json.loads(pma(env, "export").stdout)["memories"]
    tags = {m["content"][:12]: m["tags"] for m in exported}
    assert tags["Releases go "] == ["mem0", "7"]
    assert tags["The team pre"] == ["mem0", "workflow"]  # one tag, not one per character
    assert tags["Deploy keys "] == ["mem0", "ops"]


@pytest.mark.parametrize("case", bombs.CASES, ids=[c.fmt for c in bombs.CASES])
def test_an_import_bomb_stays_under_the_memory_bound(tmp_path: Path, case: bombs.Case) -> None:
    peak = bombs.measure(case, tmp_path)

    assert peak.peak_mb < bombs.PEAK_LIMIT_MB, f"{case.name}: peak {peak.peak_mb:.0f} MB"
    assert "Traceback" not in peak.stderr and "MemoryError" not in peak.stderr
    if case.fmt == "mem0":  # a bomb is refused, nothing imported
        assert_one_line_error(subprocess.CompletedProcess([], peak.returncode, peak.stdout,
                                                          peak.stderr), "larger than")
    else:  # the honest part is imported, the hostile part left out
        assert peak.returncode == 0, peak.stderr
        assert "imported 1 of 1" in peak.stdout


# ------------------------------------------------------------ the reading helper


def test_lines_skips_an_overlong_line_without_holding_it() -> None:
    data = b"first\n" + b"x" * 5000 + b"\nthird\nlast"
    got = list(files.lines(io.BytesIO(data), "mem", max_line=100, max_total=10_000))
    assert [(line.number, line.data) for line in got] == [
        (1, b"first"), (2, None), (3, b"third"), (4, b"last")]
    with pytest.raises(files.RefusedFileError, match="past 1,000 bytes"):
        list(files.lines(io.BytesIO(data), "mem", max_line=100, max_total=1_000))


def test_gunzip_head_is_bounded_by_output_and_reads_every_member() -> None:
    two = gzip.compress(b"hello ") + gzip.compress(b"world")
    assert files.gunzip_head(io.BytesIO(two), 100) == files.Head(b"hello world", cut=False)
    bomb = gzip.compress(b"a" * 5_000_000)
    head = files.gunzip_head(io.BytesIO(bomb), 1000)
    assert head.cut and head.data == b"a" * 1000


def test_read_head_refuses_a_fifo_and_a_device_naming_what_they_are(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(files.RefusedFileError, match="is a FIFO"):
        files.read_head(tmp_path / "pipe", 10)
    with pytest.raises(files.RefusedFileError, match="is a character device"):
        files.read_head("/dev/zero", 10)
    link = tmp_path / "link"
    link.symlink_to("/etc/hostname")
    with pytest.raises(files.RefusedFileError, match="symbolic link"):
        files.read_head(link, 10, follow_symlinks=False)


def test_a_broken_read_graph_document_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "graph.json").write_text('{\n "entities": [ {"name": \n')
    done = pma(env_for(tmp_path), "import", "--from", "mcp-memory", str(tmp_path / "graph.json"))
    assert_one_line_error(done, "--from mcp-memory", "line 1 is not JSON")
