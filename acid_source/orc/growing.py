"""The growing bucket file of a streaming transaction batch (HIVE_ACID_FORMAT.md 3.4, 4.5):
insert events of several write ids appended to one ORC file, every commit covered by an
**intermediate footer** whose end is recorded in the ``<file>_flush_length`` side file.

pyarrow's ORC writer has no intermediate footers (and pyorc's ``write_intermediate_footer`` does
not flush its own row buffer, so a footer may cover fewer rows than were written), so the file
is spliced: each chunk of events is encoded by pyarrow into memory as a complete one-stripe ORC
file (same schema, codec and settings as :mod:`.writer`), its stripe - self-contained - is
appended to the growing file, and a commit writes a fresh footer listing every kept stripe at its
offset in the growing file, with the merged column statistics, the stripe statistics and the
ACID user metadata. The file then ends at a complete footer: its length is the flush length.
Stripes of an aborted write id stay in the file as bytes no later footer lists.

The footer, metadata and postscript are written uncompressed: an ORC stream of a compressed
file may always be stored as "original" chunks (header bit set), no larger than the file's
compression block size, which Java's reader requires.
"""

from __future__ import annotations

import decimal
import io
import math
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from ..errors import CorruptFileError, InvalidArgumentError, SchemaError, StorageError
from .codecs import canonical_codec
from .files import ACID_STATS, ACID_VERSION, KEY_INDEX, OP_INSERT, format_key_index
from .writer import (
    BUFFER_ROWS,
    DELTA_STRIPE_SIZE,
    MAX_CHUNK,
    acid_schema,
    encode_user_metadata,
    length_delimited,
    orc_writer,
    read_varint,
    varint,
    without_time_zones,
)

__all__ = ["GrowingEventFile"]

_HEADER = b"ORC"
# pyarrow decides nothing about stripe boundaries here: every encoded chunk is one stripe, so
# its file statistics are its stripe statistics (which are otherwise compressed in the file)
_ONE_STRIPE = 1 << 62
_INT64 = (-(1 << 63), (1 << 63) - 1)

# Footer fields written here; the others (types, row index stride, writer, calendar, software
# version...) are kept as pyarrow wrote them
_F_HEADER_LENGTH, _F_CONTENT_LENGTH, _F_STRIPES, _F_TYPES, _F_METADATA, _F_ROWS, _F_STATISTICS = 1, 2, 3, 4, 5, 6, 7
_PS_FOOTER_LENGTH, _PS_METADATA_LENGTH = 1, 5

Field = tuple[int, int, Any]  # (field number, wire type, an int (varint) or bytes (anything else))


