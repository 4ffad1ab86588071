"""Team use (#12 item 4): one namespace per repository for every checkout, authors, and each
person's own global namespace on a shared database.

Real git repositories in tmp_path (`git init` + `git remote add`, worktrees by `git worktree
add`), hooks as subprocesses with Claude Code's input, the MCP server through the SDK's
in-process Client, the CLI as a subprocess, real SQLite files.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pma_mcp import gitconfig
from pma_mcp.config import Settings, namespace_allowed
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.errors import ConfigError, InvalidInputError
from pma_mcp.core.models import ImportItem
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.server import build_server
from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.schema import SCHEMA_VERSION
from tests.backends import stored_bytes
from tests.fixtures.make_fixtures import FIXTURE_MEMORIES, path_for
from tests.test_hooks import SESSION, Hook, Transcript, hook_env, prompt_input, stop_input

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")

NS = "git:github.com/acme/api"
TOKEN = "ghp_Z9yQ7xW3vU1tS5rP8oN2mL4kJ6hG0fE"
"""A credential in a teammate's remote URL: it must never reach the store or a log."""
SPELLINGS = [
    "git@github.com:Acme/api.git",
    f"https://bob:{TOKEN}@github.com/acme/api",
    "ssh://git@github.com/acme/api.git/",
    "ssh://git@GitHub.com:22/acme/API.git",
    "https://github.com/acme/api.git",
    "git://github.com/acme/api",
    "git+ssh://git@github.com/acme//api.git//",
]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)})


