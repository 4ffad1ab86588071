"""A real, throwaway PostgreSQL server for the tests and benchmarks.

`PMA_TEST_POSTGRES_URL` names a server to use as is (its user must be allowed to create a
database). Otherwise, when `initdb`/`pg_ctl` are found (PATH, then /usr/lib/postgresql/*/bin),
a cluster is created in a temporary folder, on a free port, listening on 127.0.0.1 and on a
socket inside that folder, and removed at the end. PostgreSQL refuses to run as root, so as
root the cluster belongs to the `postgres` user the Debian package creates. `PMA_TEST_POSTGRES=off`
skips the PostgreSQL tests without looking. A cluster left behind by a killed run (its owner
pid is gone) is stopped and removed by the next run.

Each test gets its own schema in one shared database, named by the connection URL
(`options=-csearch_path%3D<schema>`, libpq's spelling, which asyncpg also honours).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import asyncpg

URL_ENV = "PMA_TEST_POSTGRES_URL"
SWITCH_ENV = "PMA_TEST_POSTGRES"
SKIP_PREFIX = "PostgreSQL tests skipped"
INSTALL_HINT = ("install PostgreSQL (`apt-get install -y postgresql`, as .ci/run does) "
                f"or set {URL_ENV}=postgresql://user@host:port/db, then rerun `uv run pytest`")
PG_ROOTS = ("/usr/lib/postgresql",)
TEST_DATABASE = "pma_test"
SUPERUSER = "postgres"
PASSWORD_GROUP = "pma_password_users"
"""Members of this role must give a password over TCP (scram-sha-256); everyone else is trusted,
so the test URLs need none while a test can still prove the password paths (PGPASSWORD, pgpass)."""
RUN_AS = "postgres"
"""The OS user that owns the cluster when the tests run as root."""
_DIR_PREFIX = "pma-pg-"
_OWNER_FILE = "owner.pid"
T = TypeVar("T")


class ClusterError(RuntimeError):
    """The throwaway cluster could not be created or started; carries the server's log tail."""


@dataclass(frozen=True)
class PgBin:
    """The folder holding initdb, pg_ctl and postgres of one PostgreSQL version."""

    folder: Path

    def __getitem__(self, tool: str) -> str:
        return str(self.folder / tool)


HBA = f"""# written by tests/postgres.py: first match wins
local all all trust
host all +{PASSWORD_GROUP} 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
"""


def find_binaries(env: Mapping[str, str] | None = None,
                  roots: Sequence[str] = PG_ROOTS) -> PgBin | None:
    """initdb and pg_ctl from env's PATH, else the newest /usr/lib/postgresql/N/bin, or None."""
    env = os.environ if env is None else env
    initdb = shutil.which("initdb", path=env.get("PATH", ""))
    if initdb and shutil.which("pg_ctl", path=env.get("PATH", "")):
        return PgBin(Path(initdb).resolve().parent)
    versions: list[tuple[int, Path]] = []
    for root in roots:
        for folder in Path(root).glob("*/bin"):
            if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
                number = re.match(r"\d+", folder.parent.name)
                versions.append((int(number.group()) if number else 0, folder))
    return PgBin(max(versions)[1]) if versions else None


