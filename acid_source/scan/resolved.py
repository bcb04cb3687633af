"""A table resolved for one query: where it is, what the store says about it, the snapshot,
and the listing taken after the snapshot. Built once per query by :mod:`acid_source.resolve`
and handed to the planner, which never reads options or calls the store itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..layout.table_dirs import TableLayout
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..storage import Storage
from .discovery import infer_data_schema
from .splits import ROW_ID_COLUMN, ROW_ID_TYPE


@dataclass(frozen=True)
class SnapshotSpec:
    """Which snapshot a read wants: the latest (all None), a version (write id), a point in
    time (UTC epoch seconds), or expert snapshot strings."""

    version_as_of: int | None = None
    timestamp_as_of: float | None = None
    write_ids: ValidWriteIdList | None = None
    txns: ValidTxnList | None = None


def nullable(schema: pa.Schema) -> pa.Schema:
    """Hive columns are nullable; so is every column acidorc reads or stores."""
    return pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)


@dataclass
class ResolvedTable:
    storage: Storage
    location: str
    layout: TableLayout
    write_ids: ValidWriteIdList
    txns: ValidTxnList
    kind: str  # "full" | "insert_only"
    info: Any = None  # the store's TableInfo, when the table is registered
    version: int | None = None  # the newest write id the snapshot sees, when the store knows it
    _data_schema: pa.Schema | None = field(default=None, repr=False)

    @property
    def registered(self) -> bool:
        return self.info is not None

    @property
    def partition_columns(self) -> list[str]:
        if self.info is not None:
            return list(self.info.partition_columns)
        return list(self.layout.partition_columns)

    def data_schema(self) -> pa.Schema:
        """The table's columns (partition columns included for a registered table): the store's
        schema, else the newest data file's columns."""
        if self._data_schema is None:
            if self.info is not None:
                self._data_schema = nullable(self.info.schema)
            else:
                self._data_schema = nullable(infer_data_schema(self.layout, self.write_ids, self.txns))
        return self._data_schema

    def schema(self, include_row_id: bool = False) -> pa.Schema:
        """What a read returns: data columns, partition columns, then ROW__ID if asked."""
        from ..layout.table_dirs import infer_partition_type

        if self.info is not None:
            fields = list(nullable(self.info.read_schema))
        else:
            part_names = {c.lower() for c in self.layout.partition_columns}
            fields = [f for f in self.data_schema() if f.name.lower() not in part_names]
            for i, name in enumerate(self.layout.partition_columns):
                values = [p.raw_values[i] for p in self.layout.partitions]
                fields.append(pa.field(name, infer_partition_type(values)))
        if include_row_id:
            fields.append(pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
        return pa.schema(fields)
