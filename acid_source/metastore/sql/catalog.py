"""The SQL store's catalog: which tables exist, where they live and how they are laid out."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping

import pyarrow as pa
from sqlalchemy import and_, delete, insert, or_, select, update

from ...errors import (
    InvalidArgumentError,
    StoreBehindStorageError,
    TableExistsError,
    TableNotRegisteredError,
    TransactionStateError,
)
from ..arguments import as_id
from ..constants import ADOPT, COMMITTED, OPEN
from ..records import AdoptedHistory
from ..tableinfo import (
    TableInfo,
    deserialize_schema,
    normalize_location,
    normalize_name,
    serialize_schema,
    table_properties,
    validate_layout,
)
from .base import StoreBase, chunks
from .schema import sequences, tables, txn_components, txn_write_ids, txns


def table_info(row) -> TableInfo:
    """A :class:`TableInfo` from a row of ``acidorc_tables`` (or anything with its columns)."""
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


class _Values:
    """Attribute access to a dict of column values, to build a TableInfo before a re-read."""

    def __init__(self, values: dict):
        self.__dict__.update(values)


def _same_registration(row, values: dict) -> bool:
    return all(getattr(row, k) == values[k] for k in ("name", "location", "schema_ipc", "created_at"))


class CatalogMixin(StoreBase):
    """Create, find, list and drop tables (metadata only: no directory is touched)."""

    def create_table(self, location: str | os.PathLike, schema: pa.Schema, *, name: str | None = None,
                     partition_columns: Iterable[str] = (), bucket_columns: Iterable[str] = (),
                     num_buckets: int = 0, insert_only: bool = False, compression: str = "zlib",
                     bucketing_version: int = 2, properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False, adopted: AdoptedHistory | None = None) -> TableInfo:
        """Register a table (metadata only: no directory is created).

        Raises :class:`TableExistsError` when the location or the name is taken; with
        ``if_not_exists`` the table already registered at that location (and, if given, under
        that name) is returned instead. ``adopted``: the history on storage to register with
        it, in the same database transaction (:class:`AdoptedHistory`).
        """
        loc = normalize_location(location)
        nm = normalize_name(name)
        parts, buckets, comp = validate_layout(schema, partition_columns, bucket_columns, num_buckets,
                                               compression, bucketing_version)
        props = table_properties(bool(insert_only), comp, bucketing_version, properties)
        values = {
            "name": nm, "location": loc, "schema_ipc": serialize_schema(schema),
            "partition_columns": json.dumps(list(parts)), "bucket_columns": json.dumps(list(buckets)),
            "num_buckets": num_buckets, "insert_only": bool(insert_only), "compression": comp,
            "bucketing_version": bucketing_version, "properties": json.dumps(props), "created_at": self.clock(),
            "write_id_hwm": 0,
        }
        created: list[int] = []  # the id this call inserted, should a re-run find its own row

        def op(conn):
            clash = [tables.c.location == loc] + ([tables.c.name == nm] if nm is not None else [])
            for row in conn.execute(select(tables).where(or_(*clash))).all():
                if row.table_id in created and _same_registration(row, values):
                    return table_info(row)  # our COMMIT went through but its answer was lost
                if row.location == loc and (nm is None or row.name == nm) and if_not_exists:
                    return table_info(row)
                if row.location == loc:
                    raise TableExistsError(
                        f"a table is already registered at {loc} (id {row.table_id}, name {row.name!r})",
                        location=loc, name=row.name)
                raise TableExistsError(f"table name {nm!r} is already used by the table at {row.location}",
                                       location=row.location, name=nm)
            table_id = self._next(conn, "table_id")
            created.append(table_id)
            if adopted is not None:
                values["write_id_hwm"] = adopted.write_id
            conn.execute(insert(tables).values(table_id=table_id, **values))
            if adopted is not None:
                self._adopt(conn, table_id, loc, adopted)
            return table_info(_Values(dict(values, table_id=table_id)))

        return self._run(op, write=True, what=f"create table {loc}")

    def _adopt(self, conn, table_id: int, location: str, adopted: AdoptedHistory) -> None:
        """Record an adopted history (inside :meth:`create_table`'s database transaction)."""
        states: dict[int, str] = {}  # every reader's transaction list hides outputs of these
        for chunk in chunks(sorted(set(adopted.txn_ids))):
            states.update(conn.execute(select(txns.c.txn_id, txns.c.state).where(
                txns.c.txn_id.in_(chunk), txns.c.state != COMMITTED)).all())
        if states:
            shown = [f"{d} (transaction {t} is {states[t]} here)" for d, t in adopted.directories if t in states]
            raise StoreBehindStorageError(
                f"cannot adopt the history of {location} into {self.url}: compaction outputs on storage carry "
                f"transaction ids this store has handed out to transactions that are not committed, so every "
                f"reader would ignore them: {', '.join(shown[:3])}. Adopt the table into a new transaction store "
                "(metastore_url), whose transaction ids all lie below them", location=location,
                directories=tuple(d for d, t in adopted.directories if t in states), url=self.url)
        top = max(adopted.txn_ids, default=0)
        if self._current(conn, "txn_id") < top:  # ids are never reused: only ever raised
            conn.execute(update(sequences).where(sequences.c.name == "txn_id").values(value=top))
        if adopted.write_id <= 0:
            return
        txn_id = self._next(conn, "txn_id")
        start_seq = self._current(conn, "commit_seq")
        seq = self._next(conn, "commit_seq")
        now = self.clock()
        conn.execute(insert(txns).values(
            txn_id=txn_id, state=COMMITTED, user_name="", host=socket.gethostname()[:255], pid=os.getpid(),
            description=f"adopt the history on storage of {location} (write ids up to {adopted.write_id})",
            started_at=now, last_heartbeat=now, start_seq=start_seq, ended_at=now, commit_seq=seq,
            operation=ADOPT))
        conn.execute(insert(txn_write_ids).values(txn_id=txn_id, table_id=table_id, write_id=adopted.write_id))
        for partition in sorted(set(adopted.partitions)):
            conn.execute(insert(txn_components).values(txn_id=txn_id, table_id=table_id, partition_path=partition))

    def _find(self, conn, location, name, table_id, *, lock: bool = False):
        if location is None and name is None and table_id is None:
            raise InvalidArgumentError("location", "give a table location, name or id")
        where = []
        if location is not None:
            where.append(tables.c.location == normalize_location(location))
        if name is not None:
            where.append(tables.c.name == normalize_name(name))
        if table_id is not None:
            where.append(tables.c.table_id == as_id(table_id, "table_id"))
        stmt = select(tables).where(and_(*where))
        return conn.execute(stmt.with_for_update() if lock else stmt).first()

    @staticmethod
    def _missing(location, name, table_id) -> TableNotRegisteredError:
        return TableNotRegisteredError(location=None if location is None else normalize_location(location),
                                name=normalize_name(name), table_id=table_id)

    def new_table_place(self, path: str, name: str | None) -> tuple[str, str | None]:
        """Where a write that creates a table puts it, and its name: here, where it was asked."""
        return path, name

    def get_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                  table_id: int | None = None) -> TableInfo:
        """The table at ``location`` / called ``name`` / with ``table_id`` (all given must match)."""
        row = self._run(lambda conn: self._find(conn, location, name, table_id), write=False,
                        what="look up a table")
        if row is None:
            raise self._missing(location, name, table_id)
        return table_info(row)

    def find_table(self, location: str | os.PathLike) -> TableInfo | None:
        """The table registered at ``location``, or None."""
        row = self._run(lambda conn: self._find(conn, location, None, None), write=False, what="look up a table")
        return None if row is None else table_info(row)

    def list_tables(self) -> list[TableInfo]:
        """Every registered table, in the order they were created."""
        rows = self._run(lambda conn: conn.execute(select(tables).order_by(tables.c.table_id)).all(),
                         write=False, what="list tables")
        return [table_info(r) for r in rows]

    def drop_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                   table_id: int | None = None, if_exists: bool = False) -> TableInfo | None:
        """Forget a table and its write-id records. Metadata only: files stay where they are.

        Refused (:class:`TransactionStateError`) while an open transaction holds a write id on it.
        Returns the dropped table, or None when it did not exist and ``if_exists`` is set.
        """
        dropped: list[TableInfo] = []  # what this call deleted, should a re-run find nothing

        def op(conn):
            row = self._find(conn, location, name, table_id, lock=True)
            if row is None:
                if dropped:  # our COMMIT went through but its answer was lost
                    return dropped[0]
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
            dropped[:] = [table_info(row)]
            return dropped[0]

        return self._run(op, write=True, what="drop a table")
