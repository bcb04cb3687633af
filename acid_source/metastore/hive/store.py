"""A Hive Metastore as acidorc's transaction store: the same verbs as
:class:`~acid_source.metastore.Metastore`, answered by the HMS over thrift, so Hive, Trino,
Impala and acidorc share one set of transactions, write ids and locks.

What maps one to one onto Hive: tables (``db.table``, the location from ``sd.location``, the
layout from the table's storage descriptor and properties); transactions (``open_txns``,
``allocate_table_write_ids``, ``heartbeat``, ``commit_txn``, ``abort_txn``); snapshots
(``get_open_txns`` + ``get_valid_write_ids``, as Hive's driver builds them); locks (taken when a
write id is allocated, of the type Hive's ``DbTxnManager`` takes for the operation); the
write-set check (a DML records the partitions it changed with ``add_dynamic_partitions``, so the
HMS fails the later of two conflicting committers, whichever engine they are); and partitions
(registered with ``add_partitions`` before the commit that creates them, as Hive's MoveTask does).

What the HMS does not keep, and so this store does not offer: the commit history (time travel,
``history()``), the row-level conflict rule (Hive's partition-level rule applies), and the
proof that a listing holds every committed write id (``committed_writes``). A read lease is a
transaction the reader holds open, which is how Hive's own readers keep the cleaner away.
"""

from __future__ import annotations

import copy
import dataclasses
import getpass
import os
import socket
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from ...errors import (
    ConflictError,
    InvalidArgumentError,
    InvalidOptionError,
    LockTimeoutError,
    MetastoreError,
    NotAnAcidTableError,
    SchemaError,
    StoreBehindStorageError,
    TableExistsError,
    TableNotRegisteredError,
    TransactionStateError,
    UnsupportedOperationError,
)
from ...layout.partitions import parse_partition_segment
from ...layout.writeids import ValidTxnList, ValidWriteIdList
from ...orc.codecs import canonical_codec
from ..constants import ABORTED, COMMITTED, COMPACTION, DELETE, INSERT, INSERT_OVERWRITE, MERGE, OPEN, UPDATE
from ..tableinfo import TABLE_NAME, TableInfo, normalize_location, table_properties, validate_layout
from .connection import Connection, MetastoreAddress, buffered_transport
from .convert import (
    ORC_INPUT_FORMAT,
    ORC_OUTPUT_FORMAT,
    ORC_SERDE,
    arrow_type,
    hive_type,
    split_name,
    table_id_of,
    valid_txns,
    valid_write_ids,
)

if TYPE_CHECKING:
    from ...layout.ids_on_storage import IdsOnStorage

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# Hive's lock types (LockType in the thrift IDL; EXCL_WRITE is Hive 4's) and data operations
SHARED_READ, SHARED_WRITE, EXCLUSIVE, EXCL_WRITE = 1, 2, 3, 4
LEVEL_TABLE = 2
OP_INSERT, OP_UPDATE, OP_DELETE = 2, 3, 4
ACQUIRED, WAITING = 1, 2

#: The lock Hive 4's DbTxnManager takes for each write of acidorc (compaction takes none), with
#: its defaults (hive.txn.xlock.write, hive.txn.xlock.iow): UPDATE / DELETE / MERGE exclude each
#: other but not inserts. Hive 4 runs its write-set check only for clients that turn these
#: exclusive write locks off, so they are what keeps two updaters of one table apart.
LOCKS = {INSERT: (SHARED_READ, OP_INSERT), INSERT_OVERWRITE: (EXCLUSIVE, OP_INSERT),
         UPDATE: (EXCL_WRITE, OP_UPDATE), DELETE: (EXCL_WRITE, OP_DELETE), MERGE: (EXCL_WRITE, OP_UPDATE)}
#: Operations whose partitions enter Hive's write set (TXN_COMPONENTS of type update / delete).
WRITE_SET = {UPDATE: OP_UPDATE, DELETE: OP_DELETE, MERGE: OP_UPDATE}


