"""The Hive Metastore's catalog: acidorc's tables are the HMS's transactional ORC tables
(``db.table``; the location from ``sd.location``, the layout from the storage descriptor and
the table's properties)."""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable, Mapping

import pyarrow as pa

from ...errors import (
    InvalidArgumentError,
    MetastoreError,
    NotAnAcidTableError,
    SchemaError,
    TableExistsError,
    TableNotRegisteredError,
    UnsupportedOperationError,
)
from ..records import AdoptedHistory
from ..tableinfo import TABLE_NAME, TableInfo, normalize_location, table_properties, validate_layout
from .base import HiveBase
from .convert import ORC_INPUT_FORMAT, ORC_OUTPUT_FORMAT, ORC_SERDE, hive_type, hms_location, split_name


class CatalogMixin(HiveBase):
    """Create, find, list and drop tables in the HMS (metadata only: no directory is touched)."""

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
                     if_not_exists: bool = False, adopted: AdoptedHistory | None = None) -> TableInfo:
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
            cols=cols, location=hms_location(loc), inputFormat=ORC_INPUT_FORMAT, outputFormat=ORC_OUTPUT_FORMAT,
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
            raise InvalidArgumentError("name", f"a new table in the Hive Metastore at {self.url} needs a name: "
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
