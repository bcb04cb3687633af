"""Hive 4.1's own ACID reader, writer and metastore client, driven from Python through py4j.

Test support only: the "other party" of the Hive 4 interop tests.  One JVM runs Hive 4.1's jars
(``scripts/fetch-hive4`` puts them in ``.cache/hive4/lib``) plus ``Hive4Bridge.java`` (beside
this file, compiled with ``javac`` into a temp dir at start-up), which only moves values between
JSON and Hive's objects in bulk.  Everything ACID is Hive's:

* reads: ``OrcInputFormat.getSplits`` (``AcidUtils.getAcidState`` picks base / deltas by the
  snapshot, honouring ``_v<txn>`` visibility suffixes and ``_flush_length`` side files) and
  ``getRecordReader`` (``OrcRawRecordMerger`` applies delete events), row mode;
* writes: ``OrcOutputFormat.getRecordUpdater`` (``OrcRecordUpdater``: split-update, so an update
  is a delete event in ``delete_delta_W_W_S`` plus an insert in ``delta_W_W_S``);
* transactions, write ids, locks, heartbeats and snapshots: ``HiveMetaStoreClient`` against a
  real metastore, locks built with Hive's ``LockRequestBuilder`` / ``LockComponentBuilder`` the
  way ``DbTxnManager`` builds them.

Usage::

    with Hive4() as hive:                                   # one JVM, reusable
        cols = [("id", "int"), ("name", "string")]
        txns = hive.valid_txns(5, aborted=[3])              # Hive's ValidReadTxnList string
        wids = hive.valid_write_ids("db.t", 5, aborted=[3]) # Hive's ValidReaderWriteIdList
        rows = hive.read("/tmp/t", txns, wids, columns=cols)
        # [((writeId, bucketProperty, rowId), 1, "a"), ...]

        txn = hive.open_txn(uri)
        wid = hive.allocate_write_id(uri, txn, "db", "t")
        hive.write_insert(location, wid, [(1, "a")], cols)
        hive.commit_txn(uri, txn)
        got = hive.read_via_hms(uri, "db", "t")             # .rows, .valid_txns, .valid_write_ids

Values: ints, floats, str, bool, ``Decimal`` (decimal), ``datetime.date`` (date, proleptic
Gregorian as Hive 4 and ORC), naive ``datetime.datetime`` (timestamp, floored to microseconds on
the way back), ``bytes`` (binary), lists (array), dicts (map), tuples (struct).  ``char(n)``
comes back padded to ``n``.
"""

from __future__ import annotations

import base64
import collections
import datetime as _dt
import decimal
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from interop.hive_reader import parse_hive_type, stop_gateway

__all__ = ["Hive4", "Hive4Error", "HmsRead", "Lock", "Written", "default_lib_dir", "fetch_hive4"]

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_SOURCE = Path(__file__).with_name("Hive4Bridge.java")
LONG_MAX = (1 << 63) - 1

_JAVA_OPTS = [
    "-Duser.timezone=UTC",
    "-Dfile.encoding=UTF-8",
    "-XX:TieredStopAtLevel=1",  # faster start-up; our reads are small
    "-XX:+UseSerialGC",
    "-Xmx512m",
    "-Dlog4j2.level=ERROR",
    "-Dlog4j2.rootLevel=ERROR",
] + [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in ("java.lang", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
                "java.util.concurrent", "sun.nio.ch", "sun.security.action", "sun.util.calendar")
]

Columns = Sequence[tuple[str, str]]
RowId = tuple[int, int, int]


class Hive4Error(RuntimeError):
    """A failure on the Java side: the Java exception chain, then the tail of the JVM's output.
    ``java_class`` is the outermost Java exception's class."""

    def __init__(self, message: str, *, java_class: str = "", jvm_output: str = ""):
        super().__init__(message)
        self.java_class = java_class
        self.jvm_output = jvm_output


@dataclass(frozen=True)
class HmsRead:
    """What :meth:`Hive4.read_via_hms` read, and the snapshot it read at."""

    rows: list[tuple]
    valid_txns: str  # ValidReadTxnList.writeToString()
    valid_write_ids: str  # the table's ValidReaderWriteIdList.writeToString()
    location: str
    columns: list[tuple[str, str]]
    partition_columns: list[tuple[str, str]]


