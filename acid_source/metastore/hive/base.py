"""What every part of :class:`~acid_source.metastore.hive.HiveMetastore` stands on: the
connection (one thrift client, reached on first use), a call with the metastore's own failures
made typed errors, and what the other parts ask of the HMS alike: a table by name, its
:class:`~acid_source.metastore.tableinfo.TableInfo`, and the name behind a table id."""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

import pyarrow as pa

from ...errors import MetastoreError, NotAnAcidTableError, SchemaError, TableNotRegisteredError, TransactionStateError
from ...orc.codecs import canonical_codec
from ..constants import ABORTED
from ..tableinfo import TableInfo, normalize_location
from .connection import Connection, MetastoreAddress, buffered_transport
from .convert import ORC_INPUT_FORMAT, arrow_type, split_name, table_id_of

_Hive = TypeVar("_Hive", bound="HiveBase")


class InternalCallError(Exception):
    """A call the metastore failed internally, for a caller that asks again (never escapes)."""


#: table id -> ``db.table`` (ids are hashes of names: the same on every metastore), and per
#: metastore, location -> ``db.table``, for every table this process has looked up
_NAMES: dict[int, str] = {}
_LOCATIONS: dict[str, dict[str, str]] = {}


class HiveBase:
    """The connection and the lookups every part shares; see :class:`HiveMetastore` for the
    arguments."""

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
        """The metastore's URIs and settings (``thrift://host:9083``)."""
        return str(self._address)

    @property
    def has_password(self) -> bool:
        """False: a Hive Metastore's URL holds no password (SASL is the transport's)."""
        return False

    def connect_url(self) -> str:
        """:attr:`url`: it holds no secret."""
        return self.url

    def close(self) -> None:
        """Close the thrift connection (reopened on the next call)."""
        self._connection.close()

    def __enter__(self: _Hive) -> _Hive:
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
                raise InternalCallError() from None
            raise MetastoreError(f"the Hive Metastore at {self.url} failed {method}: {exc}", url=self.url) from None
        except TException as exc:  # MetaException and the other declared refusals
            raise MetastoreError(f"the Hive Metastore at {self.url} refused {method}: "
                                 f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}",
                                 url=self.url) from None

    @staticmethod
    def _ttypes() -> Any:
        from pymetastore.hive_metastore import ttypes

        return ttypes

    # --- tables ------------------------------------------------------------------------------
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

    def _table_names(self) -> dict[str, list[str]]:
        """Every database's table names (one call per database), each remembered by its id."""
        names = {db: list(self._call("get_all_tables", db)) for db in self._call("get_all_databases")}
        for db, tables in names.items():
            for table in tables:
                name = f"{db}.{table}".lower()
                self._names.setdefault(table_id_of(name), name)
        return names

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

    def _not_open(self, txn_id: int, what: str, exc: Any) -> TransactionStateError:
        message = getattr(exc, "message", None) or str(exc)
        state = ABORTED if "abort" in message.lower() else None
        return TransactionStateError(
            f"cannot {what} transaction {txn_id}: the Hive Metastore at {self.url} says: {message} (a transaction "
            "whose heartbeats stopped for longer than hive.txn.timeout is aborted by the metastore)",
            txn_id=int(txn_id), state=state)
