"""A real Hive 4.1 standalone metastore (HMS) for the tests: Hive's own ``HiveMetaStore`` server
(hive-exec 4.1.0's classes, from ``scripts/fetch-hive4``) on loopback, over an embedded Derby
database, with DbTxnManager's transactions and the ACID housekeeper (which aborts a transaction
whose client stopped heartbeating) but no compactor (acidorc compacts on its own).

The Derby schema is made by Hive's schema tool (``MetastoreSchemaTool -initSchemaTo 4.0.0``,
Hive's own scripts: Maven Central's newest are 4.0.0's) once per machine, into the Hive 4 cache
next to the jars (``.cache/hive4/derby-schema-*``, ~7 MB, ~10 s), and copied for each server; the
4.1 server runs on that 4.0.0 schema with ``metastore.schema.verification=false``.

``hive_metastore`` (session) starts a server on first use (~7 s), with a transaction timeout of
300 s that no ordinary test comes near; ``hive_metastore_short_timeout`` (session) is a second
server whose transactions time out after 6 s (the timeout is the server's, one for all its
transactions), for tests of a writer that dies silently. ``server.client()`` is a connected
thrift client (pymetastore's Hive 3.1 bindings). The servers are the run's children with a
parent-death signal and are killed (SIGKILL: they keep no state worth keeping) when the run ends.
A missing Java, Maven or Hive 4 fails the tests that need it; they never skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from xml.sax.saxutils import escape

import pytest

from .jvm import QUICK_JVM_FLAGS
from .ports import _tail, free_ports, wait_until

ROOT = Path(__file__).resolve().parents[2]
FETCH = ROOT / "scripts" / "fetch-hive4"
SCHEMA_VERSION = "4.0.0"  # the newest Derby schema scripts on Maven Central (4.0.1's distribution)
DEFAULT_TXN_TIMEOUT = 300.0
SHORT_TXN_TIMEOUT = 6.0
SERVER_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL_CLASS = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"
#: Of Hive 4.1's ``metastore.task.threads.remote`` (the housekeeping threads) only the one that
#: times transactions out: the default list also names Iceberg's housekeeper, absent from these
#: jars, whose ClassNotFoundException stops all of them, and the cleaners would drop aborted and
#: committed transactions behind a test's back.
HOUSEKEEPING_TASKS = ("org.apache.hadoop.hive.metastore.txn.service.AcidHouseKeeperService",)
# C1 only, the serial GC (tests/servers/jvm.py)
JVM_FLAGS = [*QUICK_JVM_FLAGS, "-Xss2m"]

LOG4J2 = """\
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.dn.name = DataNucleus
logger.dn.level = WARN
logger.audit.name = org.apache.hadoop.hive.metastore.HiveMetaStore.audit
logger.audit.level = WARN
"""


def java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME", "").strip()
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise RuntimeError("the Hive Metastore tests need Java 17 or newer: install a JDK "
                           "(apt-get install openjdk-17-jdk-headless) or set JAVA_HOME")
    return java


def hive4_home() -> Path:
    """Hive 4's cache (``lib/`` jars, ``scripts/`` Derby schema scripts), fetched by
    ``scripts/fetch-hive4`` if it is not there yet (the script does nothing when it is)."""
    done = subprocess.run([str(FETCH)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the Hive Metastore tests need Hive 4, which {FETCH.relative_to(ROOT)} fetches "
                           f"from Maven Central (needs Maven: apt-get install maven); it failed "
                           f"({done.returncode}):\n{done.stderr or done.stdout}")
    home = Path(os.environ.get("ACIDORC_HIVE4_HOME", ROOT / ".cache" / "hive4"))
    if not (home / ".fetched").exists() or not any((home / "lib").glob("hive-exec-4.*.jar")):
        raise RuntimeError(f"{FETCH.relative_to(ROOT)} ran but {home} holds no Hive 4 (no lib/hive-exec-4.*.jar)")
    return home


def _site_xml(settings: dict[str, str]) -> str:
    rows = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in settings.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def _derby_settings(db: Path) -> dict[str, str]:
    return {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:{db};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "javax.jdo.option.ConnectionUserName": "APP",
        "javax.jdo.option.ConnectionPassword": "mine",
    }


def _write_conf(conf: Path, settings: dict[str, str]) -> None:
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "metastore-site.xml").write_text(_site_xml(settings))
    (conf / "log4j2.properties").write_text(LOG4J2)


def _java_command(home: Path, conf: Path, main: str, *args: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [java_binary(), *JVM_FLAGS, *extra, f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}",
            f"-Dderby.stream.error.file={conf.parent / 'derby.log'}",
            "-cp", f"{conf}{os.pathsep}{home / 'lib'}/*", main, *args]


def derby_schema(home: Path) -> Path:
    """A Derby ``metastore_db`` with Hive's metastore schema, made once per fetch of Hive 4 by
    Hive's schema tool and kept in the cache (a re-fetch removes it with the rest). Several
    test runs at once: the first makes it under a lock, the others wait for it."""
    stamp = (home / ".fetched").read_text().strip()[:12]
    target = home / f"derby-schema-{SCHEMA_VERSION}-{stamp}"
    if (target / "metastore_db").is_dir():
        return target / "metastore_db"
    with open(home / ".derby-schema.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "metastore_db").is_dir():
            return target / "metastore_db"
        work = Path(tempfile.mkdtemp(prefix=".derby-schema-", dir=home))
        try:
            _write_conf(work / "conf", _derby_settings(work / "metastore_db"))
            # the tool finds Hive's scripts under $METASTORE_HOME/scripts/metastore/upgrade/derby
            done = subprocess.run(_java_command(home, work / "conf", SCHEMA_TOOL_CLASS, "-dbType", "derby",
                                                "-initSchemaTo", SCHEMA_VERSION),
                                  env={**os.environ, "METASTORE_HOME": str(home)}, cwd=work,
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0 or not (work / "metastore_db").is_dir():
                out = (done.stdout + done.stderr).splitlines()
                raise RuntimeError(f"Hive's schema tool ({SCHEMA_TOOL_CLASS} -initSchemaTo {SCHEMA_VERSION}) failed "
                                   f"({done.returncode}):\n" + "\n".join(out[-40:]))
            shutil.rmtree(work / "conf")
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target / "metastore_db"


@dataclass
class HiveMetastore:
    """A running Hive 4.1 metastore: ``uri`` for acidorc (``metastoreUrl``), ``client()`` for a
    test's own thrift calls."""

    workdir: Path
    port: int
    lib_dir: Path
    txn_timeout_seconds: float
    housekeeper_interval_seconds: float
    process: subprocess.Popen | None = None
    host: str = "127.0.0.1"

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    @property
    def warehouse(self) -> Path:
        """The managed tables' warehouse (``metastore.warehouse.dir``), a local directory."""
        return self.workdir / "warehouse"

    @property
    def external_warehouse(self) -> Path:
        return self.workdir / "warehouse-external"

    @property
    def log(self) -> Path:
        return self.workdir / "server.log"

    @contextlib.contextmanager
    def client(self, timeout: float = 60.0) -> Iterator:
        """A connected ``ThriftHiveMetastore.Client`` (pymetastore's bindings; TSocket, buffered
        transport, binary protocol), closed on exit."""
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        sock = TSocket.TSocket(self.host, self.port)
        sock.setTimeout(timeout * 1000)
        transport = TTransport.TBufferedTransport(sock)
        transport.open()
        try:
            yield ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
        finally:
            transport.close()

    def database(self, name: str) -> str:
        """Database ``name`` (created in the warehouse unless it exists); returns the name."""
        from pymetastore.hive_metastore.ttypes import AlreadyExistsException, Database

        with self.client() as client:
            try:
                client.create_database(Database(name=name, locationUri=(self.warehouse / f"{name}.db").as_uri(),
                                                parameters={}))
            except AlreadyExistsException:
                pass
        return name

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        """The server answers a thrift call (not merely an open port)."""
        try:  # the port first: thrift logs every refused connection
            socket.create_connection((self.host, self.port), timeout=1).close()
        except OSError:
            return False
        try:
            with self.client(timeout=5) as c:
                c.get_config_value("metastore.txn.timeout", "")
            return True
        except Exception:  # noqa: BLE001 - not up yet: connection refused, reset, ...
            return False

    def log_tail(self, lines: int = 40) -> str:
        return _tail(str(self.log), lines)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _seconds(value: float) -> str:
    return f"{int(value * 1000)}ms"


