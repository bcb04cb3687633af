"""The transaction store: tables, transactions, write ids and snapshots, in one SQL database.

It is the single source of truth for which write ids are committed. Every state change is one
database transaction (on SQLite begun with ``BEGIN IMMEDIATE``, so read-modify-write sequences
are serialized across processes), which makes each call atomic: another process sees a commit
entirely or not at all. Calls that fail on lock contention are run again, a bounded number of
times, with exponential backoff.
"""

from __future__ import annotations

import json
import operator
import os
import random
import socket
import threading
import time
from typing import Callable, Iterable, Mapping

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy import and_, delete, insert, or_, select, update

from ..errors import (
    AcidError,
    ConflictError,
    InvalidOptionError,
    MetastoreError,
    NoSuchTableError,
    TableExistsError,
    TransactionStateError,
)
from ..layout.writeids import LONG_MAX, ValidTxnList, ValidWriteIdList
from . import engine as _engine
from .schema import SCHEMA_VERSION, SEQUENCES, meta, metadata, sequences, tables, txn_components, txn_write_ids, txns
from .tableinfo import (
    TableInfo,
    deserialize_schema,
    normalize_location,
    normalize_name,
    serialize_schema,
    table_properties,
    validate_layout,
)

OPEN, COMMITTED, ABORTED = "open", "committed", "aborted"
TXN_STATES = (OPEN, COMMITTED, ABORTED)

#: What a commit did; the conflict rules depend on it (DESIGN.md, "Concurrency rules").
OPERATIONS = ("insert", "insert_overwrite", "update", "delete", "merge", "compaction")
#: Operations that fail when a data object they touched changed after they started.
CONFLICT_CHECKED = frozenset({"update", "delete", "merge", "compaction"})

_BACKOFF_START = 0.02
_BACKOFF_MAX = 1.0
_IN_CHUNK = 500  # bound the number of bind parameters per statement