@dataclass(frozen=True)
class Lock:
    id: int
    state: str  # LockState: ACQUIRED, WAITING, ...


@dataclass(frozen=True)
class Written:
    """Files one OrcRecordUpdater left (a path is ``None`` when Hive wrote no such file)."""

    insert_file: str | None
    delete_file: str | None
    bucket_property: int  # BucketCodec.V1 value of the new rows' ROW__ID
    row_ids: list[RowId]  # ROW__IDs of the inserted rows (new versions of updated rows), in order


def default_lib_dir() -> Path:
    return Path(os.environ.get("ACIDORC_HIVE4_HOME", ROOT / ".cache" / "hive4")) / "lib"


def fetch_hive4() -> Path:
    """Run ``scripts/fetch-hive4`` (idempotent) and return the lib dir; RuntimeError with the
    script's output when it fails."""
    proc = subprocess.run([str(ROOT / "scripts" / "fetch-hive4")], capture_output=True, text=True)
    lib = default_lib_dir()
    if proc.returncode != 0 or not (lib / "hive-exec-4.1.0.jar").is_file():
        raise RuntimeError("Hive 4's jars are missing and scripts/fetch-hive4 could not fetch them "
                           f"(exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return lib


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

_TS = re.compile(r"^(-?\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")


def _to_json(t: tuple, v: Any) -> Any:
    if v is None:
        return None
    k = t[0]
    if k == "decimal":
        return str(v)
    if k == "date":
        return v.isoformat()
    if k == "timestamp":
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if k == "binary":
        return base64.b64encode(bytes(v)).decode("ascii")
    if k == "array":
        return [_to_json(t[1], x) for x in v]
    if k == "map":
        return [[_to_json(t[1], key), _to_json(t[2], val)] for key, val in v.items()]
    if k == "struct":
        return [_to_json(ft, x) for (_, ft), x in zip(t[1], v)]
    if k in ("float", "double"):
        return float(v)
    return v


def _from_json(t: tuple, v: Any) -> Any:
    if v is None:
        return None
    k = t[0]
    if k in ("float", "double"):
        return float(v)  # also "NaN" / "Infinity"
    if k == "decimal":
        return decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-t[2]))
    if k == "date":
        return _dt.date.fromisoformat(v)
    if k == "timestamp":
        m = _TS.match(v)
        if not m:
            raise ValueError(f"unexpected timestamp text from Hive: {v!r}")
        y, mo, d, hh, mi, ss = (int(g) for g in m.groups()[:6])
        return _dt.datetime(y, mo, d, hh, mi, ss, int((m.group(7) or "0").ljust(9, "0")[:6]))
    if k == "binary":
        return base64.b64decode(v)
    if k == "array":
        return [_from_json(t[1], x) for x in v]
    if k == "map":
        return {_from_json(t[1], key): _from_json(t[2], val) for key, val in v}
    if k == "struct":
        return tuple(_from_json(ft, x) for (_, ft), x in zip(t[1], v))
    return v


def _uri(location: str | os.PathLike) -> str:
    text = str(location)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", text):
        return text
    return "file://" + os.path.abspath(text)


def _local(location: str) -> str:
    """The local path of a ``file:`` URI (other strings as they are)."""
    parsed = urllib.parse.urlparse(location)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(x) for x in sorted(set(values)))


# --------------------------------------------------------------------------------------------
# the JVM
# --------------------------------------------------------------------------------------------