def start_hive_metastore(workdir: Path | None = None, *, txn_timeout_seconds: float = DEFAULT_TXN_TIMEOUT,
                         housekeeper_interval_seconds: float | None = None,
                         start_timeout: float = 120) -> HiveMetastore:
    """Start a Hive 4.1 metastore on a fresh copy of the Derby schema. Transactions that no
    client heartbeats for ``txn_timeout_seconds`` are aborted by the ACID housekeeper, which
    runs every ``housekeeper_interval_seconds`` (default: a sixth of the timeout, 0.5 s to 10 s)."""
    home = hive4_home()
    schema = derby_schema(home)
    interval = housekeeper_interval_seconds or min(10.0, max(0.5, txn_timeout_seconds / 6))
    workdir = Path(workdir or tempfile.mkdtemp(prefix="acidorc-hms-"))
    workdir.mkdir(parents=True, exist_ok=True)
    server = HiveMetastore(workdir, free_ports(1)[0], home / "lib", txn_timeout_seconds, interval)
    try:
        shutil.copytree(schema, workdir / "metastore_db")
        server.warehouse.mkdir()
        server.external_warehouse.mkdir()
        _write_conf(server.conf_dir, {
            "metastore.thrift.port": str(server.port),
            "metastore.thrift.bind.host": server.host,
            **_derby_settings(workdir / "metastore_db"),
            "metastore.warehouse.dir": server.warehouse.as_uri(),
            "metastore.warehouse.external.dir": server.external_warehouse.as_uri(),
            # the 4.0.0 schema of Hive's newest published scripts under the 4.1 server
            "metastore.schema.verification": "false",
            "hive.support.concurrency": "true",
            "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
            "metastore.compactor.initiator.on": "false",
            "metastore.compactor.cleaner.on": "false",
            "metastore.compactor.worker.threads": "0",
            "metastore.housekeeping.threads.on": "true",
            "metastore.task.threads.remote": ",".join(HOUSEKEEPING_TASKS),
            "metastore.acid.housekeeper.interval": _seconds(interval),
            "metastore.txn.timeout": _seconds(txn_timeout_seconds),
            "metastore.event.db.notification.api.auth": "false",
            "hive.metastore.event.db.notification.api.auth": "false",
            "metastore.metrics.enabled": "false",
            # no transformer: without one, Hive's default refuses an ACID table from a client
            # that declares no capabilities ("Processor has no capabilities")
            "metastore.metadata.transformer.class": " ",
        })
        args = _java_command(home, server.conf_dir, SERVER_CLASS,
                             extra=("-Xmx512m", "-Dderby.language.sequence.preallocator=1",
                                    # a lock wait in the embedded Derby fails (Hive retries) instead of hanging
                                    "-Dderby.locks.waitTimeout=20", "-Dderby.locks.deadlockTimeout=5"))
        if shutil.which("setpriv"):  # dies with the test run, even a killed one
            args = ["setpriv", "--pdeathsig", "KILL", "--", *args]
        with open(server.log, "wb") as out:
            server.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              cwd=workdir)
        wait_until(server.ready, timeout=start_timeout, what=f"the Hive 4.1 metastore ({SERVER_CLASS})",
                   alive=server.alive, log=str(server.log))
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def hive_metastore():
    """The session's Hive 4.1 metastore: transactions time out after 300 s."""
    server = start_hive_metastore()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hive_metastore_short_timeout():
    """A second Hive 4.1 metastore whose transactions time out after 6 s (its housekeeper runs
    every second): for a writer that stops heartbeating. A test that must keep a transaction
    open on it heartbeats (or takes ``hive_metastore``)."""
    server = start_hive_metastore(txn_timeout_seconds=SHORT_TXN_TIMEOUT)
    yield server
    server.stop()


def wait_for(condition, *, timeout: float, what: str, interval: float = 0.2):
    """Poll ``condition()`` until it returns something truthy (returned); fail after ``timeout``
    seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(interval)
