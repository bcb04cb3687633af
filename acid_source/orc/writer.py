"""Writing ACID ORC files fast - insert events (:class:`InsertFileWriter`) and delete events
(:class:`DeleteFileWriter`): pyarrow's C++ ORC writer for the data, then the footer
metadata Hive requires (``hive.acid.key.index``, ``hive.acid.stats``, ``hive.acid.version``),
which pyarrow cannot write, appended to the file footer.

How the metadata gets in without re-encoding anything: the ORC footer is a protobuf message
stored as a stream of compression chunks. Protobuf merges concatenated encodings of the same
message (repeated fields append), and an ORC chunk may always be stored "original"
(uncompressed, header bit 0 set). So we append one original chunk holding the encoded
``UserMetadataItem`` fields (footer field 5) and rewrite the small, never-compressed
PostScript with the new footer length.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from ..errors import CorruptFileError, InvalidArgumentError
from ..layout import bucket_codec
from ..layout.row_ids import descent, first_duplicate
from ..layout.row_ids import order as row_id_order
from .files import ACID_STATS, ACID_VERSION, KEY_INDEX, OP_DELETE, OP_INSERT, format_key_index, map_timestamps

DELTA_STRIPE_SIZE = 8 * 1024 * 1024  # Hive divides stripe sizes by 8 for delta files
BUFFER_ROWS = 65536  # rows queued per file before they are encoded
BUFFER_BYTES = 8 * 1024 * 1024  # ... or this many bytes, whichever comes first
_FOOTER_METADATA_FIELD = 5
_POSTSCRIPT_FOOTER_LENGTH_FIELD = 1
MAX_CHUNK = (1 << 23) - 1  # a chunk header holds the length in 23 bits


def acid_schema(row_type: pa.StructType) -> pa.Schema:
    """The ACID event schema around a table's row struct (HIVE_ACID_FORMAT.md 4.1)."""
    return pa.schema([
        pa.field("operation", pa.int32()),
        pa.field("originalTransaction", pa.int64()),
        pa.field("bucket", pa.int32()),
        pa.field("rowId", pa.int64()),
        pa.field("currentTransaction", pa.int64()),
        pa.field("row", row_type),
    ])


# --- protobuf encoding, just what the footer patch needs -------------------------------------
def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def length_delimited(field: int, payload: bytes) -> bytes:
    return varint((field << 3) | 2) + varint(len(payload)) + payload


def encode_user_metadata(items: dict[str, bytes]) -> bytes:
    """Footer field 5 entries: ``UserMetadataItem { name = 1; value = 2; }``."""
    out = b""
    for name, value in items.items():
        item = length_delimited(1, name.encode("utf-8")) + length_delimited(2, value)
        out += length_delimited(_FOOTER_METADATA_FIELD, item)
    return out