class HiveMetastore:
    """Tables, transactions and write ids in a Hive Metastore (``thrift://host:9083``; several
    URIs separated by commas for a highly available deployment).

    ``lock_timeout`` (also ``?lockTimeout=`` in the URL): how long a write waits for a Hive
    lock before :class:`~acid_source.errors.LockTimeoutError`. ``transport``: how bytes reach the server
    (see :mod:`.connection`; the place for SASL). The object holds no live connection until
    first used and drops it when pickled.

    >>> store = HiveMetastore("thrift://metastore:9083")            # doctest: +SKIP
    >>> store.get_table(name="sales.orders").location                 # doctest: +SKIP
    'hdfs://nn/warehouse/sales.db/orders'
    """

    #: The HMS keeps no commit history (time travel, history()).
    keeps_history = False

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time, create: bool = True,
                 lock_timeout: float | None = None, transport: Callable[[Any], Any] = buffered_transport,
                 **_ignored: Any):
        self._address = MetastoreAddress.parse(str(url))
        self._connection = Connection(self._address, transport)
        self.clock = clock
        self.create = bool(create)
        self.lock_timeout = float(lock_timeout if lock_timeout is not None else self._address.lock_timeout)
        # what this process learnt of the metastore's names, shared by every store object on
        # it: reads, writes and their commit each open one, and must not search it again
        self._names = _NAMES
        self._locations = _LOCATIONS.setdefault(self.url.split("?")[0], {})
        self._write_ids: dict[tuple[int, int], int] = {}  # (txn, table id) -> write id handed out here
        self._leases: dict[str, Any] = {}  # lease id (a transaction) -> Lease
        self._locked: set[tuple[int, int]] = set()  # (txn, table id) locked by this object

    @classmethod
    def existing(cls, url: str, **kwargs: Any) -> "HiveMetastore":
        """A store for readers: the HMS is reached on first use (MetastoreUnreachableError)."""
        return cls(url, create=False, **kwargs)

    # --- connection ---------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_leases"] = {}
        del state["_names"], state["_locations"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._names = _NAMES
        self._locations = _LOCATIONS.setdefault(self.url.split("?")[0], {})

    def __repr__(self) -> str:
        return f"HiveMetastore({self.url!r})"

    @property
    def url(self) -> str:
        return str(self._address)

    has_password = False

    def connect_url(self) -> str:
        return self.url

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "HiveMetastore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, *args: Any, internal_error: bool = True) -> Any:
        """One thrift call; the metastore's own failures (MetaException, an internal error
        reported as TApplicationException) become MetastoreError naming it and the call
        (an internal error is :class:`_InternalError` instead with ``internal_error=False``)."""
        from thrift.Thrift import TApplicationException, TException

        tt = self._ttypes()
        try:
            return self._connection.call(method, *args)
        except (tt.NoSuchObjectException, tt.AlreadyExistsException, tt.InvalidObjectException,
                tt.NoSuchTxnException, tt.TxnAbortedException, tt.NoSuchLockException):
            raise  # what the callers translate, each in its own terms
        except TApplicationException as exc:
            if not internal_error:
                raise _InternalError() from None
            raise MetastoreError(f"the Hive Metastore at {self.url} failed {method}: {exc}", url=self.url) from None
        except TException as exc:  # MetaException and the other declared refusals
            raise MetastoreError(f"the Hive Metastore at {self.url} refused {method}: "
                                 f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}",
                                 url=self.url) from None

    @staticmethod
    def _ttypes() -> Any:
        from pymetastore.hive_metastore import ttypes

        return ttypes

    # --- tables -------------------------------------------------------------------------------
    def _hms_table(self, name: str) -> Any:
        tt = self._ttypes()
        db, table = split_name(name)
        try:
            return self._call("get_table_req", tt.GetTableRequest(dbName=db, tblName=table)).table
        except tt.NoSuchObjectException:
            raise TableNotRegisteredError(f"the Hive Metastore at {self.url} has no table {db}.{table}",
                                          name=f"{db}.{table}") from None

    def _info(self, table: Any) -> TableInfo:
        name = f"{table.dbName}.{table.tableName}".lower()
        sd = table.sd
        location = normalize_location(sd.location) if sd is not None and sd.location else None
        params = dict(table.parameters or {})
        if location is None:
            raise NotAnAcidTableError(name, f"the Hive Metastore at {self.url} gives it no location (a view?)")
        if params.get("transactional", "").lower() != "true":
            raise NotAnAcidTableError(location, f"the Hive Metastore at {self.url} has {name} as a table that is "
                                                "not transactional (TBLPROPERTIES transactional is not true)")
        if (sd.inputFormat or "") != ORC_INPUT_FORMAT:
            raise NotAnAcidTableError(location, f"{name} is a transactional table stored as {sd.inputFormat}; "
                                                "acidorc reads and writes ORC")
        try:
            bucketing_version = int(params.get("bucketing_version") or 1)
        except ValueError:
            raise SchemaError(f"{name}: table property bucketing_version={params['bucketing_version']!r} is not "
                              "1 or 2") from None
        fields = []
        for column in list(sd.cols or ()) + list(table.partitionKeys or ()):
            try:
                fields.append(pa.field(column.name.lower(), arrow_type(column.type)))
            except ValueError as exc:
                raise SchemaError(f"{name}: column {column.name} of Hive type {column.type}: {exc}") from None
        buckets = sd.numBuckets if sd.bucketCols and (sd.numBuckets or 0) > 0 else 0
        table_id = table_id_of(name)
        self._names[table_id] = name
        self._locations[location] = name
        return TableInfo(
            table_id=table_id, name=name, location=location, schema=pa.schema(fields),
            partition_columns=tuple(c.name.lower() for c in table.partitionKeys or ()),
            bucket_columns=tuple(c.lower() for c in sd.bucketCols or ()) if buckets else (),
            num_buckets=buckets, insert_only=params.get("transactional_properties", "").lower() == "insert_only",
            compression=canonical_codec(params.get("orc.compress", "zlib"), name="orc.compress"),
            bucketing_version=bucketing_version,
            properties=params, created_at=float(table.createTime or 0))

    def get_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                  table_id: int | None = None) -> TableInfo:
        """The table called ``name`` (``db.table``; ``table`` is in ``default``), at
        ``location`` or with ``table_id`` (all given must match)."""
        if name is None and location is None and table_id is not None:
            name = self._name_of(table_id)
        if name is None and location is not None:
            found = self.find_table(location)
            if found is None:
                raise TableNotRegisteredError(
                    f"no table of the Hive Metastore at {self.url} is at {normalize_location(location)}",
                    location=normalize_location(location))
            return found
        if name is None:
            raise TableNotRegisteredError(table_id=table_id)
        info = self._info(self._hms_table(name))
        if location is not None and normalize_location(location) != info.location:
            raise TableNotRegisteredError(f"{info.name} is at {info.location}, not at {location}",
                                          location=normalize_location(location), name=info.name)
        if table_id is not None and int(table_id) != info.table_id:
            raise TableNotRegisteredError(name=info.name, table_id=table_id)
        return info

    def find_table(self, location: str | os.PathLike) -> TableInfo | None:
        """The table at ``location`` (or called so: a ``db.table`` name is accepted too), or
        None. The HMS cannot look tables up by location: tables this process has seen are
        remembered, others are searched for among every database's tables (name your tables,
        ``db.table``, to avoid that on a large deployment)."""
        text = os.fspath(location)
        if isinstance(text, str) and TABLE_NAME.fullmatch(text.strip()):
            try:
                return self.get_table(name=text)
            except TableNotRegisteredError:
                return None
        loc = normalize_location(location)
        for refresh in (False, True):
            if refresh:
                self._scan_locations()
            name = self._locations.get(loc)
            if name is not None:
                try:
                    info = self.get_table(name=name)
                except TableNotRegisteredError:
                    self._locations.pop(loc, None)
                    continue
                if info.location == loc:
                    return info
                self._locations.pop(loc, None)
        return None

    def _scan_locations(self) -> None:
        tt = self._ttypes()
        for db, names in self._table_names().items():
            for start in range(0, len(names), 100):
                request = tt.GetTablesRequest(dbName=db, tblNames=names[start:start + 100])
                for table in self._call("get_table_objects_by_name_req", request).tables or ():
                    if table.sd is not None and table.sd.location:
                        name = f"{table.dbName}.{table.tableName}".lower()
                        self._locations[normalize_location(table.sd.location)] = name

    def _table_names(self) -> dict[str, list[str]]:
        """Every database's table names (one call per database), each remembered by its id."""
        names = {db: list(self._call("get_all_tables", db)) for db in self._call("get_all_databases")}
        for db, tables in names.items():
            for table in tables:
                name = f"{db}.{table}".lower()
                self._names.setdefault(table_id_of(name), name)
        return names

    def list_tables(self) -> list[TableInfo]:
        """The transactional ORC tables of every database."""
        self._scan_locations()
        found = []
        for name in sorted(set(self._locations.values())):
            try:
                found.append(self.get_table(name=name))
            except (NotAnAcidTableError, TableNotRegisteredError, SchemaError):
                continue
        return found

    def create_table(self, location: str | os.PathLike, schema: pa.Schema, *, name: str | None = None,
                     partition_columns: Iterable[str] = (), bucket_columns: Iterable[str] = (),
                     num_buckets: int = 0, insert_only: bool = False, compression: str = "zlib",
                     bucketing_version: int = 2, properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False, adopted: Any = None) -> TableInfo:
        """Create a managed transactional ORC table in the HMS (metadata only: no directory is
        created). ``name`` (``db.table``) is required; the database must exist."""
        tt = self._ttypes()
        if not name:
            raise InvalidArgumentError("name", f"a table in the Hive Metastore at {self.url} needs a name (db.table)")
        if adopted is not None:
            raise UnsupportedOperationError(
                "create_table(adopt=True)", f"the Hive Metastore at {self.url} cannot be told which write ids "
                "a table's storage already holds; create the table in Hive (or in acidorc's own store)")
        loc = normalize_location(location)
        db, table = split_name(name)
        parts, buckets, codec = validate_layout(schema, partition_columns, bucket_columns, num_buckets,
                                                compression, bucketing_version)
        params = table_properties(bool(insert_only), codec, bucketing_version, properties)
        try:
            cols = [tt.FieldSchema(name=f.name, type=hive_type(f.type), comment=None)
                    for f in schema if f.name not in parts]
            keys = [tt.FieldSchema(name=f.name, type=hive_type(f.type), comment=None)
                    for f in schema if f.name in parts]
        except (TypeError, ValueError, NotImplementedError) as exc:
            raise SchemaError(f"{db}.{table}: {exc}") from None
        keys.sort(key=lambda k: list(parts).index(k.name))
        sd = tt.StorageDescriptor(
            cols=cols, location=_hms_location(loc), inputFormat=ORC_INPUT_FORMAT, outputFormat=ORC_OUTPUT_FORMAT,
            compressed=False, numBuckets=num_buckets if buckets else -1,
            serdeInfo=tt.SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={"serialization.format": "1"}),
            bucketCols=list(buckets), sortCols=[], parameters={})
        hms = tt.Table(tableName=table, dbName=db, owner=getpass.getuser(), createTime=int(self.clock()),
                       lastAccessTime=0, retention=0, sd=sd, partitionKeys=keys, parameters=params,
                       tableType="MANAGED_TABLE")
        try:
            self._call("create_table", hms)
        except tt.AlreadyExistsException:
            existing = self.get_table(name=f"{db}.{table}")
            if if_not_exists and existing.location == loc:
                return existing
            raise TableExistsError(f"the Hive Metastore at {self.url} already has a table {db}.{table} "
                                   f"(at {existing.location})", location=existing.location,
                                   name=existing.name) from None
        except (tt.InvalidObjectException, tt.NoSuchObjectException) as exc:
            raise MetastoreError(f"the Hive Metastore at {self.url} refused to create {db}.{table}: "
                                 f"{exc.message}", url=self.url) from None
        return self.get_table(name=f"{db}.{table}")

    def new_table_place(self, path: str, name: str | None) -> tuple[str, str | None]:
        """Where a write that creates a table puts it, and its name. A write to a name
        (``db.table``) creates a managed table where Hive would: under the database's location.
        A write to a location needs the name too (option ``tableName``)."""
        if TABLE_NAME.fullmatch(path.strip()):
            db, table = split_name(path)
            tt = self._ttypes()
            try:
                database = self._call("get_database", db)
            except tt.NoSuchObjectException:
                raise TableNotRegisteredError(f"the Hive Metastore at {self.url} has no database {db} to create "
                                              f"{db}.{table} in", name=f"{db}.{table}") from None
            return f"{normalize_location(database.locationUri)}/{table}", f"{db}.{table}"
        if not name:
            raise InvalidOptionError("tableName", f"a new table in the Hive Metastore at {self.url} needs a name: "
                                       f"write to db.table, or give option tableName with the location {path}")
        return path, name

    def drop_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                   table_id: int | None = None, if_exists: bool = False) -> TableInfo | None:
        """Drop the table from the HMS; its files stay (``deleteData`` false)."""
        tt = self._ttypes()
        try:
            info = self.get_table(location, name=name, table_id=table_id)
        except TableNotRegisteredError:
            if if_exists:
                return None
            raise
        db, table = split_name(info.name or "")
        try:
            self._call("drop_table", db, table, False)
        except tt.NoSuchObjectException:
            if not if_exists:
                raise TableNotRegisteredError(name=info.name) from None
            return None
        self._locations.pop(info.location, None)
        return info

    def _name_of(self, table_id: int) -> str:
        """The name behind an id. Ids are hashes of names, the same in every process; one this
        process has not seen yet (a Spark worker committing a driver's transaction) is found
        among the names of every database's tables."""
        table_id = int(table_id)
        if table_id not in self._names:
            self._table_names()
        try:
            return self._names[table_id]
        except KeyError:
            raise TableNotRegisteredError(f"the Hive Metastore at {self.url} has no table with id {table_id}",
                                          table_id=table_id) from None

    # --- transactions -------------------------------------------------------------------------
    def open_transaction(self, *, user: str = "", description: str = "") -> int:
        tt = self._ttypes()
        request = tt.OpenTxnRequest(num_txns=1, user=str(user) or getpass.getuser(), hostname=socket.gethostname(),
                                    agentInfo=f"acidorc {description}".strip()[:255])
        return int(self._call("open_txns", request).txn_ids[0])

    def allocate_write_id(self, txn_id: int, table_id: int, *, on_storage: "IdsOnStorage | None" = None,
                          operation: str | None = None) -> int:
        """The transaction's write id on the table (the same one on later calls). First the
        lock Hive's DbTxnManager takes for ``operation`` (none for a compaction), waited for
        up to ``lock_timeout``, then the storage check, then the allocation."""
        tt = self._ttypes()
        name = self._name_of(table_id)
        db, table = split_name(name)
        if operation in LOCKS:
            self.lock(txn_id, table_id, operation)
        if on_storage is not None:
            self.refuse_if_behind(table_id, on_storage)
        request = tt.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=[int(txn_id)])
        try:
            response = self._call("allocate_table_write_ids", request)
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            raise self._not_open(txn_id, "allocate a write id", exc) from None
        write_id = int(response.txnToWriteIds[0].writeId)
        self._write_ids[(int(txn_id), int(table_id))] = write_id
        return write_id

    def open_transaction_batch(self, table_id: int, count: int, *, on_storage: "IdsOnStorage | None" = None,
                               user: str = "", description: str = "") -> list[tuple[int, int]]:
        """``count`` transactions (one ``open_txns``) with consecutive write ids on the table (one
        ``allocate_table_write_ids`` for all of them: Hive hands them out in transaction order,
        as for its own streaming ``TransactionBatch``); ``[(txn_id, write_id), ...]`` ascending.
        Takes no lock: take Hive's with :meth:`lock` as each transaction begins, as Hive's
        streaming connection does."""
        from ..transactions import batch_size

        tt = self._ttypes()
        count = batch_size(count)
        db, table = split_name(self._name_of(table_id))
        if on_storage is not None:
            self.refuse_if_behind(table_id, on_storage)
        request = tt.OpenTxnRequest(num_txns=count, user=str(user) or getpass.getuser(),
                                    hostname=socket.gethostname(), agentInfo=f"acidorc {description}".strip()[:255])
        txn_ids = sorted(int(t) for t in self._open_txns(request))
        allocate = tt.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=txn_ids)
        try:
            response = self._call("allocate_table_write_ids", allocate)
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            self._abort_all(txn_ids, "allocating their write ids failed")
            raise self._not_open(txn_ids[0], "allocate the write ids of a batch starting at", exc) from None
        except BaseException:
            self._abort_all(txn_ids, "allocating their write ids failed")
            raise
        given = {int(t.txnId): int(t.writeId) for t in response.txnToWriteIds}
        pairs = [(t, given.get(t, 0)) for t in txn_ids]
        first = pairs[0][1]
        if len(given) != count or [w for _, w in pairs] != list(range(first, first + count)):
            self._abort_all(txn_ids, "the metastore did not hand out consecutive write ids")
            raise MetastoreError(f"the Hive Metastore at {self.url} allocated write ids {pairs} on {db}.{table} for "
                                 f"the transaction batch {txn_ids}, not consecutive ones in transaction order; "
                                 "the batch was aborted", url=self.url)
        for t, w in pairs:
            self._write_ids[(t, int(table_id))] = w
        return pairs

    def _open_txns(self, request: Any, attempts: int = 4) -> list[int]:
        """``open_txns``, asked again when the metastore failed it internally: Hive 4 gives up
        an ``openTxns`` whose database commit took longer than ``metastore.txn.opentxn.timeout``
        (it deletes the transactions it inserted: ids must appear in commit order) or whose
        database timed out on a lock (rolled back); either way nothing was opened. Measured
        with three processes opening batches at once on the test metastore's Derby (one call
        in three failed)."""
        pause = 0.05
        for attempt in range(1, attempts + 1):
            try:
                return list(self._call("open_txns", request, internal_error=attempt == attempts).txn_ids)
            except _InternalError:
                time.sleep(pause)  # backoff before asking again, not a synchronization
                pause *= 2
        raise AssertionError("unreachable")

    def _abort_all(self, txn_ids: list[int], reason: str) -> None:
        for t in txn_ids:
            try:
                self.abort(t, reason)
            except MetastoreError:
                pass  # the metastore times them out

    def heartbeat_many(self, txn_ids: Iterable[int]) -> set[int]:
        """Heartbeat all of ``txn_ids`` with one ``heartbeat_txn_range`` per run of consecutive
        ids (a batch is one run; ids between them that are not ours are never beaten); returns
        those the metastore reports aborted or unknown (committed, cleaned, never opened)."""
        tt = self._ttypes()
        ids = sorted({int(t) for t in txn_ids})
        gone: set[int] = set()
        runs: list[list[int]] = []
        for t in ids:
            if runs and runs[-1][1] == t - 1:
                runs[-1][1] = t
            else:
                runs.append([t, t])
        for low, high in runs:
            response = self._call("heartbeat_txn_range", tt.HeartbeatTxnRangeRequest(min=low, max=high))
            gone.update(int(t) for t in (response.aborted or ()))
            gone.update(int(t) for t in (response.nosuch or ()))
        return gone

    def lock(self, txn_id: int, table_id: int, operation: str) -> None:
        """Take the lock Hive's DbTxnManager takes for ``operation`` on the table (once per
        transaction and table), waiting up to ``lock_timeout``; the lock ends with the
        transaction. A DML takes it before its snapshot, as Hive does: a writer that waited
        for another then reads what that one committed."""
        if operation not in LOCKS or (int(txn_id), int(table_id)) in self._locked:
            return
        self._lock(txn_id, self._name_of(table_id), operation)
        self._locked.add((int(txn_id), int(table_id)))

    def _lock(self, txn_id: int, name: str, operation: str) -> None:
        tt = self._ttypes()
        db, table = split_name(name)
        lock_type, data_op = LOCKS[operation]
        component = tt.LockComponent(type=lock_type, level=LEVEL_TABLE, dbname=db, tablename=table,
                                     operationType=data_op, isTransactional=True,
                                     isDynamicPartitionWrite=operation in WRITE_SET)
        request = tt.LockRequest(component=[component], txnid=int(txn_id), user=getpass.getuser(),
                                 hostname=socket.gethostname(), agentInfo="acidorc")
        try:
            response = self._call("lock", request)
            deadline = time.monotonic() + self.lock_timeout
            pause = 0.05
            while response.state == WAITING:
                if time.monotonic() >= deadline:
                    blocker = getattr(response, "errorMessage", None)
                    self.abort(txn_id, "lock timeout")
                    raise LockTimeoutError(
                        f"{operation} on {name}: the Hive Metastore at {self.url} did not grant the "
                        f"{_LOCK_NAMES[lock_type]} lock within {self.lock_timeout:g}s (another transaction holds a "
                        "conflicting lock); transaction aborted, nothing written",
                        table=name, url=self.url, blocker=blocker)
                time.sleep(pause)  # the HMS offers no wait-for-grant call: poll, as Hive's DbLockManager does
                pause = min(pause * 2, 1.0)
                response = self._call("check_lock", tt.CheckLockRequest(lockid=response.lockid, txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            raise self._not_open(txn_id, f"lock {name}", exc) from None
        if response.state != ACQUIRED:
            raise MetastoreError(f"{operation} on {name}: the Hive Metastore at {self.url} answered the lock "
                                 f"request with state {response.state}", url=self.url)

    def refuse_if_behind(self, table_id: int, on_storage: "IdsOnStorage") -> None:
        """:class:`StoreBehindStorageError` if the listing ``on_storage`` (taken before this
        call) holds a write id above the table's high-water mark in the HMS, or a ``_vT`` above
        its highest transaction."""
        write_ids, txns = self.snapshot(table_id)
        if on_storage.write_id <= write_ids.high_watermark and on_storage.txn_id <= txns.high_watermark:
            return
        info = self.get_table(name=self._name_of(table_id))
        raise StoreBehindStorageError(
            on_storage.behind_message(self.url, write_ids.high_watermark, txns.high_watermark),
            location=info.location, write_id=write_ids.high_watermark + 1,
            directories=tuple(on_storage.above(write_ids.high_watermark, txns.high_watermark)), url=self.url)

    def txn_timeout_seconds(self) -> float | None:
        """The metastore's ``hive.txn.timeout`` (None when it does not say): the heartbeat
        interval stays below half of it. Asked once per process and metastore."""
        key = self.url.split("?")[0]
        if key not in _TIMEOUTS:
            try:
                text = str(self._call("get_config_value", "metastore.txn.timeout", "")).strip().lower()
            except MetastoreError:  # a server that refuses config reads: keep the default interval
                text = ""
            _TIMEOUTS[key] = _seconds(text)
        return _TIMEOUTS[key]

    def heartbeat(self, txn_id: int) -> None:
        tt = self._ttypes()
        try:
            self._call("heartbeat", tt.HeartbeatRequest(txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException, tt.NoSuchLockException) as exc:
            raise self._not_open(txn_id, "heartbeat", exc) from None

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert", checked_through: int | None = None,
               sink: tuple[str, int] | None = None) -> None:
        """Register the partitions the transaction created, enter a DML's partitions into
        Hive's write set, and commit. A write conflict (the HMS found a committed UPDATE or
        DELETE of the same partition since this transaction began) aborts it:
        :class:`ConflictError`."""
        tt = self._ttypes()
        if sink is not None:
            raise self._no_sink_marks()
        if checked_through is not None:
            raise UnsupportedOperationError(
                "conflictDetection=row", f"with the Hive Metastore at {self.url}, Hive's locks decide "
                "conflicts; use conflictDetection=object")
        op = str(operation).strip().lower()
        what = f"commit the {op} on {', '.join(self._name_of(t) for t in touched)} of" if touched else "commit"
        for table_id, partitions in (touched or {}).items():
            name = self._name_of(table_id)
            parts = sorted({p.strip("/") for p in partitions})
            hms = self._hms_table(name)
            info = self._info(hms)
            if info.partition_columns and op != COMPACTION:
                self._add_partitions(info, hms, [p for p in parts if p])
            if op in WRITE_SET and info.partition_columns:  # unpartitioned: the lock component is the entry
                db, table = split_name(name)
                write_id = self._write_ids.get((int(txn_id), int(table_id))) \
                    or self.allocate_write_id(txn_id, table_id)  # the one it has: Hive returns it again
                request = tt.AddDynamicPartitions(txnid=int(txn_id), writeid=write_id, dbname=db, tablename=table,
                                                  partitionnames=[p for p in parts if p],
                                                  operationType=WRITE_SET[op])
                try:
                    self._call("add_dynamic_partitions", request)
                except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
                    raise self._not_open(txn_id, "record the partitions of", exc) from None
        try:
            self._call("commit_txn", tt.CommitTxnRequest(txnid=int(txn_id)))
        except tt.TxnAbortedException as exc:
            if "conflict" in (exc.message or "").lower():
                raise ConflictError(f"{op} lost a write conflict in the Hive Metastore at {self.url}: "
                                    f"{exc.message}", txn_id=int(txn_id)) from None
            raise self._not_open(txn_id, what, exc) from None
        except tt.NoSuchTxnException as exc:
            raise self._not_open(txn_id, what, exc) from None
        return None

    def _no_sink_marks(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            "exactly-once streaming sink", f"the Hive Metastore at {self.url} cannot record a micro-batch in the "
            "commit's own database transaction: the Hive 3.1 thrift API acidorc speaks commits a transaction and "
            "nothing else (Hive 4's CommitTxnRequest.keyValue could, later), and a mark written in a second call "
            "could be lost between the two, committing a replayed batch twice; use acidorc's own store "
            "(metastoreUrl) for the sink's table")

    def sink_batch(self, sink_id: str, batch_id: int) -> int | None:
        raise self._no_sink_marks()

    def last_sink_batch(self, sink_id: str) -> int | None:
        raise self._no_sink_marks()

    def _add_partitions(self, info: TableInfo, hms: Any, partitions: list[str]) -> None:
        tt = self._ttypes()
        if not partitions:
            return
        db, table = split_name(info.name or "")
        new = []
        for path in partitions:
            values = []
            for segment in path.split("/"):
                parsed = parse_partition_segment(segment)
                values.append(HIVE_DEFAULT_PARTITION if parsed is None or parsed[1] is None else parsed[1])
            sd = copy.deepcopy(hms.sd)
            sd.location = _hms_location(f"{info.location}/{path}")
            new.append(tt.Partition(values=values, dbName=db, tableName=table, createTime=int(self.clock()),
                                    lastAccessTime=0, sd=sd, parameters={}))
        request = tt.AddPartitionsRequest(dbName=db, tblName=table, parts=new, ifNotExists=True, needResult=False)
        try:
            self._call("add_partitions_req", request)
        except (tt.InvalidObjectException, tt.AlreadyExistsException) as exc:
            raise MetastoreError(f"the Hive Metastore at {self.url} refused partitions {partitions} of "
                                 f"{info.name}: {exc.message}", url=self.url) from None

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort; aborting an aborted (or timed-out) transaction does nothing."""
        tt = self._ttypes()
        try:
            self._call("abort_txn", tt.AbortTxnRequest(txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException):
            if self.txn_state(txn_id) == COMMITTED:
                raise TransactionStateError(f"cannot abort transaction {txn_id}: it is committed",
                                            txn_id=int(txn_id), state=COMMITTED) from None

    def txn_state(self, txn_id: int) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"`` as the HMS knows it: listed open or
        aborted in ``get_open_txns_info``, else committed when at or below the high-water mark.
        (Hive forgets an aborted transaction once its files are cleaned; it then reads as
        committed here, which is harmless: nothing of it is left to show.)"""
        response = self._call("get_open_txns_info")
        for info in response.open_txns or ():
            if int(info.id) == int(txn_id):
                return OPEN if info.state == 3 else ABORTED  # TxnState: ABORTED=2 COMMITTED=1 OPEN=3
        if int(txn_id) <= int(response.txn_high_water_mark):
            return COMMITTED
        raise TransactionStateError(f"the Hive Metastore at {self.url} never opened transaction {txn_id}",
                                    txn_id=int(txn_id))

    def txn_info(self, txn_id: int) -> dict:
        response = self._call("get_open_txns_info")
        for info in response.open_txns or ():
            if int(info.id) == int(txn_id):
                return {"txn_id": int(info.id), "state": OPEN if info.state == 3 else ABORTED,
                        "user_name": info.user, "host": info.hostname, "description": info.agentInfo,
                        "last_heartbeat": (info.lastHeartbeatTime or 0) / 1000.0,
                        "started_at": (info.startedTime or 0) / 1000.0}
        return {"txn_id": int(txn_id), "state": self.txn_state(txn_id)}

    def abort_expired(self, timeout_seconds: float, *, table_id: int | None = None) -> list[int]:
        """Nothing: the HMS aborts silent transactions itself (its AcidHouseKeeperService,
        after ``hive.txn.timeout``)."""
        return []

    def commits_since(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedOperationError(
            "conflictDetection=row", f"the Hive Metastore at {self.url} does not list commits by partition; "
            "Hive's partition-level rule applies")

    def _not_open(self, txn_id: int, what: str, exc: Any) -> TransactionStateError:
        message = getattr(exc, "message", None) or str(exc)
        state = ABORTED if "abort" in message.lower() else None
        return TransactionStateError(
            f"cannot {what} transaction {txn_id}: the Hive Metastore at {self.url} says: {message} (a transaction "
            "whose heartbeats stopped for longer than hive.txn.timeout is aborted by the metastore)",
            txn_id=int(txn_id), state=state)

    # --- snapshots ----------------------------------------------------------------------------
    def snapshot(self, table_id: int, *, for_txn: int | None = None) -> tuple[ValidWriteIdList, ValidTxnList]:
        """``(ValidWriteIdList, ValidTxnList)`` as Hive's driver builds them: the open and
        aborted transactions first (as transaction ``for_txn`` sees them), then the table's
        write ids under exactly that list."""
        tt = self._ttypes()
        name = self._name_of(table_id)
        txns = valid_txns(self._call("get_open_txns"), int(for_txn or 0))
        request = tt.GetValidWriteIdsRequest(fullTableNames=[name], validTxnList=str(txns))
        try:
            response = self._call("get_valid_write_ids", request)
        except tt.NoSuchTxnException as exc:
            raise MetastoreError(f"the Hive Metastore at {self.url}: {exc.message}", url=self.url) from None
        write_ids = valid_write_ids(response.tblValidWriteIds[0])
        mine = self._write_ids.get((int(for_txn or 0), int(table_id)))
        if mine is not None:  # a transaction sees its own writes
            write_ids = write_ids.with_valid([mine])
        return write_ids, txns

    def valid_write_ids(self, table_id: int, *, for_txn: int | None = None) -> ValidWriteIdList:
        return self.snapshot(table_id, for_txn=for_txn)[0]

    def valid_txns(self, *, for_txn: int | None = None) -> ValidTxnList:
        return valid_txns(self._call("get_open_txns"), int(for_txn or 0))

    def write_ids_of(self, table_id: int, state: str) -> list[int]:
        """Open or aborted write ids (the HMS lists those below the high-water mark); committed
        ones are everything else up to it."""
        write_ids, _ = self.snapshot(table_id)
        if state == OPEN:
            return list(write_ids.open_ids)
        if state == ABORTED:
            return list(write_ids.aborted_ids)
        invalid = set(write_ids.open_ids) | set(write_ids.aborted_ids)
        return [w for w in range(1, write_ids.high_watermark + 1) if w not in invalid]

    def committed_writes(self, table_id: int, *, above: int = 0,
                         partitions: Iterable[str] | None = None) -> tuple[set[str], dict[str, list[int]]]:
        """Nothing: the HMS does not record which partitions a committed write id wrote, so
        a listing cannot be proven complete against it (object stores list consistently today;
        the check stays for acidorc's own store)."""
        return set(), {}

    def history(self, table_id: int, limit: int | None = None) -> list[dict]:
        raise UnsupportedOperationError(
            "history", f"the Hive Metastore at {self.url} keeps no commit history of {self._name_of(table_id)}; "
            "acidorc's own store does (time travel and history need it)")

    def snapshot_as_of(self, table_id: int, write_id: int) -> Any:
        raise UnsupportedOperationError(
            "versionAsOf", f"time travel needs a commit history, and the Hive Metastore at {self.url} keeps none "
            f"for {self._name_of(table_id)}; pass validWriteIds to read an explicit snapshot")

    def write_id_as_of_time(self, table_id: int, timestamp: float) -> int:
        raise UnsupportedOperationError(
            "timestampAsOf", f"time travel needs a commit history, and the Hive Metastore at {self.url} keeps "
            f"none for {self._name_of(table_id)}")

    def latest_version(self, table_id: int, write_ids: ValidWriteIdList) -> int:
        """The newest committed write id in ``write_ids`` (0: none)."""
        invalid = set(write_ids.open_ids) | set(write_ids.aborted_ids)
        return next((w for w in range(write_ids.high_watermark, 0, -1) if w not in invalid), 0)

    # --- read leases: an open transaction, as Hive's readers hold --------------------------------
    def acquire_lease(self, table_id: int, write_ids: Any, txns: Any, ttl_seconds: float, holder: str = "") -> Any:
        """An open transaction held for the read (Hive's cleaner waits for it); its id is the
        lease id, renewing it is a heartbeat and releasing it a commit of nothing."""
        from ..leases import Lease

        txn_id = self.open_transaction(description=f"read lease {holder}".strip())
        now = self.clock()
        lease = Lease(lease_id=str(txn_id), table_id=int(table_id),
                      write_ids=write_ids if isinstance(write_ids, ValidWriteIdList)
                      else ValidWriteIdList.parse(write_ids),
                      txns=txns if isinstance(txns, ValidTxnList) else ValidTxnList.parse(txns),
                      holder=holder, acquired_at=now, renewed_at=now, ttl_seconds=float(ttl_seconds))
        self._leases[lease.lease_id] = lease
        return lease

    def renew_lease(self, lease_id: str) -> Any:
        """The lease renewed; None once the HMS aborted its transaction (heartbeats too late)."""
        try:
            self.heartbeat(int(lease_id))
        except TransactionStateError:
            self._leases.pop(lease_id, None)
            return None
        lease = self._leases.get(lease_id)
        if lease is None:
            return None
        lease = dataclasses.replace(lease, renewed_at=self.clock())
        self._leases[lease_id] = lease
        return lease

    def release_lease(self, lease_id: str) -> None:
        tt = self._ttypes()
        self._leases.pop(lease_id, None)
        try:
            self._call("commit_txn", tt.CommitTxnRequest(txnid=int(lease_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException):
            pass  # timed out meanwhile: nothing to release

    def live_leases(self, table_id: int) -> list:
        return []

    def purge_expired_leases(self) -> int:
        return 0

    def cleaner_view(self, table_id: int, *, retention_seconds: float, txn_timeout_seconds: float) -> Any:
        """The cleaner's view, from the HMS: every reader of Hive's (and acidorc's, by its
        lease) holds an open transaction, and the HMS does not say which snapshot an open one
        reads. So while any transaction is open, the floor is the empty snapshot (nothing is
        obsolete under it: only aborted directories go); once none is, the floor is the latest
        snapshot. Hive's own cleaner waits the same way, on the lowest open transaction."""
        from ..leases import CleanerView

        write_ids, txns = self.snapshot(table_id)
        latest = (write_ids, txns)
        floor = latest
        if txns.open_ids:
            floor = (ValidWriteIdList(high_watermark=0, table_name=write_ids.table_name),
                     ValidTxnList(high_watermark=0))
        return CleanerView(now=self.clock(), latest=latest, floor=floor, leases=(),
                           aborted_write_ids=frozenset(write_ids.aborted_ids),
                           aborted_txn_ids=frozenset(txns.aborted_ids))


class _InternalError(Exception):
    """A call the metastore failed internally, for a caller that asks again (never escapes)."""


#: table id -> ``db.table`` (ids are hashes of names: the same on every metastore), and per
#: metastore, location -> ``db.table``, for every table this process has looked up
_NAMES: dict[int, str] = {}
_LOCATIONS: dict[str, dict[str, str]] = {}

_TIMEOUTS: dict[str, float | None] = {}
_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _seconds(text: str) -> float | None:
    """Hive's time settings (``300s``, ``6000ms``, ``5m``; a bare number is seconds)."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):] or "s"
    try:
        value = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        return None
    return value if value > 0 else None


_LOCK_NAMES = {SHARED_READ: "shared-read", SHARED_WRITE: "shared-write", EXCLUSIVE: "exclusive",
               EXCL_WRITE: "exclusive-write"}


def _hms_location(location: str) -> str:
    """A location as the HMS and Hive's FileSystem expect it: local paths as ``file:`` URLs."""
    return location if "://" in location else f"file:{location}"


