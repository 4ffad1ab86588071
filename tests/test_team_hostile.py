"""Team identity from hostile git files, symlinked project directories, and a healthy store
under `doctor --repair`: real repositories, the CLI, hooks and the stdio server as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

TIMEOUT = 60

HOSTILE = {
    "escape": "https://github.com/acme/ap\x1b[2J\x1b[31mi.git",
    "bidi": "https://github.com/acme/\u202egnp.exe",
    "nul": "https://github.com/acme/a\x00pi.git",
    "long": "https://github.com/acme/" + "a" * 5000,
}


def hostile_checkout(path: Path, url: str) -> Path:
    """A repository whose config names `url` as origin byte for byte (as a cloned or
    unpacked repository's file may)."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / ".git" / "config").write_bytes(
        b'[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n\turl = '
        + url.encode() + b"\n")
    return path


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "PMA_DB_PATH": str(tmp_path / "store.db"), **extra}


def pma(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pma_mcp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_remote_falls_back_to_the_path_with_one_note(
    tmp_path: Path, kind: str
) -> None:
    repo = hostile_checkout(tmp_path / "api", HOSTILE[kind])
    env = cli_env(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                   cwd=str(repo), env=env)
    async with Client(params, mode="legacy") as client:
        stored = await client.call_tool("remember", {"content": "writes still work here"})
        assert not stored.is_error and stored.structured_content is not None
        assert stored.structured_content["namespace"] == str(repo)
    stats = pma(["stats", "--json"], repo, env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["namespace"] == str(repo)
    note = stats.stderr.strip().splitlines()
    assert len(note) == 1 and "git remote does not make a usable namespace" in note[0]
    for shown in (stats.stdout, stats.stderr):
        assert "\x1b" not in shown and "\u202e" not in shown and "\x00" not in shown
        assert "a" * 200 not in shown


def test_pma_namespace_with_control_characters_is_a_clear_error(tmp_path: Path) -> None:
    for bad in ("a\x1b[31mb", "x\u202ey", "n" * 5000):
        proc = pma(["stats"], tmp_path, cli_env(tmp_path, PMA_NAMESPACE=bad))
        assert proc.returncode == 1 and proc.stdout == ""
        assert "PMA_NAMESPACE must be a namespace name" in proc.stderr
        assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
def test_a_symlinked_project_dir_is_one_namespace_for_hooks_and_the_cli(
    tmp_path: Path, in_git: bool
) -> None:
    from tests.test_hooks import Transcript, stop_input

    real = tmp_path / "real" / "api"
    if in_git:
        hostile_checkout(real, "git@github.com:acme/api.git")
    else:
        real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    transcript = Transcript(tmp_path / "s.jsonl")
    transcript.exchange("Where do the nightly exports go?", "To the archive bucket. " * 6)
    path = transcript.write()
    env = cli_env(tmp_path)
    hook = subprocess.run(
        [sys.executable, "-m", "pma_mcp", "hook", "stop"], cwd=link,
        env={**env, "CLAUDE_PROJECT_DIR": str(link), "PWD": str(link)},
        input=json.dumps(stop_input(path, cwd=str(link))), capture_output=True, text=True,
        timeout=TIMEOUT, check=False)
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr
    expected = "git:github.com/acme/api" if in_git else str(real)
    for extra in ({"PWD": str(link)}, {"CLAUDE_PROJECT_DIR": str(link)},
                  {"CLAUDE_PROJECT_DIR": f"{link}/"}):
        stats = pma(["stats", "--json"], link, {**env, **extra})
        assert stats.returncode == 0, stats.stderr
        shown = json.loads(stats.stdout)
        assert (shown["namespace"], shown["total"]) == (expected, 1), (extra, shown)


@pytest.mark.postgres
async def test_the_ui_lists_and_opens_only_this_members_personal_namespace(
    tmp_path: Path, postgres_url: str
) -> None:
    """docs/TEAM.md: on a shared database `default/<author>` is seen by nobody else."""
    import http.client
    import re
    from urllib.parse import quote

    from pma_mcp.config import Settings
    from pma_mcp.core.budget import WordEstimate
    from pma_mcp.service import MemoryService

    ids = {}
    for author, rule in (("alice", "Alice prefers tabs"), ("bob", "Bob's private rule")):
        settings = Settings(db_path=tmp_path / "unused.db", namespace="git:github.com/acme/api",
                            database_url=postgres_url, author=author)
        async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
            ids[author] = (await svc.add(rule, namespace=settings.global_namespace)).memory.id
            await svc.add(f"{author} shared a project fact about the exports")
    env = {**cli_env(tmp_path), "PMA_DATABASE_URL": postgres_url, "PMA_AUTHOR": "alice",
           "PMA_NAMESPACE": "git:github.com/acme/api"}
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp", "ui", "--port", "0"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        found = re.search(r"127\.0\.0\.1:(\d+)/\?token=([\w-]+)", proc.stderr.readline())
        assert found, proc.stderr.read() if proc.poll() is not None else "no URL printed"
        port, token = int(found[1]), found[2]

        def get(path: str) -> tuple[int, str]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
            try:
                conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}",
                                                   "Cookie": f"pma_ui_{port}={token}"})
                reply = conn.getresponse()
                return reply.status, reply.read().decode()
            finally:
                conn.close()

        status, page = get("/")
        assert status == 200 and "default/alice" in page and "default/bob" not in page
        status, page = get(f"/memories?ns={quote('default/alice')}")
        assert status == 200 and "Alice prefers tabs" in page
        for path in (f"/memories?ns={quote('default/bob')}",
                     f"/memory/{ids['bob']}?ns={quote('default/bob')}",
                     f"/export?ns={quote('default/bob')}"):
            status, page = get(path)
            assert status == 404 and "Bob&#x27;s private rule" not in page, path
            assert "Bob's private rule" not in page and "default/bob" in page
    finally:
        proc.terminate()
        proc.wait(TIMEOUT)