def skip_reason(env: Mapping[str, str] | None = None,
                roots: Sequence[str] = PG_ROOTS) -> str | None:
    """Why no PostgreSQL server can be had here (one line saying how to get one), or None."""
    env = os.environ if env is None else env
    if env.get(URL_ENV, "").strip():
        return None
    if env.get(SWITCH_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return f"{SKIP_PREFIX}: {SWITCH_ENV}=off — unset it to run them"
    if find_binaries(env, roots) is None:
        return f"{SKIP_PREFIX}: no initdb/pg_ctl found — {INSTALL_HINT}"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now (never 5432 by assumption)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def schema_url(base_url: str, schema: str) -> str:
    """`base_url` with its search_path set to `schema` in libpq's URL form.

    `options=-csearch_path%3D<schema>` is what psql/libpq read; asyncpg passes the `options`
    query parameter to the server as the startup `options` setting, which applies it the same way.
    """
    separator = "&" if "?" in base_url else "?"
    return f"{base_url}{separator}options={quote(f'-csearch_path={schema}', safe='')}"


def new_schema_name() -> str:
    """A fresh schema name: `t_` and 12 hex digits (lower case, needs no quoting)."""
    return f"t_{uuid.uuid4().hex[:12]}"


class Cluster:
    """One throwaway PostgreSQL cluster: `start()`, `url(database)`, `stop()` (idempotent)."""

    def __init__(self, binaries: PgBin, *, durable: bool = False) -> None:
        self.binaries = binaries
        self.durable = durable
        """False: fsync off — fast, and enough for a cluster a test run throws away. A commit
        still writes its WAL before it is acknowledged (synchronous_commit stays on), so a
        killed or restarted server loses no acknowledged write; only an OS crash could."""
        self.base: Path | None = None
        self.port = 0

    @property
    def data(self) -> Path:
        assert self.base is not None, "cluster not started"
        return self.base / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        reap_orphans()
        self.base = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX))
        (self.base / _OWNER_FILE).write_text(str(os.getpid()))
        if os.geteuid() == 0:
            self._give_to_run_as_user()
        self._run([self.binaries["initdb"], "-D", str(self.data), "-A", "trust", "-U",
                   SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])
        (self.data / "pg_hba.conf").write_text(HBA)
        for attempt in range(3):  # the free port may be taken between free_port() and bind
            self.port = free_port()
            try:
                self._start_server()
            except ClusterError:
                if attempt == 2 or "could not bind" not in self.log_tail():
                    self.stop()
                    raise
                continue
            run_sync(lambda: execute(self.url(), f"CREATE ROLE {PASSWORD_GROUP} NOLOGIN"))
            return

    def restart(self, mode: Literal["smart", "fast", "immediate"] = "fast") -> None:
        """Stop the server and start it again on the same port (a fault test's server restart).

        Every open connection is cut; "immediate" is a crash (recovery replays the WAL).
        """
        self._run(self._pg_ctl("stop", "-m", mode, "-w", "-t", "60"))
        self._start_server()

    def _start_server(self) -> None:
        assert self.base is not None
        self._run(self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.base / "log"),
                               "-o", self._server_options()))

    def stop(self) -> None:
        """Stop the server (immediate: a test cluster keeps nothing) and remove its folder."""
        if self.base is None:
            return
        stop_cluster(self.base, self.binaries)
        self.base = None

    def log_tail(self, lines: int = 20) -> str:
        """The end of the server's log, for an error message ("" when there is none yet)."""
        if self.base is None:
            return ""
        try:
            text = (self.base / "log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _server_options(self) -> str:
        options = ["-p", str(self.port), "-k", str(self.base), "-c", "listen_addresses=127.0.0.1",
                   "-c", "max_connections=200"]
        if not self.durable:
            options += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        return shlex.join(options)

    def _pg_ctl(self, *args: str) -> list[str]:
        return [self.binaries["pg_ctl"], "-D", str(self.data), *args]

    def _give_to_run_as_user(self) -> None:
        assert self.base is not None
        try:
            user = pwd.getpwnam(RUN_AS)
        except KeyError:
            raise ClusterError(f"running as root and there is no {RUN_AS!r} user to own the "
                               "cluster (the postgresql package creates it)") from None
        os.chown(self.base, user.pw_uid, user.pw_gid)
        for parent in self.base.parents:  # the user must reach the folder: open the way down
            mode = parent.stat().st_mode
            if not mode & 0o001:
                raise ClusterError(f"{parent} is not searchable by {RUN_AS!r}; set TMPDIR "
                                   "to a folder others can enter (e.g. /tmp)")

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(as_cluster_owner(command), cwd=self.base, capture_output=True,
                              text=True, timeout=120, start_new_session=True, check=False)
        if done.returncode != 0:
            raise ClusterError(f"{Path(command[0]).name} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()}\n{self.log_tail()}")


def as_cluster_owner(command: list[str]) -> list[str]:
    """`command` as the cluster's owner: itself, or under `runuser`/`su` when we are root."""
    if os.geteuid() != 0:
        return command
    if shutil.which("runuser"):
        return ["runuser", "-u", RUN_AS, "--", *command]
    return ["su", RUN_AS, "-s", "/bin/sh", "-c", shlex.join(command)]


def stop_cluster(base: Path, binaries: PgBin | None) -> None:
    """Stop the postmaster of the cluster in `base` (pg_ctl, else its pid) and remove `base`."""
    data = base / "data"
    if (data / "postmaster.pid").exists():
        if binaries is not None:
            subprocess.run(as_cluster_owner([binaries["pg_ctl"], "-D", str(data), "-m",
                                             "immediate", "-w", "-t", "30", "stop"]),
                           capture_output=True, timeout=60, check=False, start_new_session=True)
        _kill_postmaster(data)
    shutil.rmtree(base, ignore_errors=True)


def _kill_postmaster(data: Path) -> None:
    """SIGQUIT (immediate shutdown) the postmaster named in postmaster.pid, if it still runs."""
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGQUIT)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.05)


