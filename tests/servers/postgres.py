"""A real PostgreSQL server for the tests: Debian's PostgreSQL (``/usr/lib/postgresql/N/bin``)
on loopback, run as the ``postgres`` OS user (``initdb`` refuses root), durability off for speed
(``fsync``, ``synchronous_commit`` and ``full_page_writes``: a crash of the test machine loses a
throw-away cluster, nothing else).

``postgres_server`` (session) initialises and starts a cluster on first use, in about 2 s;
``pg_store_url`` (per test) is the SQLAlchemy URL of a fresh, empty store on it (a schema of its
own; ``postgres_server.create_database()`` gives a whole fresh database, at ~0.2 s each). The server
is stopped (``pg_ctl stop -m immediate``) and its data directory removed when the run ends; it
is the run's child with a parent-death signal, so a killed run takes it along.
A missing PostgreSQL fails the tests that need it, with how to install it; they never skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .ports import free_ports, wait_until

OS_USER = "postgres"
STORES_DB = "acidorc_stores"
INSTALL_HINT = ("install it with `apt-get install postgresql` (./scripts/run-tests does that when run as root) "
                "or point ACIDORC_PG_BINDIR at a directory holding initdb, pg_ctl and postgres")


def pg_bindir() -> Path:
    """The newest Debian PostgreSQL's ``bin`` directory (or ``$ACIDORC_PG_BINDIR``)."""
    given = os.environ.get("ACIDORC_PG_BINDIR", "").strip()
    candidates = [given] if given else sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                              key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                                              else 0, reverse=True)
    for c in candidates:
        if all((Path(c) / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(c)
    raise RuntimeError(f"the PostgreSQL tests need a PostgreSQL server (initdb, pg_ctl, postgres; looked in "
                       f"{given or '/usr/lib/postgresql/*/bin'}): {INSTALL_HINT}")


def _as_postgres(args: list[str]) -> list[str]:
    """``args`` run as the ``postgres`` OS user when we are root (initdb refuses root)."""
    if os.geteuid() != 0:
        return args
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        raise RuntimeError(f"the PostgreSQL tests run the server as the OS user {OS_USER!r}, which does not "
                           f"exist: {INSTALL_HINT}") from None
    return ["runuser", "-u", OS_USER, "--", *args]


@dataclass
class PostgresServer:
    bindir: Path
    workdir: Path
    port: int
    databases: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None

    @property
    def datadir(self) -> Path:
        return self.workdir / "data"

    @property
    def log(self) -> Path:
        return self.workdir / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _admin(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=database,
                               autocommit=True, connect_timeout=5)

    def create_database(self, name: str | None = None) -> str:
        """A fresh, empty database; its SQLAlchemy URL (psycopg 3)."""
        name = name or f"acidorc_{uuid.uuid4().hex[:16]}"
        with self._admin() as conn:
            # FILE_COPY: a plain copy of the (small) template, hardly any WAL (wal_level=minimal)
            conn.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY')
        self.databases.append(name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, closing what is still connected to it (a test's pooled connections,
        its worker processes): the data directory stays small, and stopping the server fast."""
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.databases:
            self.databases.remove(name)

    def create_store(self) -> str:
        """A fresh, empty transaction store, cheaper than a database (a quarter of the time): a
        new schema in the shared database ``acidorc_stores``, named by the URL's ``search_path``
        (``...?options=-csearch_path%3D<schema>``), so the store's tables go there and nothing
        else sees them. Dropped by :meth:`drop_store`."""
        if STORES_DB not in self.databases:
            self.create_database(STORES_DB)
        name = f"store_{uuid.uuid4().hex[:16]}"
        with self._admin(STORES_DB) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url(STORES_DB)}?options=-csearch_path%3D{name}"

    def drop_store(self, url: str) -> None:
        """Drop a store made by :meth:`create_store` (left in place if a connection still holds a
        lock on it after 10 s: the server goes at the end of the run anyway)."""
        import psycopg

        name = url.rsplit("%3D", 1)[1]
        with self._admin(STORES_DB) as conn:
            conn.execute("SET lock_timeout = '10s'")
            try:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
            except psycopg.errors.LockNotAvailable:
                pass

    def ready(self) -> bool:
        try:
            with self._admin() as conn:
                conn.execute("SELECT 1")
            return True
        except Exception:  # noqa: BLE001 - not up yet: connection refused, starting up, ...
            return False

    def stop(self) -> None:
        if (self.datadir / "postmaster.pid").exists():
            subprocess.run(_as_postgres([str(self.bindir / "pg_ctl"), "stop", "-D", str(self.datadir),
                                         "-m", "immediate", "-w", "-t", "30"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_postgres_server(workdir: Path | None = None, *, durable: bool = False) -> PostgresServer:
    """Initialise and start a cluster. ``durable=True`` keeps PostgreSQL's defaults for fsync,
    synchronous commit and full-page writes (what a benchmark of commits should measure); the
    tests turn them off."""
    bindir = pg_bindir()
    # under /tmp, not pytest's private base directory: the postgres user must reach it
    workdir = Path(workdir or tempfile.mkdtemp(prefix="acidorc-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    workdir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _as_postgres([])  # fails clearly without the postgres user
        info = pwd.getpwnam(OS_USER)
        os.chown(workdir, info.pw_uid, info.pw_gid)
    server = PostgresServer(bindir, workdir, free_ports(1)[0])
    init = subprocess.run(_as_postgres([str(bindir / "initdb"), "-D", str(server.datadir), "-U", "postgres",
                                        "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"]),
                          capture_output=True, text=True, check=False)
    if init.returncode != 0:
        server.stop()
        raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr or init.stdout}")
    settings = {
        "listen_addresses": "'127.0.0.1'", "port": str(server.port), "unix_socket_directories": "''",
        "max_connections": "200",
        "wal_level": "minimal", "max_wal_senders": "0", "shared_buffers": "64MB",
        "log_min_messages": "warning", "logging_collector": "off",
    }
    if not durable:
        settings.update({"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
    with open(server.datadir / "postgresql.conf", "a") as conf:
        conf.write("\n# acidorc tests\n" + "".join(f"{k} = {v}\n" for k, v in settings.items()))
    (server.datadir / "pg_hba.conf").write_text("host all all 127.0.0.1/32 trust\n")
    # The postmaster is our child, not a daemon (pg_ctl start): with a parent-death signal it
    # dies with the test run even when that is killed and never reaches the fixture's teardown.
    args = [str(bindir / "postgres"), "-D", str(server.datadir)]
    if shutil.which("setpriv"):
        ids = []
        if os.geteuid() == 0:
            info = pwd.getpwnam(OS_USER)
            ids = [f"--reuid={info.pw_uid}", f"--regid={info.pw_gid}", "--init-groups"]
        args = ["setpriv", *ids, "--pdeathsig", "KILL", "--", *args]
    else:
        args = _as_postgres(args)
    with open(server.log, "ab") as out:
        server.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          cwd=workdir)
    if os.geteuid() == 0:
        os.chown(server.log, pwd.getpwnam(OS_USER).pw_uid, pwd.getpwnam(OS_USER).pw_gid)
    try:
        wait_until(server.ready, timeout=60, what="PostgreSQL", alive=lambda: server.process.poll() is None,
                   log=str(server.log))
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def postgres_server():
    server = start_postgres_server()
    yield server
    server.stop()


@pytest.fixture
def pg_store_url(postgres_server):
    """The URL of a fresh, empty transaction store on the PostgreSQL server for one test (its
    own schema: :meth:`PostgresServer.create_store`; ``create_database`` for a whole database)."""
    url = postgres_server.create_store()
    yield url
    postgres_server.drop_store(url)


# --- the store backend a test runs on --------------------------------------------------------
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def store_backend(request) -> str:
    """Which transaction store a test runs on: every test that uses ``store_url`` (directly or
    through a suite's own fixture) runs once on SQLite and once on the real PostgreSQL server."""
    return request.param


@pytest.fixture
def store_url(store_backend, tmp_path, request) -> str:
    """A fresh, empty transaction store of the test's backend: a SQLite file in the test's
    directory, or a new database on the session's PostgreSQL server."""
    if store_backend == "sqlite":
        return f"sqlite:///{tmp_path / 'metastore.db'}"
    return request.getfixturevalue("pg_store_url")


#: For a test about SQLite itself (its file, WAL, pysqlite connections, in-memory databases):
#: ``@sqlite_only`` runs it on SQLite alone, where it would otherwise run on both backends.
sqlite_only = pytest.mark.parametrize("store_backend", ["sqlite"])