def checkout(path: Path, url: str | None, email: str | None = None) -> Path:
    """A fresh repository at `path` with remote `origin` at `url` (none if None)."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    if url is not None:
        git(path, "remote", "add", "origin", url)
    if email is not None:
        git(path, "config", "user.email", email)
    return path


def env_for(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", **extra}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# ---------------------------------------------------------------- normalising a remote


@pytest.mark.parametrize("url", SPELLINGS)
def test_every_spelling_of_one_remote_is_one_namespace(url: str) -> None:
    assert gitconfig.remote_namespace(url) == NS


def test_no_part_of_a_credential_survives_normalising() -> None:
    for url in (f"https://bob:{TOKEN}@github.com/acme/api", f"https://{TOKEN}@github.com/acme/api",
                f"https://x:{TOKEN[:10]}/{TOKEN[10:]}@github.com/acme/api.git",
                f"https://github.com/acme/api.git?access_token={TOKEN}"):
        name = gitconfig.remote_namespace(url)
        assert name == NS, url
        assert not any(TOKEN[i:i + 6].lower() in name for i in range(len(TOKEN) - 5))


@pytest.mark.parametrize("url", [
    "/srv/git/api.git", "../api", "file:///srv/git/api.git", "C:\\repos\\api", "~/api.git",
    "https://github.com/", "",
])
def test_a_local_or_empty_remote_names_no_team_namespace(url: str) -> None:
    assert gitconfig.remote_namespace(url) is None


def test_other_hosts_and_paths_stay_apart() -> None:
    assert gitconfig.remote_namespace("git@gitlab.com:acme/api.git") == "git:gitlab.com/acme/api"
    assert gitconfig.remote_namespace("git@github.com:acme/api-v2.git") != NS
    assert (gitconfig.remote_namespace("https://gitlab.acme.io:8443/team/sub/api.git")
            == gitconfig.remote_namespace("ssh://git@gitlab.acme.io:2222/team/sub/api"))


def test_the_config_parser_reads_quotes_escapes_comments_and_continuations() -> None:
    text = ('[remote "origin"]\n\turl = "git@github.com:a/b.git" ; a comment\n'
            '[user]\n  email = alice@acme.example # c\n  name = "Al \\"Q\\" ice"\n'
            '[Remote.Up]\n  url = x\\\ny\n[core]\n  bare\n')
    assert list(gitconfig.parse(text)) == [
        ("remote.origin.url", "git@github.com:a/b.git"), ("user.email", "alice@acme.example"),
        ("user.name", 'Al "Q" ice'), ("remote.up.url", "xy"), ("core.bare", "true")]


# --------------------------------------------------------------------- namespaces


def test_two_checkouts_with_different_spellings_share_a_namespace(
    tmp_path: Path, home: Path
) -> None:
    alice = checkout(tmp_path / "alice" / "code" / "api", SPELLINGS[0])
    bob = checkout(tmp_path / "bob" / "work" / "acme-api", SPELLINGS[1])
    env = env_for(home)
    a = Settings.from_env(env, cwd=str(alice))
    b = Settings.from_env(env, cwd=str(bob / "src" / "deep"))  # below the root, not yet made
    assert a.namespace == b.namespace == NS
    assert a.path_namespaces == (str(alice),)
    assert b.path_namespaces == (str(bob / "src" / "deep"), str(bob))
    assert TOKEN not in repr(b)


def test_the_project_dir_wins_over_the_cwd_and_pma_namespace_over_both(
    tmp_path: Path, home: Path
) -> None:
    repo = checkout(tmp_path / "api", SPELLINGS[0])
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    assert Settings.from_env(env_for(home, CLAUDE_PROJECT_DIR=str(repo)),
                             cwd=str(elsewhere)).namespace == NS
    explicit = Settings.from_env(env_for(home, PMA_NAMESPACE="mine"), cwd=str(repo))
    assert (explicit.namespace, explicit.path_namespaces) == ("mine", ())


def test_origin_is_preferred_else_the_first_remote(tmp_path: Path, home: Path) -> None:
    repo = checkout(tmp_path / "api", None)
    git(repo, "remote", "add", "upstream", "git@github.com:acme/upstream.git")
    git(repo, "remote", "add", "fork", "git@github.com:me/api.git")
    assert Settings.from_env(env_for(home), cwd=str(repo)).namespace == \
        "git:github.com/acme/upstream"
    git(repo, "remote", "add", "origin", "git@github.com:acme/api.git")
    assert Settings.from_env(env_for(home), cwd=str(repo)).namespace == NS


def test_a_linked_worktree_reads_its_main_repository_remote(tmp_path: Path, home: Path) -> None:
    repo = checkout(tmp_path / "api", SPELLINGS[0], email="alice@acme.example")
    git(repo, "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "--allow-empty",
        "-m", "first")
    git(repo, "worktree", "add", "-q", str(tmp_path / "api-feature"))
    settings = Settings.from_env(env_for(home), cwd=str(tmp_path / "api-feature"))
    assert settings.namespace == NS
    assert settings.author == "alice@acme.example"


def test_insteadof_rewrites_are_applied_as_git_applies_them(tmp_path: Path, home: Path) -> None:
    (home / ".gitconfig").write_text('[url "git@github.com:"]\n\tinsteadOf = gh:\n')
    repo = checkout(tmp_path / "api", "gh:acme/api")
    assert Settings.from_env(env_for(home), cwd=str(repo)).namespace == NS


def test_projects_outside_git_keep_their_path_namespace(tmp_path: Path, home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    local = checkout(tmp_path / "local-remote", "/srv/git/api.git")
    env = env_for(home)
    assert Settings.from_env(env, cwd=str(plain)).namespace == str(plain)
    assert Settings.from_env(env, cwd=str(local)).namespace == str(local)
    assert Settings.from_env(env, cwd="/").namespace == GLOBAL_NAMESPACE


def test_a_dotfiles_repository_at_home_is_not_every_folder_s_project(home: Path) -> None:
    git(home, "init", "-q")
    git(home, "remote", "add", "origin", "git@github.com:me/dotfiles.git")
    project = home / "scratch"
    project.mkdir()
    assert Settings.from_env(env_for(home), cwd=str(project)).namespace == str(project)


def test_broken_git_files_leave_the_path_namespace(tmp_path: Path, home: Path) -> None:
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / ".git").write_text("gitdir: /nowhere/at/all\n")
    garbage = checkout(tmp_path / "garbage", SPELLINGS[0])
    (garbage / ".git" / "config").write_bytes(b"\xff\xfe[remote \"origin\"\x00\n\turl=\n"
                                              + bytes(range(256)) * 8)
    huge = checkout(tmp_path / "huge", SPELLINGS[0])
    with (huge / ".git" / "config").open("a") as handle:
        handle.write("# padding\n" * 200_000)
    for folder in (dangling, garbage, huge):
        settings = Settings.from_env(env_for(home), cwd=str(folder))
        assert settings.namespace == str(folder)


def test_a_hook_with_a_bad_pma_author_fails_open(team: dict[str, Any]) -> None:
    bob = team["bob"]
    proc = bob["hook"].run("user-prompt-submit",
                           prompt_input("were the export retries capped?", cwd=str(bob["repo"])),
                           env={"PMA_AUTHOR": "bob\nEvil: injected"}, cwd=bob["repo"])
    assert proc.returncode == 0 and proc.stdout == b""
    assert len(proc.stderr.decode().strip().splitlines()) == 1
    assert b"PMA_AUTHOR" in proc.stderr


# ------------------------------------------------------------------------- authors


def test_author_is_pma_author_else_repo_email_else_global_else_os_user(
    tmp_path: Path, home: Path
) -> None:
    repo = checkout(tmp_path / "api", SPELLINGS[0])
    bare = env_for(home)
    assert Settings.from_env(bare, cwd=str(repo)).author == getpass.getuser()
    xdg = home / ".config" / "git"
    xdg.mkdir(parents=True)
    (xdg / "config").write_text("[user]\n\temail = xdg@acme.example\n")
    assert Settings.from_env(bare, cwd=str(repo)).author == "xdg@acme.example"
    (home / ".gitconfig").write_text("[user]\n\temail = global@acme.example\n")
    assert Settings.from_env(bare, cwd=str(repo)).author == "global@acme.example"
    git(repo, "config", "user.email", "repo@acme.example")
    assert Settings.from_env(bare, cwd=str(repo)).author == "repo@acme.example"
    assert Settings.from_env({**bare, "PMA_AUTHOR": " Alice Smith "},
                             cwd=str(repo)).author == "Alice Smith"


def test_an_include_if_gitdir_email_applies_inside_that_folder_only(
    tmp_path: Path, home: Path
) -> None:
    (home / ".gitconfig-work").write_text("[user]\n\temail = alice@work.example\n")
    (home / ".gitconfig").write_text(
        "[user]\n\temail = alice@home.example\n"
        f'[includeIf "gitdir:{tmp_path}/work/"]\n\tpath = ~/.gitconfig-work\n')
    work = checkout(tmp_path / "work" / "api", SPELLINGS[0])
    own = checkout(tmp_path / "own" / "blog", "git@github.com:alice/blog.git")
    assert Settings.from_env(env_for(home), cwd=str(work)).author == "alice@work.example"
    assert Settings.from_env(env_for(home), cwd=str(own)).author == "alice@home.example"


@pytest.mark.parametrize("bad", ["a\nb", "x" * 201, "evil\u202e", "nul\x00"])
def test_a_bad_pma_author_is_a_clear_config_error(home: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match="PMA_AUTHOR"):
        Settings.from_env(env_for(home, PMA_AUTHOR=bad), cwd="/")


async def test_an_imported_record_keeps_its_author_and_a_bad_one_is_refused(
    tmp_path: Path
) -> None:
    settings = Settings(db_path=tmp_path / "s.db", namespace=NS, author="importer@acme.example")
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        await service.add("We pin ruff to one version across the monorepo")
        doc = await service.export()
        assert [r["author"] for r in doc["memories"]] == ["importer@acme.example"]
        doc["memories"][0]["author"] = "carol@acme.example"
        other = dict(doc["memories"][0], id="ab" * 16, content="Old export, no author field")
        del other["author"]
        unknown = dict(doc["memories"][0], id="cd" * 16, content="Unknown author", author=None)
        target = Settings(db_path=tmp_path / "t.db", namespace=NS, author="me@acme.example")
        async with await MemoryService.open(target, counter=WordEstimate()) as copy:
            await copy.import_document({**doc, "memories": [doc["memories"][0], other,
                                                            unknown]})
            authors = {m["content"]: m["author"] for m in (await copy.export())["memories"]}
            assert authors == {"We pin ruff to one version across the monorepo":
                               "carol@acme.example",
                               "Old export, no author field": "me@acme.example",
                               "Unknown author": None}
            bad = dict(doc["memories"][0], id="ef" * 16, content="x", author="a\x1b[31mb")
            with pytest.raises(InvalidInputError, match="author"):
                await copy.import_document([bad])


async def test_importers_without_a_source_author_record_the_importing_person(
    tmp_path: Path, postgres_url: str
) -> None:
    shared = Settings(db_path=tmp_path / "s.db", namespace=NS, author="me@acme.example",
                      database_url=postgres_url)
    items = [ImportItem(key="k1", content="Use pnpm, not npm", namespace=NS),
             ImportItem(key="k2", content="Answer tersely", namespace=GLOBAL_NAMESPACE),
             ImportItem(key="k3", content="Peanut allergy", namespace=NS, author="alice")]
    async with await MemoryService.open(shared, counter=WordEstimate()) as service:
        assert (await service.import_items(items)).imported == 3
        stored = {m["content"]: (m["namespace"], m["author"])
                  for m in (await service.export(namespace="*"))["memories"]}
    assert stored == {"Use pnpm, not npm": (NS, "me@acme.example"),
                      "Answer tersely": ("default/me@acme.example", "me@acme.example"),
                      "Peanut allergy": (NS, "alice")}


# ----------------------------------------------------- migration of path namespaces


async def test_path_namespace_memories_fold_into_the_git_namespace_on_first_open(
    tmp_path: Path, home: Path
) -> None:
    repo = checkout(tmp_path / "api", SPELLINGS[0])
    db = tmp_path / "store.db"
    old = Settings(db_path=db, namespace=str(repo))
    async with await MemoryService.open(old, counter=WordEstimate()) as service:
        kept = await service.add("Deploy with make release (marker wombat)", tags=["ops"])
        await service.add("Shared by both (marker quokka)")
    teammate = Settings(db_path=db, namespace=NS, author="bob@acme.example")
    async with await MemoryService.open(teammate, counter=WordEstimate()) as service:
        await service.add("Shared by both (marker quokka)")  # already in the git namespace
    settings = Settings.from_env(env_for(home, PMA_DB_PATH=str(db)), cwd=str(repo))
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert await service.count(namespace=str(repo)) == 0
        assert await service.count() == 2  # the duplicate merged, not copied
        found = await service.search("wombat", touch=False)
        assert [r.memory.id for r in found] == [kept.memory.id]
        assert found[0].memory.namespace == NS and found[0].memory.tags == ["ops"]
        assert (await service.store.check_consistency()).ok
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert await service.count() == 2  # a second open has nothing left to fold


async def test_a_fold_blocked_by_another_writer_waits_for_a_later_open(
    tmp_path: Path
) -> None:
    db = tmp_path / "store.db"
    async with await MemoryService.open(Settings(db_path=db, namespace="/p/api"),
                                        counter=WordEstimate()) as service:
        await service.add("Kept under the path until the lock is gone (marker dingo)")
    settings = Settings(db_path=db, namespace=NS, path_namespaces=("/p/api",))
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        async with await MemoryService.open(settings, counter=WordEstimate(),
                                            busy_timeout_ms=50) as service:
            assert await service.count(namespace="/p/api") == 1  # opened all the same
    finally:
        holder.close()
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert (await service.count(namespace="/p/api"), await service.count()) == (0, 1)


# -------------------------------------------------- hooks, server and CLI, end to end


@pytest.fixture
def team(tmp_path: Path, store_settings: Settings) -> Iterator[dict[str, Any]]:
    """Alice and Bob: one database (a shared store: a SQLite file, or a PostgreSQL schema),
    two homes, two checkouts of one repository at different paths with different URL
    spellings."""
    db = store_settings.db_path
    people = {}
    for name, url in (("alice", SPELLINGS[0]), ("bob", SPELLINGS[1])):
        home = tmp_path / name
        repo = checkout(home / "src" / "api", url)
        (home / ".gitconfig").write_text(f"[user]\n\temail = {name}@acme.example\n")
        env = {**hook_env(db, home, store_settings), "GIT_CONFIG_NOSYSTEM": "1",
               "PMA_LOG_LEVEL": "DEBUG"}
        people[name] = {"repo": repo, "home": home, "env": env,
                        "hook": Hook(db=db, env=env, store=store_settings)}
    yield {"db": db, "store": store_settings, **people}


def test_a_teammates_saved_exchange_reaches_the_others_prompt_with_its_author(
    team: dict[str, Any], tmp_path: Path
) -> None:
    alice, bob = team["alice"], team["bob"]
    transcript = Transcript(tmp_path / f"{SESSION}.jsonl")
    transcript.exchange("why does the nightly export time out?",
                        "The export timed out because retries were unbounded; I capped them at "
                        "five with jitter in config/jobs.toml and added a regression test.")
    path = transcript.write()
    saved = alice["hook"].run("stop", stop_input(path, cwd=str(alice["repo"])),
                              cwd=alice["repo"])
    assert saved.returncode == 0 and saved.stdout == b"", saved.stderr
    rows = alice["hook"].rows()
    assert [(r["namespace"], r["author"]) for r in rows] == [(NS, "alice@acme.example")]

    asked = bob["hook"].run(
        "user-prompt-submit",
        prompt_input("the nightly export timed out again, were retries capped?",
                     session="other-session", cwd=str(bob["repo"])),
        cwd=bob["repo"])
    assert asked.returncode == 0, asked.stderr
    block = json.loads(asked.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "by alice@acme.example" in block and "jitter" in block
    started = bob["hook"].context(
        "session-start", {"session_id": "s2", "transcript_path": "/tmp/s2.jsonl",
                          "cwd": str(bob["repo"]), "hook_event_name": "SessionStart",
                          "source": "startup"}, cwd=bob["repo"])
    assert started is not None and f"namespace {NS}" in started
    assert TOKEN.encode() not in stored_bytes(team["store"])  # the file and its WAL, or rows
    for file in team["db"].parent.glob(team["db"].name + "*"):  # and its shm
        assert TOKEN.encode() not in file.read_bytes()
    for proc in (saved, asked):  # PMA_LOG_LEVEL=DEBUG: everything the hooks log
        assert TOKEN.encode() not in proc.stderr


async def test_the_server_and_cli_show_who_stored_each_memory(team: dict[str, Any]) -> None:
    alice, bob = team["alice"], team["bob"]
    alice_settings = Settings.from_env(alice["env"], cwd=str(alice["repo"]))
    bob_settings = Settings.from_env(bob["env"], cwd=str(bob["repo"]))
    assert alice_settings.namespace == bob_settings.namespace == NS
    async with Client(build_server(alice_settings, counter=WordEstimate()),
                      raise_exceptions=True) as client:
        stored = await client.call_tool("remember", {
            "content": "Feature flags are cached for one hour in the mobile app",
            "importance": 0.8})
        assert stored.structured_content is not None
        assert stored.structured_content["author"] == "alice@acme.example"
    async with Client(build_server(bob_settings, counter=WordEstimate()),
                      raise_exceptions=True) as client:
        found = await client.call_tool("recall", {"query": "feature flags cached mobile"})
        assert found.structured_content is not None
        top = found.structured_content["results"][0]
        assert top["author"] == "alice@acme.example" and top["namespace"] == NS
        inspected = await client.call_tool("inspect", {"memory_id": top["id"]})
        assert inspected.structured_content is not None
        assert inspected.structured_content["memory"]["author"] == "alice@acme.example"
        context = await client.call_tool("load_context", {"query": "feature flags"})
        assert context.structured_content is not None
        assert "by alice@acme.example" in context.structured_content["text"]

    run = [sys.executable, "-m", "pma_mcp"]
    env = {**bob["env"], "COLUMNS": "200"}
    search = subprocess.run([*run, "search", "feature flags cached"], env=env, cwd=bob["repo"],
                            capture_output=True, text=True, check=False)
    assert search.returncode == 0, search.stderr
    assert "alice@acme.example" in search.stdout
    shown = subprocess.run([*run, "inspect", top["id"][:8]], env=env, cwd=bob["repo"],
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "author" in shown.stdout and "alice@acme.example" in shown.stdout
    doctor = subprocess.run([*run, "doctor"], env=env, cwd=bob["repo"], capture_output=True,
                            text=True, check=False)
    assert f"{NS} (from the git remote)" in doctor.stdout
    for proc in (search, shown, doctor):
        assert TOKEN not in proc.stdout + proc.stderr


# --------------------------------------------------------------- old stores, authors


async def test_a_v10_store_upgrades_with_every_author_unknown(tmp_path: Path) -> None:
    db = tmp_path / "v10.db"
    shutil.copyfile(path_for(10), db)
    settings = Settings(db_path=db, namespace=FIXTURE_MEMORIES[0]["namespace"], author="me")
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert await service.store.schema_version() == SCHEMA_VERSION
        old = await service.get(FIXTURE_MEMORIES[0]["id"])
        assert (old.author, old.shown_author) == (None, "unknown")
        new = await service.add("Written after the upgrade (marker bilby)")
        assert new.memory.author == "me"
        assert (await service.get(new.memory.id)).author == "me"
    from pma_mcp.hooks import handlers as hooks
    assert "by unknown" in hooks._entry(old, "")


async def test_the_v11_fixture_keeps_its_authors(tmp_path: Path) -> None:
    db = tmp_path / "v11.db"
    shutil.copyfile(path_for(11), db)
    settings = Settings(db_path=db, namespace=FIXTURE_MEMORIES[0]["namespace"])
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        for expected in FIXTURE_MEMORIES:
            memory = await service.store.get(expected["id"])
            assert memory is not None and memory.author == expected.get("author")


# ------------------------------------------------ the global namespace, per person


def test_on_sqlite_the_global_namespace_stays_default(home: Path) -> None:
    settings = Settings.from_env(env_for(home, PMA_AUTHOR="alice@acme.example"), cwd="/")
    assert settings.global_namespace == settings.namespace == GLOBAL_NAMESPACE


def test_on_a_shared_database_the_global_namespace_is_each_persons(home: Path) -> None:
    url = "postgresql://team@db.acme.example:5432/memory"
    alice = Settings.from_env(env_for(home, PMA_DATABASE_URL=url,
                                      PMA_AUTHOR="Alice@Acme.example"), cwd="/")
    bob = Settings.from_env(env_for(home, PMA_DATABASE_URL=url, PMA_AUTHOR="bob"), cwd="/")
    assert alice.global_namespace == "default/alice@acme.example"
    assert bob.global_namespace == "default/bob"
    assert alice.namespace == alice.global_namespace  # no project: this person's own rules
    assert namespace_allowed(alice, "default/alice@acme.example")
    assert not namespace_allowed(alice, "default/bob") and not namespace_allowed(alice, "default")
    shared = Settings.from_env(env_for(home, PMA_DATABASE_URL=url, PMA_AUTHOR="bob",
                                       PMA_GLOBAL_NAMESPACE="team-rules"), cwd="/")
    assert shared.global_namespace == shared.namespace == "team-rules"


async def test_a_persons_global_rules_reach_only_that_person(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two teammates on one PostgreSQL database: each one's global rules are their own."""
    db, url = tmp_path / "store.db", postgres_url
    alice = Settings(db_path=db, namespace=NS, database_url=url, author="alice@acme.example")
    bob = Settings(db_path=db, namespace=NS, database_url=url, author="bob@acme.example")
    async with await MemoryService.open(alice, counter=WordEstimate()) as service:
        await service.add("Always answer Alice in British English (marker numbat)",
                          namespace=alice.global_namespace)
        await service.add("The team deploys with make release (marker wombat)")
        assert [r.memory.namespace for r in await service.search("numbat", touch=False)] == \
            ["default/alice@acme.example"]
    async with await MemoryService.open(bob, counter=WordEstimate()) as service:
        assert await service.search("numbat", touch=False) == []
        assert [r.memory.author for r in await service.search("wombat", touch=False)] == \
            ["alice@acme.example"]