# --- protobuf, as much as the footer needs -----------------------------------------------------
def _fields(message: bytes) -> list[Field]:
    out: list[Field] = []
    pos = 0
    while pos < len(message):
        key, pos = read_varint(message, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = read_varint(message, pos)
        elif wire == 2:
            length, pos = read_varint(message, pos)
            value, pos = message[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = message[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = message[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        out.append((number, wire, value))
    return out


def _encode(fields: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        if wire == 2:
            assert isinstance(value, bytes)
            out += length_delimited(number, value)
        elif wire == 0:
            assert isinstance(value, int)
            out += varint((number << 3) | 0) + varint(value)
        else:
            assert isinstance(value, bytes)
            out += varint((number << 3) | wire) + value
    return bytes(out)


def _last(fields: list[Field]) -> dict[int, Any]:
    return {number: value for number, _, value in fields}


def _unzigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _zigzag(n: int) -> int:
    return n << 1 if n >= 0 else ((-n) << 1) - 1


# --- merging column statistics (ColumnStatistics of orc_proto) ----------------------------------
def _pick(a: dict, b: dict, field: int, smaller: bool, key=lambda v: v):
    """The smaller (or larger) of a field both sides have; None when either lacks it."""
    if field not in a or field not in b:
        return None
    first, second = key(a[field]), key(b[field])
    if isinstance(first, float) and math.isnan(first):
        return b[field]
    if isinstance(second, float) and math.isnan(second):
        return a[field]
    return a[field] if (first <= second) == smaller else b[field]


def _min_max(a: dict, b: dict, wire_type: int, key) -> list[Field]:
    """The merged minimum (field 1) and maximum (field 2), each where both sides have one."""
    out: list[Field] = []
    for field, smaller in ((1, True), (2, False)):
        v = _pick(a, b, field, smaller, key)
        if v is not None:
            out.append((field, wire_type, v))
    return out


def _double(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def _merge_int(a: dict, b: dict) -> list[Field]:
    out = _min_max(a, b, 0, _unzigzag)
    if 3 in a and 3 in b:
        total = _unzigzag(a[3]) + _unzigzag(b[3])
        if _INT64[0] <= total <= _INT64[1]:  # Java drops an overflowing sum
            out.append((3, 0, _zigzag(total)))
    return out


def _merge_double(a: dict, b: dict) -> list[Field]:
    out = _min_max(a, b, 1, _double)
    if 3 in a and 3 in b:
        out.append((3, 1, struct.pack("<d", _double(a[3]) + _double(b[3]))))
    return out


def _merge_string(a: dict, b: dict) -> list[Field]:
    """min / max, or lowerBound / upperBound where a side only had a bound (long strings):
    the merged value is exact only when it came from an exact side."""
    out: list[Field] = []
    for exact, bound, smaller in ((1, 4, True), (2, 5, False)):
        sides = [(s.get(exact, s.get(bound)), exact in s) for s in (a, b)]
        if any(v is None for v, _ in sides):
            continue
        value, is_exact = min(sides) if smaller else max(sides)
        out.append((exact if is_exact else bound, 2, value))
    if 3 in a and 3 in b:
        out.append((3, 0, _zigzag(_unzigzag(a[3]) + _unzigzag(b[3]))))
    return out


def _packed(value) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = read_varint(value, pos)
        out.append(v)
    return out


def _merge_bucket(a_fields: list[Field], b_fields: list[Field]) -> list[Field]:
    counts = [[c for n, _, v in fs if n == 1 for c in _packed(v)] for fs in (a_fields, b_fields)]
    if len(counts[0]) != len(counts[1]):
        return []
    return [(1, 2, b"".join(varint(x + y) for x, y in zip(*counts)))]


def _merge_decimal(a: dict, b: dict) -> list[Field]:
    number = lambda raw: decimal.Decimal(raw.decode())  # noqa: E731
    out = _min_max(a, b, 2, number)
    if 3 in a and 3 in b:
        with decimal.localcontext() as context:
            context.prec = 80
            total = number(a[3]) + number(b[3])
        if len(total.as_tuple().digits) <= 38:  # as Java's HiveDecimal: an overflowing sum is unknown
            out.append((3, 2, format(total, "f").encode()))
    return out


def _merge_date(a: dict, b: dict) -> list[Field]:
    return _min_max(a, b, 0, _unzigzag)


def _merge_binary(a: dict, b: dict) -> list[Field]:
    if 1 in a and 1 in b:
        return [(1, 0, _zigzag(_unzigzag(a[1]) + _unzigzag(b[1])))]
    return []


def _merge_timestamp(a: dict, b: dict) -> list[Field]:
    """min (fields 1 local ms, 3 UTC ms, 5 nanos + 1) and max (2, 4, 6) move as groups."""
    out: list[Field] = []
    for millis, utc, nanos, smaller in ((1, 3, 5, True), (2, 4, 6, False)):
        def key(s: dict):
            ms = s.get(utc, s.get(millis))
            return None if ms is None else (_unzigzag(ms), s.get(nanos, 1))
        ka, kb = key(a), key(b)
        if ka is None or kb is None:
            continue
        winner = a if (ka <= kb) == smaller else b
        out += [(f, 0, winner[f]) for f in (millis, utc, nanos) if f in winner]
    return out


def _merge_collection(a: dict, b: dict) -> list[Field]:
    out: list[Field] = []
    for field, how in ((1, min), (2, max), (3, None)):
        if field in a and field in b:
            out.append((field, 0, a[field] + b[field] if how is None else how(a[field], b[field])))
    return out


_MERGERS = {2: _merge_int, 3: _merge_double, 4: _merge_string, 6: _merge_decimal, 7: _merge_date,
            8: _merge_binary, 9: _merge_timestamp, 12: _merge_collection}


def _merge_column_statistics(a: bytes, b: bytes) -> bytes:
    """The statistics of a column over two sets of stripes, from theirs. A side without values
    contributes nothing to minima, maxima and sums; a bound one side lacks is left unknown."""
    fa, fb = _fields(a), _fields(b)
    da, db = _last(fa), _last(fb)
    ca, cb = int(da.get(1, 0)), int(db.get(1, 0))
    out: list[Field] = [(1, 0, ca + cb)]
    for number in (2, 3, 4, 5, 6, 7, 8, 9, 12):  # the typed statistics (others are left out: unknown)
        if number not in da and number not in db:
            continue
        if number not in db or number not in da:
            only, other_count = (da, cb) if number in da else (db, ca)
            if other_count == 0:
                out.append((number, 2, only[number]))
            continue
        if cb == 0 or ca == 0:
            out.append((number, 2, da[number] if cb == 0 else db[number]))
        elif number == 5:
            out.append((number, 2, _encode(_merge_bucket(_fields(da[5]), _fields(db[5])))))
        else:
            merged = _MERGERS[number](_last(_fields(da[number])), _last(_fields(db[number])))
            out.append((number, 2, _encode(merged)))
    if 10 in da or 10 in db:
        out.append((10, 0, int(bool(da.get(10)) or bool(db.get(10)))))
    if 11 in da and 11 in db:  # bytesOnDisk
        out.append((11, 0, int(da[11]) + int(db[11])))
    return _encode(out)


# --- the file -----------------------------------------------------------------------------------
@dataclass
class _Stripe:
    """One stripe in the growing file: where it is, what it holds, its last event key."""

    write_id: int
    info: bytes  # Footer field 3: StripeInformation with its offset in the growing file
    rows: int
    last_row_id: int
    statistics: list[bytes]  # ColumnStatistics per ORC column
    stripe_statistics: bytes  # Metadata field 1: the StripeStatistics message of those


@dataclass
class _Encoded:
    data: bytes
    postscript: list[Field]
    footer: list[Field]


def _tail(data: bytes) -> _Encoded:
    """The postscript and (decompressed) footer of an ORC file pyarrow wrote into memory."""
    reader = paorc.ORCFile(pa.BufferReader(data)).reader
    tail = _last(_fields(reader.serialized_file_tail()))  # FileTail { postscript = 1; footer = 2; }
    return _Encoded(data, _fields(tail[1]), _fields(tail[2]))


def _sync(f) -> None:
    """Flush ``f`` and, when it is an OS file, make its bytes durable."""
    f.flush()
    try:
        fd = f.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return
    os.fsync(fd)


class GrowingEventFile:
    """One bucket file of a streaming transaction batch: insert events of several write ids,
    every commit covered by an intermediate footer.

    ``data`` is the new, empty data file open for writing; ``side`` its ``_flush_length`` file
    (None when the batch has one write id, as Hive does), both owned by the caller. Events are
    insert events of ``bucket_property``, sorted (originalTransaction, bucket, rowId) because
    write ids never decrease and rowIds count 0, 1, 2... per write id. Rows are buffered and
    encoded as a stripe when the buffer passes ``stripe_size`` bytes or BUFFER_ROWS rows, and at
    each :meth:`flush`; a stripe is never shared by two write ids, so an aborted one's stripes
    are simply left out of every later footer.
    """

    def __init__(self, data: BinaryIO, side: BinaryIO | None, row_schema: pa.Schema, bucket_property: int, *,
                 compression: str = "zlib", stripe_size: int = DELTA_STRIPE_SIZE, path: str = "") -> None:
        self.path = path or getattr(data, "name", "") or "<stream>"
        self.input_schema = row_schema
        self.row_schema = without_time_zones(row_schema)  # Hive's timestamps: wall-clock values
        self.row_type = pa.struct(list(self.row_schema))
        self.schema = acid_schema(self.row_type)
        if not isinstance(bucket_property, int) or not 0 <= bucket_property < 1 << 31:
            raise InvalidArgumentError("bucket_property", f"expected an int32 bucket property, got {bucket_property!r}")
        if not isinstance(stripe_size, int) or stripe_size <= 0:
            raise InvalidArgumentError("stripe_size", f"expected a positive number of bytes, got {stripe_size!r}")
        self.bucket_property = bucket_property
        self.compression = canonical_codec(compression, error=InvalidArgumentError)
        self.stripe_size = stripe_size
        self._data, self._side = data, side

        empty = _tail(self._encode(self.schema.empty_table()))
        self._types = [f for f in empty.footer if f[0] == _F_TYPES]
        self._empty_statistics: list[bytes] = [v for n, _, v in empty.footer if n == _F_STATISTICS]
        self._footer_rest = [f for f in empty.footer if f[0] not in (
            _F_HEADER_LENGTH, _F_CONTENT_LENGTH, _F_STRIPES, _F_TYPES, _F_METADATA, _F_ROWS, _F_STATISTICS)]
        self._postscript_rest = [f for f in empty.postscript if f[0] not in (_PS_FOOTER_LENGTH, _PS_METADATA_LENGTH)]
        ps = _last(empty.postscript)
        self._compressed = int(ps.get(2, 0)) != 0
        self._chunk = min(MAX_CHUNK, int(ps.get(3, 256 * 1024)))

        self._stripes: list[_Stripe] = []  # every stripe no abort dropped, in file order
        self._statistics = list(self._empty_statistics)  # the file statistics over them
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = self._pending_bytes = 0
        self._write_id: int | None = None  # the write id being written (what the buffer holds)
        self._next_row_id = 0  # ... and its next rowId
        self._highest: int | None = None  # the highest write id written or discarded
        self._discarded: set[int] = set()
        self._length = 0
        self._footer_length: int | None = None  # where the last footer ends
        self._changed = True  # the kept stripes differ from what the last footer lists
        self._closed = False
        self._failed: str | None = None  # what went wrong half-way: the file takes no more writes
        with self._io("writing the ORC header"):
            self._put(_HEADER)
            if side is not None:
                side.write(bytes(8))  # Hive's first value: nothing committed yet
                _sync(side)

    # --- state ------------------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        """Rows written and not discarded (committed or not)."""
        return sum(s.rows for s in self._stripes) + self._pending_rows

    @property
    def write_ids(self) -> tuple[int, ...]:
        """The write ids with rows in the file or buffer that were not discarded, ascending."""
        ids = {s.write_id for s in self._stripes}
        if self._pending_rows and self._write_id is not None:
            ids.add(self._write_id)
        return tuple(sorted(ids))

    @property
    def length(self) -> int:
        """Where the last footer ends (0 before the first flush): the committed length."""
        return self._footer_length or 0

    # --- writing ----------------------------------------------------------------------------------
    def write(self, write_id: int, batch: pa.RecordBatch | pa.Table) -> None:
        """Queue ``batch`` (the table's columns) as insert events of ``write_id``."""
        self._check_open("write")
        if not isinstance(write_id, int) or write_id < 0:
            raise InvalidArgumentError("write_id", f"expected a write id >= 0, got {write_id!r} for {self.path}")
        if write_id in self._discarded or (self._highest is not None and write_id < self._highest):
            raise InvalidArgumentError(
                "write_id", f"write ids of a streaming file must ascend: {write_id} after "
                            f"{'aborting ' if write_id in self._discarded else ''}{self._highest} in {self.path}")
        batches = self._conform(batch)
        with self._io("writing a stripe"):
            if write_id != self._write_id:
                self._spill()  # a stripe never holds two write ids
                self._write_id, self._next_row_id = write_id, 0
            self._highest = write_id
            for b in batches:
                self._queue(b)

    def _conform(self, batch: pa.RecordBatch | pa.Table) -> list[pa.RecordBatch]:
        if not isinstance(batch, (pa.RecordBatch, pa.Table)):
            raise InvalidArgumentError("batch", f"expected a pyarrow RecordBatch or Table, got {type(batch).__name__}")
        if batch.schema.names != self.input_schema.names:
            raise SchemaError(f"{self.path}: rows with columns {batch.schema.names} cannot be written to a file "
                              f"of columns {self.input_schema.names}", path=self.path)
        if not batch.schema.equals(self.row_schema):
            for have, want in zip(batch.schema, self.row_schema):
                if have.type != want.type:
                    try:
                        batch.column(have.name).cast(want.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise SchemaError(f"{self.path}: column {have.name!r} of type {have.type} cannot be "
                                          f"written as {want.type}: {exc}", path=self.path, column=have.name) from exc
            batch = batch.cast(self.row_schema)
        if isinstance(batch, pa.Table):
            return [b for b in batch.to_batches() if b.num_rows]
        return [batch] if batch.num_rows else []

    def _queue(self, batch: pa.RecordBatch) -> None:
        """Buffer ``batch`` in slices, spilling whenever the buffer reaches a stripe's worth."""
        per_row = max(1, batch.nbytes // max(1, batch.num_rows))
        start = 0
        while start < batch.num_rows:
            room = min(BUFFER_ROWS - self._pending_rows,
                       max(1, -(-(self.stripe_size - self._pending_bytes) // per_row)))
            piece = batch.slice(start, max(1, room))
            start += piece.num_rows
            self._pending.append(piece)
            self._pending_rows += piece.num_rows
            self._pending_bytes += piece.num_rows * per_row
            if self._pending_rows >= BUFFER_ROWS or self._pending_bytes >= self.stripe_size:
                self._spill()

    def _encode(self, table: pa.Table) -> bytes:
        sink = io.BytesIO()
        writer = orc_writer(sink, self.compression, _ONE_STRIPE)
        writer.write(table)
        writer.close()
        return sink.getvalue()

    def _spill(self) -> None:
        """Encode the buffer as one stripe and append it (no footer lists it yet)."""
        if not self._pending:
            return
        assert self._write_id is not None
        rows = pa.Table.from_batches(self._pending).combine_chunks()
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        n, first = rows.num_rows, self._next_row_id
        events = pa.Table.from_arrays([
            pa.array(np.full(n, OP_INSERT, dtype=np.int32)),
            pa.array(np.full(n, self._write_id, dtype=np.int64)),
            pa.array(np.full(n, self.bucket_property, dtype=np.int32)),
            pa.array(np.arange(first, first + n, dtype=np.int64)),
            pa.array(np.full(n, self._write_id, dtype=np.int64)),
            pa.StructArray.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in rows.columns],
                                       fields=list(self.row_type)),
        ], schema=self.schema)
        encoded = _tail(self._encode(events))
        stripes = [v for f, _, v in encoded.footer if f == _F_STRIPES]
        if len(stripes) != 1:
            raise CorruptFileError(self.path, f"pyarrow encoded {n} events as {len(stripes)} stripes, not one")
        info = _fields(stripes[0])
        geometry = _last(info)
        offset = int(geometry[1])
        size = sum(int(geometry.get(k, 0)) for k in (2, 3, 4))
        moved = [(1, 0, self._length)] + [f for f in info if f[0] != 1]
        statistics = [v for f, _, v in encoded.footer if f == _F_STATISTICS]
        self._stripes.append(_Stripe(self._write_id, length_delimited(_F_STRIPES, _encode(moved)), n, first + n - 1,
                                     statistics, length_delimited(1, _encode([(1, 2, c) for c in statistics]))))
        self._statistics = [_merge_column_statistics(a, b) for a, b in zip(self._statistics, statistics)]
        self._put(encoded.data[offset:offset + size])
        self._next_row_id = first + n
        self._changed = True

    def discard(self, write_id: int) -> None:
        """Abort ``write_id``: its buffered rows are dropped and its stripes are in no later
        footer (their bytes stay, unread). Later write ids must be higher."""
        self._check_open("discard", failed_too=True)  # no I/O: an abort after a failure is fine
        if self._write_id == write_id:
            self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        kept = [s for s in self._stripes if s.write_id != write_id]
        if len(kept) != len(self._stripes):
            self._stripes, self._changed = kept, True
            self._statistics = list(self._empty_statistics)
            for stripe in kept:
                self._statistics = [_merge_column_statistics(a, b) for a, b in zip(self._statistics, stripe.statistics)]
        self._discarded.add(write_id)
        self._highest = write_id if self._highest is None else max(self._highest, write_id)

    def flush(self) -> int:
        """The commit point: every row written and not discarded goes into a stripe, a footer
        lists exactly those stripes, the data file is made durable, and then its length is
        appended to the side file (made durable too). Returns that length."""
        self._check_open("flush")
        with self._io("flushing"):
            self._commit()
            if self._side is not None:
                self._side.write(struct.pack(">q", self._length))
                _sync(self._side)
        return self._length

    def close(self) -> int:
        """The final footer (written only when something changed since the last one; a file
        without rows still gets a valid empty one). The side file is left to the caller, who
        removes it. Returns the final length."""
        if self._closed:
            return self._length
        self._check_open("close")
        with self._io("closing"):
            self._commit()
        self._closed = True
        return self._length

    def _commit(self) -> None:
        self._spill()
        if self._changed or self._footer_length is None:
            self._write_footer()
        _sync(self._data)

    def _check_open(self, what: str, *, failed_too: bool = False) -> None:
        if self._closed:
            raise StorageError(self.path, f"cannot {what}: the streaming file was closed")
        if self._failed is not None and not failed_too:
            raise StorageError(self.path, f"cannot {what}: {self._failed} failed earlier, so the file's "
                                          f"end is unknown; only its last flushed length ({self.length}) is sound")

    @contextmanager
    def _io(self, doing: str) -> Iterator[None]:
        """Any failure half-way through writing leaves the file's tail unknown: the file takes no
        more writes (a later footer could point at the wrong bytes), what was flushed stays."""
        try:
            yield
        except OSError as exc:
            self._failed = doing
            raise StorageError(self.path, f"{doing} failed: {exc}") from exc
        except BaseException:
            self._failed = doing
            raise

    def _put(self, data: bytes) -> None:
        self._data.write(data)
        self._length += len(data)

    def _framed(self, stream: bytes) -> bytes:
        """A footer-side stream as the file's codec frames it: "original" chunks."""
        if not self._compressed:
            return stream
        out = bytearray()
        for start in range(0, len(stream), self._chunk):
            chunk = stream[start:start + self._chunk]
            out += ((len(chunk) << 1) | 1).to_bytes(3, "little") + chunk
        return bytes(out)

    def _write_footer(self) -> None:
        """Metadata (stripe statistics), footer and postscript listing exactly the kept stripes."""
        total = sum(s.rows for s in self._stripes)
        keys = [(s.write_id, self.bucket_property, s.last_row_id) for s in self._stripes]
        metadata = self._framed(b"".join(s.stripe_statistics for s in self._stripes))
        footer = self._framed(b"".join([
            _encode([(_F_HEADER_LENGTH, 0, len(_HEADER)), (_F_CONTENT_LENGTH, 0, self._length - len(_HEADER))]),
            *(s.info for s in self._stripes),
            _encode(self._types + [(_F_ROWS, 0, total)]),
            _encode([(_F_STATISTICS, 2, column) for column in self._statistics] + self._footer_rest),
            encode_user_metadata({
                KEY_INDEX: format_key_index(keys).encode(),
                ACID_STATS: f"{total},0,0".encode(),
                ACID_VERSION: b"2",
            }),
        ]))
        postscript = _encode([(_PS_FOOTER_LENGTH, 0, len(footer)), (_PS_METADATA_LENGTH, 0, len(metadata))]
                             + self._postscript_rest)
        if len(postscript) > 255:
            raise CorruptFileError(self.path, "ORC postscript would exceed 255 bytes")
        self._put(metadata + footer + postscript + bytes([len(postscript)]))
        self._footer_length = self._length
        self._changed = False
