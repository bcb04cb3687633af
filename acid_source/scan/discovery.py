"""What the data files of a table say: whether it is full-ACID or insert-only, and the schema
of its data columns (for tables the transaction store does not describe)."""

from __future__ import annotations

import pyarrow as pa

from ..errors import SchemaError
from ..layout.acid_state import get_acid_state
from ..layout.names import parse_dir_name
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY, TableLayout, data_files
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..orc.files import OrcFile, with_microsecond_timestamps


def _candidate_files(layout: TableLayout, write_ids: ValidWriteIdList, txns: ValidTxnList):
    """Data files to learn the schema from, newest first: the snapshot's own files, then any."""
    storage = layout.storage
    for part in reversed(layout.partitions):
        state = get_acid_state(storage, part.path, write_ids, txns, layout.listings[part.path])
        dirs = [d for d in reversed(state.insert_deltas)] + ([state.base] if state.base else [])
        for d in dirs:
            for f in data_files(storage, d.path):
                if f.size > 0:
                    yield f, d.parsed.kind
        for f in reversed(state.originals):
            yield f, "original"
    for part in reversed(layout.partitions):
        for e in reversed(layout.listings[part.path]):
            parsed = parse_dir_name(e.name) if e.is_dir else None
            if parsed is not None and parsed.kind != "delete_delta":
                for f in data_files(storage, e.path):
                    if f.size > 0:
                        yield f, parsed.kind


def detect_table_kind(layout: TableLayout, write_ids, txns) -> str:
    """Full ACID if any delete delta exists or any data file holds ACID events."""
    for entries in layout.listings.values():
        if any(e.is_dir and e.name.startswith("delete_delta_") for e in entries):
            return FULL_ACID
    for f, _ in _candidate_files(layout, write_ids, txns):
        return FULL_ACID if OrcFile(layout.storage, f.path).is_acid else INSERT_ONLY
    return FULL_ACID


def infer_data_schema(layout: TableLayout, write_ids, txns) -> pa.Schema:
    """The table's data columns, from the newest data file: the ``row`` struct of an ACID file,
    or the top-level columns of an original / insert-only file."""
    for f, _ in _candidate_files(layout, write_ids, txns):
        orc = OrcFile(layout.storage, f.path)
        schema = orc.schema
        if orc.is_acid:
            row_type = schema.field(5).type
            if not pa.types.is_struct(row_type):
                raise SchemaError(f"{orc.shown_path}: the ACID 'row' column is {row_type}, not a struct",
                                  path=orc.shown_path)
            return with_microsecond_timestamps(pa.schema(list(row_type)))
        return with_microsecond_timestamps(schema)
    raise SchemaError(
        f"{layout.storage.url}: the table has no data files to infer a schema from; "
        "pass one with .schema(...)"
    )