def _set_varint_field(message: bytes, field: int, value: int) -> bytes:
    """Re-encode ``message`` with varint ``field`` set to ``value`` (other fields unchanged)."""
    out = bytearray()
    pos = 0
    while pos < len(message):
        key, end = read_varint(message, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, end = read_varint(message, end)
        elif wire == 2:
            length, start = read_varint(message, end)
            end = start + length
        elif wire == 1:
            end += 8
        elif wire == 5:
            end += 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        if number != field:
            out += message[pos:end]
        pos = end
    return varint((field << 3) | 0) + varint(value) + bytes(out)


def _postscript_fields(ps: bytes) -> dict[int, int]:
    fields, pos = {}, 0
    while pos < len(ps):
        key, pos = read_varint(ps, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields[number], pos = read_varint(ps, pos)
        elif wire == 2:
            length, pos = read_varint(ps, pos)
            pos += length
        else:
            raise ValueError(f"unexpected wire type {wire} in the ORC postscript")
    return fields


def append_user_metadata(path: str, items: dict[str, bytes]) -> None:
    """Add user metadata to the footer of a finished local ORC file, in place."""
    extra = encode_user_metadata(items)
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(size - 1)
        ps_len = f.read(1)[0]
        f.seek(size - 1 - ps_len)
        postscript = f.read(ps_len)
        fields = _postscript_fields(postscript)
        footer_len, compression = fields.get(1, 0), fields.get(2, 0)
        if compression == 0:
            appended = extra  # uncompressed streams have no chunk headers
        else:
            # Java's reader rejects chunks larger than the file's compression block size
            limit = min(MAX_CHUNK, fields.get(3, 256 * 1024))
            appended = b""
            for start in range(0, len(extra), limit):
                chunk = extra[start:start + limit]
                header = (len(chunk) << 1) | 1  # "original" chunk
                appended += header.to_bytes(3, "little") + chunk
        new_ps = _set_varint_field(postscript, _POSTSCRIPT_FOOTER_LENGTH_FIELD, footer_len + len(appended))
        if len(new_ps) > 255:
            raise CorruptFileError(path, "ORC postscript would exceed 255 bytes")
        footer_end = size - 1 - ps_len
        f.seek(footer_end)
        f.write(appended + new_ps + bytes([len(new_ps)]))
        f.truncate()


# --- writing ACID event files ----------------------------------------------------------------
def without_time_zones(schema: pa.Schema) -> pa.Schema:
    return map_timestamps(schema, lambda t: pa.timestamp(t.unit))


def orc_writer(path: str | BinaryIO, compression: str, stripe_size: int) -> paorc.ORCWriter:
    # dictionary_key_size_threshold as Hive's (Java ORC) writer: pyarrow's 0.0 never
    # dictionary-encodes strings (files ~25% larger)
    return paorc.ORCWriter(path, stripe_size=stripe_size, compression=compression,
                           dictionary_key_size_threshold=0.8)


def _finish_acid_file(path: str, last_keys: list[tuple[int, int, int]], inserts: int, deletes: int) -> None:
    """The footer metadata Hive requires of every ACID file, derived from what was written:
    the last event key of each stripe, the event counts by kind, the ACID version."""
    append_user_metadata(path, {
        KEY_INDEX: format_key_index(last_keys).encode(),
        ACID_STATS: f"{inserts},0,{deletes}".encode(),
        ACID_VERSION: b"2",
    })


@dataclass(frozen=True)
class WrittenFile:
    """One file written: a data file, a delete-event file or a compaction output. A writer
    closes it where it wrote it; the task that moves it to its table directory records it
    :meth:`placed` in its data object."""

    path: str  # full path
    rows: int
    size: int = 0  # bytes
    partition: str = ""  # its data object, once placed: "" or "col=value/..."

    def placed(self, path: str, partition: str) -> "WrittenFile":
        """The same file at ``path``, in data object ``partition``."""
        return dataclasses.replace(self, path=path, partition=partition)


def _check_writer_ids(path: str, bucket_id: int, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> None:
    """Every event's bucket property must name the writer id of the ``bucket_N`` file."""
    writers = bucket_codec.decode_writer_ids(b)
    if (writers != bucket_id).any():
        i = int(np.flatnonzero(writers != bucket_id)[0])
        raise InvalidArgumentError("row_ids", f"ROW__ID ({o[i]}, {b[i]}, {r[i]}) belongs to bucket "
                                              f"{writers[i]}, but {path} holds bucket {bucket_id}")


class InsertFileWriter:
    """One ``bucket_N`` file of insert events of write id ``write_id`` (operation 0,
    sequential row ids from 0), written to a local path; call :meth:`close` to finish it.
    With ``plain=True`` the rows are written as they are (insert-only tables)."""

    def __init__(self, path: str, row_schema: pa.Schema, write_id: int, bucket_property: int,
                 compression: str = "zlib", stripe_size: int = DELTA_STRIPE_SIZE, plain: bool = False):
        self.path = path
        self.plain = plain
        self.input_schema = row_schema
        # Spark's timestamp (with a time zone) would become ORC "timestamp with local time zone",
        # which is not Hive's timestamp and Hive 2/3 readers reject: store UTC wall-clock values
        row_schema = without_time_zones(row_schema)
        self.row_schema = row_schema
        self.row_type = pa.struct(list(row_schema))
        self.schema = row_schema if plain else acid_schema(self.row_type)
        self.write_id = write_id
        self.bucket_property = bucket_property
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._writer = orc_writer(path, compression, stripe_size)

    def write(self, batch: pa.RecordBatch) -> None:
        """Queue rows; they are encoded in chunks of about BUFFER_ROWS rows (a partitioned
        write hands each file many small slices - encoding each alone cost ~20% more)."""
        if batch.num_rows == 0:
            return
        if batch.schema != self.row_schema:
            batch = batch.cast(self.row_schema)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        if self._pending_rows >= BUFFER_ROWS or self._pending_bytes >= BUFFER_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        n = table.num_rows
        if self.plain:
            self._writer.write(table)
            self.rows += n
            return
        row = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(self.row_type))
        events = pa.RecordBatch.from_arrays([
            pa.array(np.full(n, OP_INSERT, dtype=np.int32)),
            pa.array(np.full(n, self.write_id, dtype=np.int64)),
            pa.array(np.full(n, self.bucket_property, dtype=np.int32)),
            pa.array(np.arange(self.rows, self.rows + n, dtype=np.int64)),
            pa.array(np.full(n, self.write_id, dtype=np.int64)),
            row,
        ], schema=self.schema)
        self._writer.write(pa.Table.from_batches([events]))
        self.rows += n

    def close(self) -> WrittenFile:
        _close_orc(self)
        if self.plain:
            return WrittenFile(self.path, self.rows, os.path.getsize(self.path))
        stripe_rows = _stripe_row_counts(self.path)
        last_ids = np.cumsum(stripe_rows) - 1
        keys = [(self.write_id, self.bucket_property, int(r)) for r in last_ids]
        _finish_acid_file(self.path, keys, inserts=self.rows, deletes=0)
        return WrittenFile(self.path, self.rows, os.path.getsize(self.path))


class DeleteFileWriter:
    """One ``delete_delta_W_W_S/bucket_N`` file: a delete event of write id ``write_id`` for
    each ROW__ID given (operation 2, the row's originalTransaction, bucket and rowId,
    currentTransaction ``write_id``, a null ``row`` struct of the table's row type - the shape
    Hive 3's split-update writes, HIVE_ACID_FORMAT.md 6.2), written to a local path.

    Hive's readers require the events of a file sorted by ROW__ID and every ROW__ID's bucket to
    name writer ``bucket_id`` (the N of the file name). Each :meth:`write` call is sorted here;
    successive calls must ascend (a Spark task sorted by ROW__ID streams them so), and a
    ROW__ID given twice or one of another bucket is an InvalidArgumentError. Call
    :meth:`close` to finish the file (an empty one when nothing was given, which callers drop).
    """

    def __init__(self, path: str, row_schema: pa.Schema, write_id: int, bucket_id: int,
                 compression: str = "zlib", stripe_size: int = DELTA_STRIPE_SIZE):
        self.path = path
        self.row_type = pa.struct(list(without_time_zones(row_schema)))
        self.schema = acid_schema(self.row_type)
        self.write_id = write_id
        self.bucket_id = bucket_id
        self.rows = 0
        self._last_key: tuple[int, int, int] | None = None
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_rows = 0
        self._writer = orc_writer(path, compression, stripe_size)

    def write(self, row_ids) -> None:
        """Queue delete events for ``row_ids``: a ROW__ID struct array or column (writeId,
        bucketId, rowId - as a read with includeRowId returns them), or three integer arrays
        (originalTransaction, bucket, rowId)."""
        o, b, r = _row_id_arrays(row_ids)
        if len(o) == 0:
            return
        sort = row_id_order(o, b, r)
        o, b, r = o[sort], b[sort], r[sort]
        self._check(o, b, r)
        self._pending.append((o, b, r))
        self._pending_rows += len(o)
        self._last_key = (int(o[-1]), int(b[-1]), int(r[-1]))
        if self._pending_rows >= BUFFER_ROWS:
            self._flush()

    def _check(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> None:
        _check_writer_ids(self.path, self.bucket_id, o, b, r)
        twice = first_duplicate(o, b, r)
        first = (int(o[0]), int(b[0]), int(r[0]))
        if twice is not None:
            problem = f"ROW__ID {twice} is given twice"
        elif self._last_key is not None and first <= self._last_key:
            problem = f"ROW__IDs must ascend from one write to the next: {first} follows {self._last_key}"
        else:
            return
        raise InvalidArgumentError("row_ids", problem)

    def _flush(self) -> None:
        if not self._pending:
            return
        o, b, r = (np.concatenate([p[i] for p in self._pending]) for i in range(3))
        self._pending, self._pending_rows = [], 0
        n = len(o)
        events = pa.RecordBatch.from_arrays([
            pa.array(np.full(n, OP_DELETE, dtype=np.int32)),
            pa.array(o), pa.array(b), pa.array(r),
            pa.array(np.full(n, self.write_id, dtype=np.int64)),
            pa.nulls(n, self.row_type),
        ], schema=self.schema)
        self._writer.write(pa.Table.from_batches([events]))
        self.rows += n

    def close(self) -> WrittenFile:
        _close_orc(self)
        _finish_acid_file(self.path, _last_keys_per_stripe(self.path), inserts=0, deletes=self.rows)
        return WrittenFile(self.path, self.rows, os.path.getsize(self.path))


def _close_orc(writer) -> None:
    """Flush what an insert or delete writer holds and close its ORC file (a valid, empty file
    when nothing was written)."""
    writer._flush()
    if writer.rows == 0:
        writer._writer.write(writer.schema.empty_table())
    writer._writer.close()


def _row_id_arrays(row_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(originalTransaction int64, bucket int32, rowId int64) from a ROW__ID struct column or
    three arrays; nulls and values out of range are InvalidArgumentErrors."""
    if isinstance(row_ids, pa.ChunkedArray):
        row_ids = row_ids.combine_chunks()
    if isinstance(row_ids, pa.StructArray):
        if row_ids.type.num_fields != 3:
            raise InvalidArgumentError("row_ids", f"a ROW__ID struct has 3 fields, not {row_ids.type}")
        if row_ids.null_count:
            raise InvalidArgumentError("row_ids", "a ROW__ID is null")
        parts = row_ids.flatten()
    elif isinstance(row_ids, (tuple, list)) and len(row_ids) == 3:
        parts = list(row_ids)
    else:
        raise InvalidArgumentError("row_ids", "expected a ROW__ID struct array or three integer arrays, "
                                              f"not {type(row_ids).__name__}")
    out = []
    for part, dtype in zip(parts, (np.int64, np.int32, np.int64)):
        if isinstance(part, pa.ChunkedArray):
            part = part.combine_chunks()
        if isinstance(part, pa.Array):
            if part.null_count:
                raise InvalidArgumentError("row_ids", "a ROW__ID field is null")
            part = part.to_numpy(zero_copy_only=False)
        part = np.asarray(part)
        if part.dtype.kind not in "iu":
            raise InvalidArgumentError("row_ids", f"ROW__ID fields are integers, not {part.dtype}")
        info = np.iinfo(dtype)
        if len(part) and (part.min() < info.min or part.max() > info.max):
            raise InvalidArgumentError("row_ids", f"a ROW__ID field is outside the range of {np.dtype(dtype)}")
        out.append(part.astype(dtype, copy=False))
    if not len(out[0]) == len(out[1]) == len(out[2]):
        raise InvalidArgumentError("row_ids", "the three ROW__ID arrays differ in length")
    return out[0], out[1], out[2]


def _stripe_row_counts(path: str) -> list[int]:
    import pyorc

    with open(path, "rb") as f:
        reader = pyorc.Reader(f)
        return [len(reader.read_stripe(i)) for i in range(reader.num_of_stripes)]


def _last_keys_per_stripe(path: str) -> list[tuple[int, int, int]]:
    """The last (originalTransaction, bucket, rowId) of each stripe of a finished ACID file,
    read back from the file: pyarrow decides where stripes end."""
    import pyorc

    keys = []
    with open(path, "rb") as f:
        reader = pyorc.Reader(f, column_indices=[1, 2, 3])
        for i in range(reader.num_of_stripes):
            stripe = reader.read_stripe(i)
            if len(stripe) == 0:
                continue
            stripe.seek(len(stripe) - 1)
            original, bucket, row_id = next(stripe)
            keys.append((int(original), int(bucket), int(row_id)))
    return keys


BASE_STRIPE_SIZE = 64 * 1024 * 1024  # Hive's default stripe size, used for bases (deltas get 1/8)


class KeyedEventWriter:
    """One ``bucket_N`` file of ACID events whose ROW__IDs are given rather than generated:
    what compaction writes (HIVE_ACID_FORMAT.md 8.1). :meth:`write_rows` turns rows into insert
    events under the ROW__IDs they already have (operation 0, ``currentTransaction`` = their
    ``originalTransaction``, as a major compaction keeps them); :meth:`write_events` writes
    events exactly as given (a minor compaction's inserts or deletes).

    Readers merge and binary-search files assuming ROW__ID order, so events must arrive in
    ascending ``(originalTransaction, bucket, rowId)`` order across all calls - strictly
    ascending with ``unique_keys`` (a base holds each row once), else non-decreasing (events of
    several transactions may share a ROW__ID); anything else is an InvalidArgumentError naming
    the offending keys. Every event must belong to writer ``bucket_id``. :meth:`close` adds
    the key index, the event counts by kind and the ACID version to the footer."""

    def __init__(self, path: str, row_schema: pa.Schema, bucket_id: int, *, compression: str = "zlib",
                 stripe_size: int = DELTA_STRIPE_SIZE, unique_keys: bool = True):
        self.path = path
        self.row_schema = without_time_zones(row_schema)
        self.row_type = pa.struct(list(self.row_schema))
        self.schema = acid_schema(self.row_type)
        self.bucket_id = bucket_id
        self.unique_keys = unique_keys
        self.rows = 0
        self.counts = [0, 0, 0]  # inserts, updates, deletes
        self._last_key: tuple[int, int, int] | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._writer = orc_writer(path, compression, stripe_size)

    def write_rows(self, row_ids, rows: pa.RecordBatch) -> None:
        """Insert events for ``rows`` (the table's data columns) under ``row_ids`` (a ROW__ID
        struct array or three integer arrays, one per row)."""
        o, b, r = _row_id_arrays(row_ids)
        n = len(o)
        if n != rows.num_rows:
            raise InvalidArgumentError("row_ids", f"{n} ROW__IDs for {rows.num_rows} rows")
        if n == 0:
            return
        if rows.schema != self.row_schema:
            rows = rows.cast(self.row_schema)
        row = pa.StructArray.from_arrays(list(rows.columns), fields=list(self.row_type))
        self._queue(np.full(n, OP_INSERT, dtype=np.int32), o, b, r, o, row)

    def write_events(self, events: pa.RecordBatch) -> None:
        """Events as they are: the six ACID columns (canonical names), the ``row`` struct of
        the table's columns (null for delete events)."""
        if events.num_rows == 0:
            return
        op = np.asarray(events.column("operation").to_numpy(zero_copy_only=False), dtype=np.int32)
        o, b, r = _row_id_arrays(tuple(events.column(c) for c in ("originalTransaction", "bucket", "rowId")))
        c = np.asarray(events.column("currentTransaction").to_numpy(zero_copy_only=False), dtype=np.int64)
        row = events.column("row")
        if row.type != self.row_type:
            row = row.cast(self.row_type)
        self._queue(op, o, b, r, c, row)

    def _queue(self, op, o, b, r, c, row) -> None:
        self._check(o, b, r)
        for kind in range(3):
            self.counts[kind] += int(np.count_nonzero(op == kind))
        batch = pa.RecordBatch.from_arrays(
            [pa.array(op), pa.array(o), pa.array(b), pa.array(r), pa.array(c), row], schema=self.schema)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        self._last_key = (int(o[-1]), int(b[-1]), int(r[-1]))
        if self._pending_rows >= BUFFER_ROWS or self._pending_bytes >= BUFFER_BYTES:
            self._flush()

    def _check(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> None:
        _check_writer_ids(self.path, self.bucket_id, o, b, r)
        bad = descent(o, b, r, strict=self.unique_keys, last=self._last_key)
        if bad is not None:
            raise InvalidArgumentError(
                "row_ids", f"ROW__IDs must ascend{' strictly' if self.unique_keys else ''}: "
                           f"{bad[1]} follows {bad[0]} in {self.path}")

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        self._writer.write(table)
        self.rows += table.num_rows

    def close(self) -> WrittenFile:
        _close_orc(self)
        inserts, updates, deletes = self.counts
        append_user_metadata(self.path, {
            KEY_INDEX: format_key_index(_last_keys_per_stripe(self.path)).encode(),
            ACID_STATS: f"{inserts},{updates},{deletes}".encode(),
            ACID_VERSION: b"2",
        })
        return WrittenFile(self.path, self.rows, os.path.getsize(self.path))