def reap_orphans(folder: Path | None = None) -> None:
    """Stop and remove clusters a killed run left behind (their owner pid no longer runs)."""
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    for base in folder.glob(f"{_DIR_PREFIX}*"):
        try:
            owner = int((base / _OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not _alive(owner):
            stop_cluster(base, find_binaries())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def running_cluster(*, durable: bool = False) -> Iterator[Cluster]:
    """A started cluster, stopped and removed on leaving (also on an error or Ctrl-C)."""
    binaries = find_binaries()
    if binaries is None:
        raise ClusterError(f"no initdb/pg_ctl found — {INSTALL_HINT}")
    cluster = Cluster(binaries, durable=durable)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@dataclass(frozen=True)
class PgServer:
    """The session's server: the URL of its test database, and the cluster when it is ours."""

    url: str
    cluster: Cluster | None
    """None for PMA_TEST_POSTGRES_URL's server (it cannot be restarted from here)."""


@contextlib.contextmanager
def test_server(database: str = TEST_DATABASE, *, durable: bool = False) -> Iterator[PgServer]:
    """A real server with `database` on it, for a whole session (or benchmark run).

    PMA_TEST_POSTGRES_URL's server if set (`database` is created there when missing), else a
    throwaway cluster. The URL names no password: libpq's PGPASSWORD / ~/.pgpass supply it.
    """
    configured = os.environ.get(URL_ENV, "").strip()
    if configured:
        yield PgServer(ensure_database(configured, database), None)
        return
    with running_cluster(durable=durable) as cluster:
        yield PgServer(ensure_database(cluster.url(), database), cluster)


@contextlib.contextmanager
def server_url(database: str = TEST_DATABASE, *, durable: bool = False) -> Iterator[str]:
    """test_server's URL alone."""
    with test_server(database, durable=durable) as server:
        yield server.url


def ensure_database(url: str, database: str) -> str:
    """`url` pointed at `database`, created first if the server has none by that name."""
    async def create() -> None:
        conn = await asyncpg.connect(url)
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
            if not exists:
                await conn.execute(f'CREATE DATABASE "{database}"')
        finally:
            await conn.close()

    run_sync(create)
    return with_database(url, database)


def with_database(url: str, database: str) -> str:
    """`url` with its path (the database name) replaced by `database`, the query kept."""
    head, _, query = url.partition("?")
    scheme, _, rest = head.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{quote(database)}" + (f"?{query}" if query else "")


def run_sync(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `work()` to completion on its own event loop in a thread.

    Fixtures are sync so they serve sync (subprocess) and async tests alike; a thread keeps
    asyncio.run clear of whatever loop pytest-asyncio is running.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(work())).result()


@contextlib.contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A new empty schema on `url`'s database, as a URL whose search_path is it; dropped after."""
    schema = new_schema_name()
    run_sync(lambda: execute(url, f"CREATE SCHEMA {schema}"))
    try:
        yield schema_url(url, schema)
    finally:
        run_sync(lambda: execute(url, f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


async def execute(url: str, sql: str) -> None:
    """Run one statement on its own connection (setup and teardown, not the code under test)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """Rows of one query on its own connection (what a test checks the server holds)."""
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()