class Hive4:
    """One JVM with Hive 4.1's classes; reuse it for many calls and ``close()`` it.

    :param lib_dir: Hive 4's jars (default ``.cache/hive4/lib``, see :func:`fetch_hive4`).
    :param work_dir: where ``Hive4Bridge.java`` is compiled (default: a fresh temp dir).
    Attributes ``compile_seconds`` and ``startup_seconds`` (the JVM and gateway) say what the
    start cost.
    """

    def __init__(self, lib_dir: str | os.PathLike | None = None, *, java: str | None = None,
                 work_dir: str | os.PathLike | None = None):
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        lib = Path(lib_dir) if lib_dir else default_lib_dir()
        if not (lib / "hive-exec-4.1.0.jar").is_file():
            raise FileNotFoundError(f"no Hive 4.1 jars in {lib}: run scripts/fetch-hive4")
        home = os.environ.get("JAVA_HOME")
        java = java or (os.path.join(home, "bin", "java") if home else "java")
        javac = os.path.join(os.path.dirname(java), "javac") if os.path.dirname(java) else "javac"
        self._tmp = None if work_dir else tempfile.TemporaryDirectory(prefix="hive4-bridge-")
        classes = Path(work_dir or self._tmp.name)  # type: ignore[union-attr]
        classes.mkdir(parents=True, exist_ok=True)
        classpath = os.pathsep.join([str(lib / "*"), str(classes)])
        t0 = time.monotonic()
        proc = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", str(lib / "*"), str(BRIDGE_SOURCE)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"javac {BRIDGE_SOURCE.name} failed:\n{proc.stdout}{proc.stderr}")
        self.compile_seconds = time.monotonic() - t0
        self._jvm_output: collections.deque[str] = collections.deque(maxlen=200)
        self._clients: dict[str, Any] = {}
        t0 = time.monotonic()
        port, self._proc = launch_gateway(
            classpath=classpath, java_path=java, javaopts=list(_JAVA_OPTS), die_on_exit=True,
            redirect_stdout=self._jvm_output, redirect_stderr=self._jvm_output, return_proc=True)
        self._gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=False))
        self._jvm = self._gateway.jvm
        self._bridge = self._jvm.Hive4Bridge
        self._bridge.jobConf("{}")  # loads Hadoop's and Jackson's classes: fail here, not later
        self.startup_seconds = time.monotonic() - t0

    def __enter__(self) -> "Hive4":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the metastore clients and shut the JVM down (idempotent)."""
        gateway, proc = getattr(self, "_gateway", None), getattr(self, "_proc", None)
        self._gateway = self._proc = None
        for client in self.__dict__.pop("_clients", {}).values():
            try:
                client.close()
            except Exception:
                pass
        stop_gateway(gateway, proc)
        if getattr(self, "_tmp", None) is not None:
            self._tmp.cleanup()  # type: ignore[union-attr]
            self._tmp = None

    @property
    def jvm(self):
        """py4j's view of the JVM, for calls this class does not wrap."""
        return self._jvm

    def _call(self, what: str, fn, *args):
        from py4j.protocol import Py4JError, Py4JJavaError

        if self._gateway is None:
            raise RuntimeError("Hive4 is closed")
        self._jvm_output.clear()
        try:
            return fn(*args)
        except Py4JJavaError as e:
            chain: list[str] = []
            cur = e.java_exception
            while cur is not None and len(chain) < 10:
                chain.append(cur.toString())
                nxt = cur.getCause()
                cur = None if nxt is None or nxt.equals(cur) else nxt
            out = "\n".join(x.rstrip() for x in list(self._jvm_output)[-30:] if x.strip())
            raise Hive4Error(f"Hive 4 failed: {what}: " + "\n  caused by: ".join(chain)
                             + (f"\n--- JVM output (tail) ---\n{out}" if out else ""),
                             java_class=e.java_exception.getClass().getName(), jvm_output=out) from None
        except Py4JError as e:
            raise Hive4Error(f"py4j failure: {what}: {e}") from None

    # -- snapshot strings ------------------------------------------------------------------------

    def valid_txns(self, high_watermark: int, *, open: Iterable[int] = (), aborted: Iterable[int] = ()) -> str:
        """Hive 4's ``ValidReadTxnList`` string (``hwm:minOpen:open,...:aborted,...``), as Hive
        parses and writes it back."""
        open_ = sorted(set(open))
        min_open = open_[0] if open_ else LONG_MAX
        text = f"{high_watermark}:{min_open}:{_ids(open_)}:{_ids(aborted)}"
        lst = self._jvm.org.apache.hadoop.hive.common.ValidReadTxnList()
        self._call("ValidReadTxnList", lst.readFromString, text)
        return lst.writeToString()

    def valid_write_ids(self, table: str, high_watermark: int, *, open: Iterable[int] = (),
                        aborted: Iterable[int] = ()) -> str:
        """Hive 4's ``ValidReaderWriteIdList`` string for ``table`` (``"db.table"``), as Hive
        parses and writes it back."""
        open_ = sorted(set(open))
        min_open = open_[0] if open_ else LONG_MAX
        text = f"{table}:{high_watermark}:{min_open}:{_ids(open_)}:{_ids(aborted)}"
        lst = self._jvm.org.apache.hadoop.hive.common.ValidReaderWriteIdList()
        self._call("ValidReaderWriteIdList", lst.readFromString, text)
        return lst.writeToString()

    # -- reading ---------------------------------------------------------------------------------

    @staticmethod
    def job_conf(location: str, columns: Columns, valid_txns: str, valid_write_ids: str,
                 bucket_count: int = -1) -> dict[str, str]:
        """The JobConf entries of a Hive 4 ACID scan of one (partition) directory: the table's
        properties (as HiveInputFormat copies them in) and the planner's scan properties."""
        names = ",".join(n for n, _ in columns)
        types = ",".join(t for _, t in columns)
        return {
            "transactional": "true",
            "transactional_properties": "default",
            "hive.txn.operational.properties": "1",  # split-update
            "bucket_count": str(bucket_count),
            "columns": names,
            "columns.types": types,
            "schema.evolution.columns": names,
            "schema.evolution.columns.types": types,
            "hive.transactional.table.scan": "true",
            "hive.txn.valid.txns": valid_txns,  # ValidTxnList.VALID_TXNS_KEY
            "hive.txn.valid.writeids": valid_write_ids,  # ValidWriteIdList.VALID_WRITEIDS_KEY
            "hive.io.file.readcolumn.ids": ",".join(str(i) for i in range(len(columns))),
            "hive.io.file.readcolumn.names": names,
            "hive.io.file.read.all.columns": "true",
            "hive.vectorized.execution.enabled": "false",  # row mode: OrcRawRecordMerger
            "mapred.input.dir": location.replace(",", "\\,"),
            "hive.orc.cache.stripe.details.mem.size": "0",  # no footer cache across reads
            "hive.orc.splits.include.fileid": "false",
        }

    def read(self, location: str | os.PathLike, valid_txns: str, valid_write_ids: str, *, columns: Columns,
             partition_columns: Columns = (), bucket_count: int = -1,
             conf: dict[str, str] | None = None) -> list[tuple]:
        """Read a table the way Hive 4 does, at the snapshot the two strings give.

        :param location: the table's (or one partition's) directory, a path or URI.
        :param valid_txns: Hive's ``ValidReadTxnList`` string (:meth:`valid_txns`).
        :param valid_write_ids: the table's ``ValidReaderWriteIdList`` string (:meth:`valid_write_ids`).
        :param columns: ``(name, hive type)`` of each data column, in order.
        :param partition_columns: for a partitioned table read from its root: each
            ``k=v/...`` directory is read on its own and its values (unescaped by Hive's
            ``FileUtils``, as text) are appended to its rows.
        :param conf: extra JobConf entries, applied last.
        :returns: ``((writeId, bucketProperty, rowId), col, ..., [partition values])`` per row,
            in Hive's order.
        """
        types = [parse_hive_type(t) for _, t in columns]
        root = _uri(location)
        dirs: list[tuple[str, tuple]] = [(root, ())]
        if partition_columns:
            dirs = [(root.rstrip("/") + "/" + rel, values)
                    for rel, values in self._partition_dirs(_local(root), len(partition_columns))]
        row_type = "struct<" + ",".join(f"{n}:{t}" for n, t in columns) + ">"
        rows: list[tuple] = []
        for uri, values in dirs:
            entries = self.job_conf(uri, columns, valid_txns, valid_write_ids, bucket_count)
            entries.update(conf or {})
            job = self._call("JobConf", self._bridge.jobConf, json.dumps(entries))
            data = json.loads(self._call(f"reading {uri}", self._bridge.read, job, row_type))
            rows.extend((tuple(rid),) + tuple(_from_json(t, v) for t, v in zip(types, vals)) + values
                        for rid, vals in data)
        return rows

    def _partition_dirs(self, root: str, depth: int) -> list[tuple[str, tuple]]:
        unescape = self._jvm.org.apache.hadoop.hive.common.FileUtils.unescapePathName
        found: list[tuple[str, tuple]] = [("", ())]
        for _ in range(depth):
            found = [(f"{rel}/{name}".lstrip("/"), values + (unescape(name.split("=", 1)[1]),))
                     for rel, values in found
                     for name in sorted(os.listdir(os.path.join(root, rel)))
                     if "=" in name and os.path.isdir(os.path.join(root, rel, name))]
        return found

    # -- the metastore ---------------------------------------------------------------------------

    def client(self, uri: str):
        """Hive's ``HiveMetaStoreClient`` for ``uri`` (one per uri, kept open)."""
        if uri not in self._clients:
            conf = self._jvm.org.apache.hadoop.hive.conf.HiveConf()
            conf.set("hive.metastore.uris", uri)
            conf.set("metastore.thrift.uris", uri)
            conf.set("hive.txn.manager", "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager")
            conf.set("hive.support.concurrency", "true")
            self._clients[uri] = self._call(f"connecting to {uri}",
                                            self._jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient, conf)
        return self._clients[uri]

    def create_table(self, uri: str, db: str, table: str, columns: Columns, *, partition_columns: Columns = (),
                     location: str | None = None) -> str:
        """Create a managed ACID (``transactional=true``, split-update) ORC table through Hive's
        client, creating ``db`` first when missing; returns the table's ``sd.location``."""
        jvm, api = self._jvm, self._jvm.org.apache.hadoop.hive.metastore.api
        client = self.client(uri)
        try:
            client.getDatabase(db)
        except Exception:
            database = api.Database()
            database.setName(db)
            self._call(f"creating database {db}", client.createDatabase, database)

        def fields(cols: Columns):
            out = jvm.java.util.ArrayList()
            for name, type_ in cols:
                out.add(api.FieldSchema(name, type_, None))
            return out

        serde = api.SerDeInfo()
        serde.setSerializationLib("org.apache.hadoop.hive.ql.io.orc.OrcSerde")
        sd = api.StorageDescriptor()
        sd.setCols(fields(columns))
        sd.setInputFormat("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat")
        sd.setOutputFormat("org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat")
        sd.setSerdeInfo(serde)
        sd.setNumBuckets(-1)
        if location:
            sd.setLocation(_uri(location))
        t = api.Table()
        t.setDbName(db)
        t.setTableName(table)
        t.setTableType("MANAGED_TABLE")
        t.setSd(sd)
        t.setPartitionKeys(fields(partition_columns))
        params = jvm.java.util.HashMap()
        params.put("transactional", "true")
        params.put("transactional_properties", "default")
        t.setParameters(params)
        self._call(f"creating table {db}.{table}", client.createTable, t)
        return client.getTable(db, table).getSd().getLocation()

    def add_partition(self, uri: str, db: str, table: str, values: Sequence[str]) -> str:
        """Add a partition (values in partition-key order) with Hive's default location; returns
        its ``sd.location``."""
        client = self.client(uri)
        values_list = self._jvm.java.util.ArrayList()
        for v in values:
            values_list.add(v)
        part = self._call(f"adding a partition to {db}.{table}", client.appendPartition, db, table, values_list)
        return part.getSd().getLocation()

    def open_txn(self, uri: str, user: str = "acidorc-test") -> int:
        return int(self._call("openTxn", self.client(uri).openTxn, user))

    def allocate_write_id(self, uri: str, txn: int, db: str, table: str) -> int:
        return int(self._call("allocateTableWriteId", self.client(uri).allocateTableWriteId, txn, db, table))

    def commit_txn(self, uri: str, txn: int, *, excl_write_enabled: bool = True) -> None:
        """Commit ``txn``. ``excl_write_enabled=False`` commits as Hive's ``DbTxnManager`` does
        with ``hive.txn.xlock.write=false`` (UPDATE / DELETE then take shared-write locks): the
        ``CommitTxnRequest`` asks the HMS for its write-set check, which aborts the transaction
        (``TxnAbortedException``, "write conflict") when an overlapping committed transaction
        updated or deleted in the same table / partition. The default, as the plain
        ``commitTxn(txnid)`` and Hive's default ``hive.txn.xlock.write=true``, skips that check
        (exclusive-write locks keep conflicting writers apart instead)."""
        client = self.client(uri)
        if excl_write_enabled:
            self._call(f"commitTxn {txn}", client.commitTxn, txn)
            return
        request = self._jvm.org.apache.hadoop.hive.metastore.api.CommitTxnRequest(txn)
        request.setExclWriteEnabled(False)
        self._call(f"commitTxn {txn} (write-set check)", client.commitTxn, request)

    def abort_txn(self, uri: str, txn: int) -> None:
        self._call(f"rollbackTxn {txn}", self.client(uri).rollbackTxn, txn)

    def heartbeat(self, uri: str, txn: int, lock_id: int = 0) -> None:
        self._call(f"heartbeat {txn}", self.client(uri).heartbeat, txn, lock_id)

    def lock(self, uri: str, txn: int, db: str, table: str, *, partition: str | None = None,
             kind: str = "shared_write", operation: str = "UPDATE", user: str = "acidorc-test") -> Lock:
        """Request a lock as ``DbTxnManager`` does for an UPDATE / DELETE / INSERT of an ACID table:
        one component (``kind``: shared_write, exclusive, excl_write or shared_read) on the table
        or one ``partition`` (``"k=v/..."``), ``isTransactional``, with the ``operation``
        (``DataOperationType``). Does not wait: ``state`` may be WAITING (see :meth:`check_lock`)."""
        jvm = self._jvm
        txn_mod = jvm.org.apache.hadoop.hive.metastore
        component = txn_mod.LockComponentBuilder().setDbName(db).setTableName(table)
        if partition:
            component = component.setPartitionName(partition)
        setter = {"shared_write": "setSharedWrite", "exclusive": "setExclusive", "excl_write": "setExclWrite",
                  "shared_read": "setSharedRead"}[kind]
        component = getattr(component, setter)()
        component = component.setOperationType(getattr(txn_mod.api.DataOperationType, operation.upper()))
        component = component.setIsTransactional(True).build()
        request = (txn_mod.LockRequestBuilder("acidorc-hive4-test").setTransactionId(txn).setUser(user)
                   .addLockComponent(component).build())
        response = self._call(f"lock {db}.{table}", self.client(uri).lock, request)
        return Lock(int(response.getLockid()), response.getState().toString())

    def check_lock(self, uri: str, lock_id: int) -> Lock:
        response = self._call(f"checkLock {lock_id}", self.client(uri).checkLock, lock_id)
        return Lock(int(response.getLockid()), response.getState().toString())

    def snapshot(self, uri: str, db: str, table: str, txn: int | None = None) -> tuple[str, str]:
        """``(valid_txns, valid_write_ids)`` as Hive's driver takes them: ``getValidTxns(txn)``
        (``getValidTxns()`` without a txn), then ``getValidWriteIds([db.table], validTxns)``."""
        client = self.client(uri)
        full = f"{db}.{table}"
        txns = self._call("getValidTxns", client.getValidTxns, txn) if txn is not None else \
            self._call("getValidTxns", client.getValidTxns)
        tables = self._jvm.java.util.ArrayList()
        tables.add(full)
        valid = self._call("getValidWriteIds", client.getValidWriteIds, tables, txns.writeToString())
        utils = self._jvm.org.apache.hadoop.hive.metastore.txn.TxnCommonUtils
        write_ids = utils.createValidTxnWriteIdList(txn if txn is not None else txns.getHighWatermark(), valid)
        return txns.writeToString(), write_ids.getTableValidWriteIdList(full).writeToString()

    def read_via_hms(self, uri: str, db: str, table: str) -> HmsRead:
        """Read ``db.table`` the way a Hive 4 query does: open a (read) txn, take the snapshot
        through Hive's client (:meth:`snapshot`), resolve the location and columns from the
        metastore's table (and partitions), read, and commit the read txn."""
        client = self.client(uri)
        t = self._call(f"getTable {db}.{table}", client.getTable, db, table)
        columns = [(f.getName(), f.getType()) for f in t.getSd().getCols()]
        part_cols = [(f.getName(), f.getType()) for f in t.getPartitionKeys()]
        location = t.getSd().getLocation()
        txn = self.open_txn(uri)
        try:
            valid_txns, valid_write_ids = self.snapshot(uri, db, table, txn)
            rows: list[tuple] = []
            if part_cols:
                parts = self._call("listPartitions", client.listPartitions, db, table, -1)
                for p in sorted(parts, key=lambda p: list(p.getValues())):
                    values = tuple(p.getValues())
                    rows.extend(r + values for r in self.read(p.getSd().getLocation(), valid_txns, valid_write_ids,
                                                              columns=columns))
            else:
                rows = self.read(location, valid_txns, valid_write_ids, columns=columns)
        finally:
            self.commit_txn(uri, txn)
        return HmsRead(rows, valid_txns, valid_write_ids, location, columns, part_cols)

    # -- writing ---------------------------------------------------------------------------------

    def _write(self, location: str | os.PathLike, write_id: int, events: list, columns: Columns, bucket: int,
               statement_id: int) -> Written:
        names = ",".join(n for n, _ in columns)
        types = ",".join(t for _, t in columns)
        job = self._call("JobConf", self._bridge.jobConf, json.dumps({
            "hive.txn.operational.properties": "1", "transactional": "true",
            "transactional_properties": "default"}))
        out = json.loads(self._call(f"writing {location}", self._bridge.write, _uri(location), job, names, types,
                                    write_id, bucket, statement_id, json.dumps(events)))
        inserts = sum(1 for op, _, _ in events if op in ("insert", "update"))

        def existing(path: str) -> str | None:
            return path if os.path.exists(_local(path)) else None

        prop = int(out["bucket_property"])
        return Written(existing(out["insert_file"]), existing(out["delete_file"]), prop,
                       [(write_id, prop, i) for i in range(inserts)])

    def write_insert(self, location: str | os.PathLike, write_id: int, rows: Iterable[Sequence], columns: Columns,
                     *, bucket: int = 0, statement_id: int = 0) -> Written:
        """Insert events for ``rows`` (tuples in ``columns`` order) into
        ``delta_W_W_S/bucket_B`` of ``location`` (a table or partition directory) with one
        ``OrcRecordUpdater`` (writingBase false, minimum = maximum write id = ``write_id``)."""
        types = [parse_hive_type(t) for _, t in columns]
        events = [["insert", None, [_to_json(t, v) for t, v in zip(types, row)]] for row in rows]
        return self._write(location, write_id, events, columns, bucket, statement_id)

    def write_update(self, location: str | os.PathLike, write_id: int, updates: Iterable[tuple[RowId, Sequence]],
                     columns: Columns, *, bucket: int | None = None, statement_id: int = 0) -> list[Written]:
        """``RecordUpdater.update`` for each ``(ROW__ID, new row)``: Hive's split-update writes a
        delete event of the ROW__ID to ``delete_delta_W_W_S`` and the new row as an insert to
        ``delta_W_W_S``.  Like Hive's FileSinkOperator, one updater per bucket (writer id) of
        the ROW__IDs, unless ``bucket`` is given."""
        types = [parse_hive_type(t) for _, t in columns]
        events = [["update", list(rid), [_to_json(t, v) for t, v in zip(types, row)]] for rid, row in updates]
        return self._by_bucket(location, write_id, events, columns, bucket, statement_id)

    def write_delete(self, location: str | os.PathLike, write_id: int, row_ids: Iterable[RowId], columns: Columns,
                     *, bucket: int | None = None, statement_id: int = 0) -> list[Written]:
        """``RecordUpdater.delete`` of each ROW__ID: delete events in ``delete_delta_W_W_S``, one
        updater per bucket of the ROW__IDs unless ``bucket`` is given."""
        events = [["delete", list(rid), None] for rid in row_ids]
        return self._by_bucket(location, write_id, events, columns, bucket, statement_id)

    def _by_bucket(self, location, write_id, events, columns, bucket, statement_id) -> list[Written]:
        groups: dict[int, list] = {}
        for event in events:
            b = bucket if bucket is not None else (event[1][1] >> 16) & 0xFFF  # BucketCodec V1
            groups.setdefault(b, []).append(event)
        return [self._write(location, write_id, evs, columns, b, statement_id) for b, evs in sorted(groups.items())]