def _as_id(value, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidOptionError(what, f"expected an integer id, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidOptionError(what, f"expected an integer id, got {value!r}") from None


def _chunks(items: list, size: int = _IN_CHUNK) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _object_label(location: str, partition: str) -> str:
    return f"{location}/{partition}" if partition else location


class Metastore:
    """Tables, transactions and write ids in a SQL database (SQLite by default).

    ``url`` is any SQLAlchemy URL; ``None`` means :func:`default_url`. ``clock`` returns UTC epoch
    seconds and stamps every time recorded (start, heartbeat, commit); pass a fake one in tests.
    ``busy_timeout`` is how long SQLite waits for another process's write lock per attempt, and
    ``retry_attempts`` bounds how often a call is run again after lock contention or a deadlock.

    The object holds no live connection until first used and drops it when pickled, so it can
    be shipped to other processes (Spark pickles data sources, readers and writers).
    """

    def __init__(self, url: str | os.PathLike | None = None, *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = 30.0, retry_attempts: int = 8):
        self._url = _engine.parse_url(url)
        if not callable(clock):
            raise InvalidOptionError("clock", f"must be a callable returning epoch seconds, got {clock!r}")
        if busy_timeout < 0:
            raise InvalidOptionError("busy_timeout", f"must be >= 0 seconds, got {busy_timeout!r}")
        if int(retry_attempts) < 1:
            raise InvalidOptionError("retry_attempts", f"must be >= 1, got {retry_attempts!r}")
        self.clock = clock
        self.busy_timeout = float(busy_timeout)
        self.retry_attempts = int(retry_attempts)
        self._reset()

    # --- lifecycle --------------------------------------------------------------------------
    def _reset(self) -> None:
        self._engine: sa.Engine | None = None
        self._engine_pid: int | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {
            "url": self._url.render_as_string(hide_password=False),
            "clock": self.clock,
            "busy_timeout": self.busy_timeout,
            "retry_attempts": self.retry_attempts,
        }

    def __setstate__(self, state: dict) -> None:
        self._url = _engine.parse_url(state["url"])
        self.clock = state["clock"]
        self.busy_timeout = state["busy_timeout"]
        self.retry_attempts = state["retry_attempts"]
        self._reset()

    def __repr__(self) -> str:
        return f"Metastore({self.url!r})"

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return _engine.display_url(self._url)

    def close(self) -> None:
        """Close pooled connections (the object stays usable and reconnects on demand)."""
        with self._lock:
            if self._engine is not None and self._engine_pid == os.getpid():
                self._engine.dispose()
            self._engine = None
            self._engine_pid = None

    def __enter__(self) -> "Metastore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _get_engine(self) -> sa.Engine:
        pid = os.getpid()
        engine = self._engine
        if engine is not None and self._engine_pid == pid:
            return engine
        with self._lock:
            if self._engine is not None and self._engine_pid != pid:
                # inherited through fork: the parent's pooled connections are not ours to use
                self._engine.dispose(close=False)
                self._engine = None
            if self._engine is None:
                try:
                    engine = _engine.create_engine(self._url, busy_timeout=self.busy_timeout)
                except (sa.exc.SQLAlchemyError, ImportError) as exc:
                    raise MetastoreError(f"cannot open metastore {self.url}: {exc}", url=self.url) from None
                try:
                    if not self._run_on(engine, self._schema_is_current, write=False, what="read the metastore schema"):
                        self._run_on(engine, self._create_schema, write=True, what="create the metastore schema")
                except BaseException:
                    engine.dispose()
                    raise
                self._engine, self._engine_pid = engine, pid
            return self._engine

    # --- running database transactions -----------------------------------------------------
    def _run(self, fn, *, write: bool, what: str):
        return self._run_on(self._get_engine(), fn, write=write, what=what)

    def _run_on(self, engine: sa.Engine, fn, *, write: bool, what: str):
        """``fn(conn)`` inside one database transaction, run again on lock contention."""
        delay = _BACKOFF_START
        for attempt in range(1, self.retry_attempts + 1):
            try:
                with engine.connect() as conn:
                    if write:
                        conn.execution_options(**{_engine.WRITE_OPTION: True})
                    with conn.begin():
                        return fn(conn)
            except AcidError:
                raise
            except sa.exc.DBAPIError as exc:
                # a unique-key race (two processes registering one table) also resolves on a re-run
                transient = _engine.is_transient(exc) or isinstance(exc, sa.exc.IntegrityError)
                if not transient or attempt == self.retry_attempts:
                    tried = f" after {attempt} attempts" if transient else ""
                    raise MetastoreError(f"cannot {what} in metastore {self.url}{tried}: {exc.orig}",
                                         url=self.url) from exc
            except sa.exc.SQLAlchemyError as exc:
                raise MetastoreError(f"cannot {what} in metastore {self.url}: {exc}", url=self.url) from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, _BACKOFF_MAX)
        raise AssertionError("unreachable")

    def _schema_is_current(self, conn) -> bool:
        if not sa.inspect(conn).has_table(meta.name):
            return False
        version = conn.execute(select(meta.c.value).where(meta.c.name == "schema_version")).scalar()
        return self._check_version(version)

    def _check_version(self, version) -> bool:
        if version is None:
            return False
        if int(version) > SCHEMA_VERSION:
            raise MetastoreError(
                f"metastore {self.url} has schema version {version}, newer than this acidorc "
                f"understands ({SCHEMA_VERSION}); upgrade acidorc", url=self.url)
        if int(version) < SCHEMA_VERSION:  # no older versions exist yet; migrations go here
            raise MetastoreError(f"metastore {self.url} has schema version {version} and no migration "
                                 f"to {SCHEMA_VERSION} is known", url=self.url)
        return True

    def _create_schema(self, conn) -> bool:
        metadata.create_all(conn)  # CREATE TABLE only for missing tables
        version = conn.execute(select(meta.c.value).where(meta.c.name == "schema_version")).scalar()
        if version is None:
            conn.execute(insert(meta).values(name="schema_version", value=str(SCHEMA_VERSION)))
        else:
            self._check_version(version)
        present = set(conn.execute(select(sequences.c.name)).scalars())
        for name in SEQUENCES:
            if name not in present:
                conn.execute(insert(sequences).values(name=name, value=0))
        return True

    # --- small helpers (all run inside a database transaction) -------------------------------
    @staticmethod
    def _next(conn, name: str) -> int:
        """Increment a counter; on server databases the UPDATE also locks it until commit."""
        conn.execute(update(sequences).where(sequences.c.name == name).values(value=sequences.c.value + 1))
        return conn.execute(select(sequences.c.value).where(sequences.c.name == name)).scalar_one()

    @staticmethod
    def _current(conn, name: str) -> int:
        return conn.execute(select(sequences.c.value).where(sequences.c.name == name)).scalar_one()

    @staticmethod
    def _txn_row(conn, txn_id: int, *, lock: bool = True):
        stmt = select(txns).where(txns.c.txn_id == txn_id)
        row = conn.execute(stmt.with_for_update() if lock else stmt).first()
        if row is None:
            raise TransactionStateError(f"transaction {txn_id} does not exist", txn_id=txn_id)
        return row

    @staticmethod
    def _require_open(row, doing: str) -> None:
        if row.state != OPEN:
            why = f" ({row.abort_reason})" if row.state == ABORTED and row.abort_reason else ""
            raise TransactionStateError(f"cannot {doing} transaction {row.txn_id}: it is {row.state}{why}",
                                        txn_id=row.txn_id, state=row.state)

    @staticmethod
    def _table_row(conn, table_id: int, *, lock: bool = False):
        stmt = select(tables).where(tables.c.table_id == table_id)
        row = conn.execute(stmt.with_for_update() if lock else stmt).first()
        if row is None:
            raise NoSuchTableError(table_id=table_id)
        return row

    def _set_aborted(self, conn, txn_ids: list[int], now: float, reason: str) -> None:
        for chunk in _chunks(txn_ids):
            conn.execute(update(txns).where(txns.c.txn_id.in_(chunk), txns.c.state == OPEN)
                         .values(state=ABORTED, ended_at=now, abort_reason=reason or None))

    @staticmethod
    def _info(row) -> TableInfo:
        return TableInfo(
            table_id=row.table_id,
            name=row.name,
            location=row.location,
            schema=deserialize_schema(row.schema_ipc),
            partition_columns=tuple(json.loads(row.partition_columns)),
            bucket_columns=tuple(json.loads(row.bucket_columns)),
            num_buckets=row.num_buckets,
            insert_only=bool(row.insert_only),
            compression=row.compression,
            bucketing_version=row.bucketing_version,
            properties=json.loads(row.properties),
            created_at=row.created_at,
        )

    # --- tables -----------------------------------------------------------------------------
    def create_table(self, location: str | os.PathLike, schema: pa.Schema, *, name: str | None = None,
                     partition_columns: Iterable[str] = (), bucket_columns: Iterable[str] = (),
                     num_buckets: int = 0, insert_only: bool = False, compression: str = "zlib",
                     bucketing_version: int = 2, properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False) -> TableInfo:
        """Register a table (metadata only: no directory is created).

        Raises :class:`TableExistsError` when the location or the name is taken; with
        ``if_not_exists`` the table already registered at that location (and, if given, under
        that name) is returned instead.
        """
        loc = normalize_location(location)
        nm = normalize_name(name)
        parts, buckets, comp = validate_layout(schema, partition_columns, bucket_columns, num_buckets,
                                               compression, bucketing_version)
        props = table_properties(bool(insert_only), comp, bucketing_version, properties)
        schema_bytes = serialize_schema(schema)

        def op(conn):
            clash = [tables.c.location == loc] + ([tables.c.name == nm] if nm is not None else [])
            for row in conn.execute(select(tables).where(or_(*clash))).all():
                if row.location == loc and (nm is None or row.name == nm) and if_not_exists:
                    return self._info(row)
                if row.location == loc:
                    raise TableExistsError(
                        f"a table is already registered at {loc} (id {row.table_id}, name {row.name!r})",
                        location=loc, name=row.name)
                raise TableExistsError(f"table name {nm!r} is already used by the table at {row.location}",
                                       location=row.location, name=nm)
            table_id = self._next(conn, "table_id")
            values = dict(
                table_id=table_id, name=nm, location=loc, schema_ipc=schema_bytes,
                partition_columns=json.dumps(list(parts)), bucket_columns=json.dumps(list(buckets)),
                num_buckets=num_buckets, insert_only=bool(insert_only), compression=comp,
                bucketing_version=bucketing_version, properties=json.dumps(props), created_at=self.clock(),
                write_id_hwm=0,
            )
            conn.execute(insert(tables).values(**values))
            return self._info(_Values(values))

        return self._run(op, write=True, what=f"create table {loc}")

    def _find(self, conn, location, name, table_id, *, lock: bool = False):
        if location is None and name is None and table_id is None:
            raise InvalidOptionError("location", "give a table location, name or id")
        where = []
        if location is not None:
            where.append(tables.c.location == normalize_location(location))
        if name is not None:
            where.append(tables.c.name == normalize_name(name))
        if table_id is not None:
            where.append(tables.c.table_id == _as_id(table_id, "table_id"))
        stmt = select(tables).where(and_(*where))
        return conn.execute(stmt.with_for_update() if lock else stmt).first()

    @staticmethod
    def _missing(location, name, table_id) -> NoSuchTableError:
        return NoSuchTableError(location=None if location is None else normalize_location(location),
                                name=normalize_name(name), table_id=table_id)

    def get_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                  table_id: int | None = None) -> TableInfo:
        """The table at ``location`` / called ``name`` / with ``table_id`` (all given must match)."""
        row = self._run(lambda conn: self._find(conn, location, name, table_id), write=False,
                        what="look up a table")
        if row is None:
            raise self._missing(location, name, table_id)
        return self._info(row)

    def find_table(self, location: str | os.PathLike) -> TableInfo | None:
        """The table registered at ``location``, or None."""
        row = self._run(lambda conn: self._find(conn, location, None, None), write=False, what="look up a table")
        return None if row is None else self._info(row)

    def list_tables(self) -> list[TableInfo]:
        rows = self._run(lambda conn: conn.execute(select(tables).order_by(tables.c.table_id)).all(),
                         write=False, what="list tables")
        return [self._info(r) for r in rows]

    def drop_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                   table_id: int | None = None, if_exists: bool = False) -> TableInfo | None:
        """Forget a table and its write-id records. Metadata only: files stay where they are.

        Refused (:class:`TransactionStateError`) while an open transaction holds a write id on it.
        Returns the dropped table, or None when it did not exist and ``if_exists`` is set.
        """
        def op(conn):
            row = self._find(conn, location, name, table_id, lock=True)
            if row is None:
                if if_exists:
                    return None
                raise self._missing(location, name, table_id)
            holders = conn.execute(
                select(txn_write_ids.c.txn_id).join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                .where(txn_write_ids.c.table_id == row.table_id, txns.c.state == OPEN)
                .order_by(txn_write_ids.c.txn_id)).scalars().all()
            if holders:
                raise TransactionStateError(
                    f"cannot drop table {row.location}: open transaction(s) {holders} write to it; "
                    "commit or abort them first", txn_id=holders[0], state=OPEN)
            conn.execute(delete(txn_components).where(txn_components.c.table_id == row.table_id))
            conn.execute(delete(txn_write_ids).where(txn_write_ids.c.table_id == row.table_id))
            conn.execute(delete(tables).where(tables.c.table_id == row.table_id))
            return self._info(row)

        return self._run(op, write=True, what="drop a table")

    # --- transactions -----------------------------------------------------------------------
    def open_transaction(self, *, user: str = "", description: str = "") -> int:
        """A new open transaction; ids increase monotonically and are never reused."""
        def op(conn):
            txn_id = self._next(conn, "txn_id")
            now = self.clock()
            conn.execute(insert(txns).values(
                txn_id=txn_id, state=OPEN, user_name=str(user)[:255], description=str(description),
                host=socket.gethostname()[:255], pid=os.getpid(), started_at=now, last_heartbeat=now,
                start_seq=self._current(conn, "commit_seq"),
            ))
            return txn_id

        return self._run(op, write=True, what="open a transaction")

    def allocate_write_id(self, txn_id: int, table_id: int) -> int:
        """The write id of ``txn_id`` on the table: the next one (1, 2, 3, ...) on the first
        call, the same one on later calls. Counts as a heartbeat."""
        txn_id = _as_id(txn_id, "txn_id")
        table_id = _as_id(table_id, "table_id")

        def op(conn):
            row = self._txn_row(conn, txn_id)
            self._require_open(row, f"allocate a write id on table {table_id} for")
            existing = conn.execute(select(txn_write_ids.c.write_id).where(
                txn_write_ids.c.txn_id == txn_id, txn_write_ids.c.table_id == table_id)).scalar()
            if existing is None:
                self._table_row(conn, table_id, lock=True)
                conn.execute(update(tables).where(tables.c.table_id == table_id)
                             .values(write_id_hwm=tables.c.write_id_hwm + 1))
                existing = conn.execute(select(tables.c.write_id_hwm)
                                        .where(tables.c.table_id == table_id)).scalar_one()
                conn.execute(insert(txn_write_ids).values(txn_id=txn_id, table_id=table_id, write_id=existing))
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))
            return existing

        return self._run(op, write=True, what=f"allocate a write id for transaction {txn_id}")

    def heartbeat(self, txn_id: int) -> None:
        """Mark the transaction alive; :class:`TransactionStateError` unless it is open."""
        txn_id = _as_id(txn_id, "txn_id")

        def op(conn):
            self._require_open(self._txn_row(conn, txn_id), "heartbeat")
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))

        self._run(op, write=True, what=f"heartbeat transaction {txn_id}")

    @staticmethod
    def _touched_objects(touched: Mapping[int, Iterable[str]] | None) -> dict[int, list[str]]:
        if touched is None:
            return {}
        if not isinstance(touched, Mapping):
            raise InvalidOptionError("touched", f"expected a dict table_id -> partition paths, got {touched!r}")
        result: dict[int, list[str]] = {}
        for table_id, parts in touched.items():
            tid = _as_id(table_id, "touched")
            if isinstance(parts, (str, bytes)) or not isinstance(parts, Iterable):
                raise InvalidOptionError("touched", f"table {tid}: expected a list of partition paths "
                                         f"('' for an unpartitioned table), got {parts!r}")
            seen: dict[str, None] = {}
            for p in parts:
                if not isinstance(p, str):
                    raise InvalidOptionError("touched", f"table {tid}: partition paths are strings, got {p!r}")
                seen[p.strip("/")] = None
            result.setdefault(tid, [])
            result[tid] = list(dict.fromkeys(result[tid] + list(seen)))
        return result

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert") -> None:
        """Commit: every write id of the transaction becomes valid, atomically.

        ``touched`` maps table id -> data objects written ("" for an unpartitioned table, else a
        partition path such as ``ds=2024-01-01``). For ``update``, ``delete``, ``merge`` and
        ``compaction``, a data object changed by a commit after this transaction started is a
        write conflict: the transaction is aborted and :class:`ConflictError` raised. Inserts
        and overwrites never fail for that reason.
        """
        txn_id = _as_id(txn_id, "txn_id")
        op_name = str(operation).strip().lower()
        if op_name not in OPERATIONS:
            raise InvalidOptionError("operation", f"expected one of {', '.join(OPERATIONS)}, got {operation!r}")
        objects = self._touched_objects(touched)

        def op(conn):
            # first statement: on server databases this row lock serializes commits, so the
            # conflict check below sees every commit that precedes ours
            seq = self._next(conn, "commit_seq")
            row = self._txn_row(conn, txn_id)
            self._require_open(row, "commit")
            locations = {tid: self._table_row(conn, tid).location for tid in objects}
            now = self.clock()
            if op_name in CONFLICT_CHECKED:
                conflict = self._find_conflict(conn, row.start_seq, objects)
                if conflict is not None:
                    other, tid, part = conflict
                    where = _object_label(locations[tid], part)
                    reason = f"write conflict on {where} committed by [txnid:{other}]"
                    self._set_aborted(conn, [txn_id], now, reason)
                    return ConflictError(f"Aborting [txnid:{txn_id}] due to a {reason}; the {op_name} "
                                         "must be retried on a fresh snapshot",
                                         txn_id=txn_id, committed_txn_id=other, location=locations[tid],
                                         partition=part)
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(
                state=COMMITTED, commit_seq=seq, ended_at=now, operation=op_name))
            rows = [dict(txn_id=txn_id, table_id=tid, partition_path=p) for tid, ps in objects.items() for p in ps]
            for chunk in _chunks(rows):
                conn.execute(insert(txn_components), chunk)
            return None

        conflict = self._run(op, write=True, what=f"commit transaction {txn_id}")
        if conflict is not None:
            raise conflict  # only now: the abort is durable

    @staticmethod
    def _find_conflict(conn, start_seq: int, objects: dict[int, list[str]]):
        """The first commit after ``start_seq`` that changed one of ``objects``."""
        best = None
        for tid, parts in objects.items():
            for chunk in _chunks(parts):
                found = conn.execute(
                    select(txns.c.txn_id, txns.c.commit_seq, txn_components.c.partition_path)
                    .join(txn_components, txn_components.c.txn_id == txns.c.txn_id)
                    .where(txns.c.state == COMMITTED, txns.c.commit_seq > start_seq,
                           txn_components.c.table_id == tid, txn_components.c.partition_path.in_(chunk))
                    .order_by(txns.c.commit_seq, txn_components.c.partition_path).limit(1)).first()
                if found is not None and (best is None or found.commit_seq < best[0]):
                    best = (found.commit_seq, found.txn_id, tid, found.partition_path)
        return None if best is None else best[1:]

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort: its write ids become aborted (invisible for good). Aborting an aborted
        transaction does nothing; a committed one raises :class:`TransactionStateError`."""
        txn_id = _as_id(txn_id, "txn_id")

        def op(conn):
            row = self._txn_row(conn, txn_id)
            if row.state == ABORTED:
                return
            self._require_open(row, "abort")
            self._set_aborted(conn, [txn_id], self.clock(), str(reason))

        self._run(op, write=True, what=f"abort transaction {txn_id}")

    def txn_state(self, txn_id: int) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"``."""
        txn_id = _as_id(txn_id, "txn_id")
        return self._run(lambda conn: self._txn_row(conn, txn_id, lock=False).state, write=False,
                         what=f"read transaction {txn_id}")

    def txn_info(self, txn_id: int) -> dict:
        """Everything recorded about one transaction (state, times, write ids, touched objects)."""
        txn_id = _as_id(txn_id, "txn_id")

        def op(conn):
            row = self._txn_row(conn, txn_id, lock=False)
            wids = conn.execute(select(txn_write_ids.c.table_id, txn_write_ids.c.write_id)
                                .where(txn_write_ids.c.txn_id == txn_id)).all()
            comps = conn.execute(select(txn_components.c.table_id, txn_components.c.partition_path)
                                 .where(txn_components.c.txn_id == txn_id)).all()
            info = dict(row._mapping)
            info["write_ids"] = {t: w for t, w in wids}
            touched: dict[int, list[str]] = {}
            for t, p in comps:
                touched.setdefault(t, []).append(p)
            info["touched"] = {t: sorted(ps) for t, ps in touched.items()}
            return info

        return self._run(op, write=False, what=f"read transaction {txn_id}")

    def abort_expired(self, timeout_seconds: float) -> list[int]:
        """Abort open transactions whose last heartbeat is older than ``timeout_seconds`` (their
        driver died); returns their ids."""
        if timeout_seconds is None or timeout_seconds < 0:
            raise InvalidOptionError("timeout_seconds", f"must be >= 0, got {timeout_seconds!r}")

        def op(conn):
            now = self.clock()
            expired = conn.execute(
                select(txns.c.txn_id).where(txns.c.state == OPEN, txns.c.last_heartbeat < now - timeout_seconds)
                .order_by(txns.c.txn_id).with_for_update()).scalars().all()
            self._set_aborted(conn, list(expired), now,
                              f"no heartbeat for more than {timeout_seconds:g}s: the driver is presumed dead")
            return list(expired)

        return self._run(op, write=True, what="abort expired transactions")

    # --- snapshots --------------------------------------------------------------------------
    def valid_write_ids(self, table_id: int, *, for_txn: int | None = None) -> ValidWriteIdList:
        """The table's snapshot now: hwm = highest write id allocated, exceptions = write ids of
        open (except ``for_txn``'s own, valid for that txn) and aborted transactions."""
        table_id = _as_id(table_id, "table_id")
        for_txn = None if for_txn is None else _as_id(for_txn, "for_txn")

        def op(conn):
            table = self._table_row(conn, table_id)
            if for_txn is not None:
                self._txn_row(conn, for_txn, lock=False)
            rows = conn.execute(
                select(txn_write_ids.c.write_id, txns.c.state, txns.c.txn_id)
                .join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                .where(txn_write_ids.c.table_id == table_id, txns.c.state != COMMITTED)).all()
            open_ids = [w for w, state, t in rows if state == OPEN and t != for_txn]
            aborted = [w for w, state, _ in rows if state == ABORTED]
            return ValidWriteIdList(high_watermark=table.write_id_hwm, min_open=min(open_ids, default=LONG_MAX),
                                    open_ids=tuple(open_ids), aborted_ids=tuple(aborted), table_name=table.name)

        return self._run(op, write=False, what=f"read the write ids of table {table_id}")

    def valid_txns(self, *, for_txn: int | None = None) -> ValidTxnList:
        """Hive's ValidReadTxnList now: hwm = highest txn id, exceptions = open (except
        ``for_txn``) and aborted transactions. Decides which ``_vN`` directories are visible."""
        for_txn = None if for_txn is None else _as_id(for_txn, "for_txn")

        def op(conn):
            if for_txn is not None:
                self._txn_row(conn, for_txn, lock=False)
            hwm = self._current(conn, "txn_id")
            rows = conn.execute(select(txns.c.txn_id, txns.c.state).where(txns.c.state != COMMITTED)).all()
            open_ids = [t for t, state in rows if state == OPEN and t != for_txn]
            aborted = [t for t, state in rows if state == ABORTED]
            return ValidTxnList(high_watermark=hwm, min_open=min(open_ids, default=LONG_MAX),
                                open_ids=tuple(open_ids), aborted_ids=tuple(aborted))

        return self._run(op, write=False, what="read the transaction list")

    def write_ids_of(self, table_id: int, state: str) -> list[int]:
        """The table's write ids whose transaction is in ``state`` (e.g. aborted, for clean-up)."""
        table_id = _as_id(table_id, "table_id")
        if state not in TXN_STATES:
            raise InvalidOptionError("state", f"expected one of {', '.join(TXN_STATES)}, got {state!r}")

        def op(conn):
            self._table_row(conn, table_id)
            return list(conn.execute(
                select(txn_write_ids.c.write_id).join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                .where(txn_write_ids.c.table_id == table_id, txns.c.state == state)
                .order_by(txn_write_ids.c.write_id)).scalars())

        return self._run(op, write=False, what=f"read the write ids of table {table_id}")

    def history(self, table_id: int, limit: int | None = None) -> list[dict]:
        """Committed transactions that wrote the table, newest first: ``txn_id``, ``write_id``
        (None for a commit without one, e.g. a compaction), ``operation``, ``touched`` (data
        objects), ``commit_time``, ``commit_seq``, ``user``, ``description``."""
        table_id = _as_id(table_id, "table_id")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidOptionError("limit", f"must be None or an integer >= 0, got {limit!r}")

        def op(conn):
            self._table_row(conn, table_id)
            wrote = or_(
                txns.c.txn_id.in_(select(txn_write_ids.c.txn_id).where(txn_write_ids.c.table_id == table_id)),
                txns.c.txn_id.in_(select(txn_components.c.txn_id).where(txn_components.c.table_id == table_id)),
            )
            stmt = (select(txns).where(txns.c.state == COMMITTED, wrote)
                    .order_by(txns.c.commit_seq.desc()))
            if limit is not None:
                stmt = stmt.limit(limit)
            rows = conn.execute(stmt).all()
            ids = [r.txn_id for r in rows]
            wids: dict[int, int] = {}
            touched: dict[int, list[str]] = {}
            for chunk in _chunks(ids):
                wids.update(conn.execute(select(txn_write_ids.c.txn_id, txn_write_ids.c.write_id).where(
                    txn_write_ids.c.table_id == table_id, txn_write_ids.c.txn_id.in_(chunk))).all())
                for t, p in conn.execute(select(txn_components.c.txn_id, txn_components.c.partition_path).where(
                        txn_components.c.table_id == table_id, txn_components.c.txn_id.in_(chunk))):
                    touched.setdefault(t, []).append(p)
            return [dict(txn_id=r.txn_id, write_id=wids.get(r.txn_id), operation=r.operation,
                         touched=sorted(touched.get(r.txn_id, [])), commit_time=r.ended_at,
                         commit_seq=r.commit_seq, user=r.user_name, description=r.description)
                    for r in rows]

        return self._run(op, write=False, what=f"read the history of table {table_id}")


class _Values:
    """Attribute access to a dict of column values, to build a TableInfo before a re-read."""

    def __init__(self, values: dict):
        self.__dict__.update(values)

