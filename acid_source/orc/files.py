"""Opening ORC data files of an ACID table: data through pyarrow, stripe geometry and column
statistics through pyorc, and the ACID footer metadata (key index, stats, version).

Every failure of the underlying libraries becomes a :class:`CorruptFileError` naming the file.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.orc as paorc
from pyorc.converters import ORCConverter

from ..errors import CorruptFileError, SnapshotFilesRemovedError
from ..layout.row_ids import Key
from ..storage import Storage

# The ACID event columns, by their canonical names (HIVE_ACID_FORMAT.md 4.1). Hive reads them by
# position - its query-based compactor writes them in lower case - and so does OrcFile: the
# batches it returns for an ACID file always carry these names.
ACID_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
ROW = ACID_COLUMNS.index("row")
EVENT_COLUMNS = ACID_COLUMNS[:ROW]  # everything but the row: what delete events need
KEY_INDEX = "hive.acid.key.index"
ACID_STATS = "hive.acid.stats"
ACID_VERSION = "hive.acid.version"

OP_INSERT, OP_UPDATE, OP_DELETE = 0, 1, 2


@dataclass(frozen=True)
class StripeInfo:
    index: int
    offset: int
    length: int
    rows: int
    first_row: int


class _MicrosecondConverter(ORCConverter):
    """pyorc converter: ORC timestamps as integer microseconds since the epoch."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone) -> int:
        return seconds * 1_000_000 + nanoseconds // 1000

    @staticmethod
    def to_orc(value, timezone):
        raise NotImplementedError("read-only converter")


_NANOS_MIN = dt.datetime(1677, 9, 22, tzinfo=dt.timezone.utc)
_NANOS_MAX = dt.datetime(2262, 4, 11, tzinfo=dt.timezone.utc)


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_timestamp(f.type) for f in t)
    if pa.types.is_map(t):
        return _has_timestamp(t.key_type) or _has_timestamp(t.item_type)
    if pa.types.is_list(t):
        return _has_timestamp(t.value_type)
    return False


def _timestamp_column_ids(node) -> list[int]:
    """ORC column ids of every timestamp column in a pyorc type tree."""
    import pyorc

    if node.kind in (pyorc.TypeKind.TIMESTAMP, pyorc.TypeKind.TIMESTAMP_INSTANT):
        return [node.column_id]
    children = list((getattr(node, "fields", None) or {}).values())
    children += [getattr(node, a) for a in ("type", "key", "value") if getattr(node, a, None) is not None]
    return [cid for child in children for cid in _timestamp_column_ids(child)]


def map_timestamps(schema: pa.Schema, convert) -> pa.Schema:
    """The schema with ``convert`` applied to every timestamp type, nested ones included."""

    def walk(t: pa.DataType) -> pa.DataType:
        if pa.types.is_timestamp(t):
            return convert(t)
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(walk(f.type)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(walk(t.key_type), walk(t.item_type))
        if pa.types.is_list(t):
            return pa.list_(t.value_field.with_type(walk(t.value_type)))
        return t

    return pa.schema([f.with_type(walk(f.type)) for f in schema])


def wall_clock_type(t: pa.DataType) -> pa.DataType:
    """``t`` with the time zone dropped from every timestamp, nested ones included (Hive's
    timestamps are wall-clock values)."""
    return map_timestamps(pa.schema([pa.field("x", t)]), lambda ts: pa.timestamp(ts.unit)).field(0).type


def with_microsecond_timestamps(schema: pa.Schema) -> pa.Schema:
    """The schema with every timestamp at microsecond precision, as Spark and Hive hold them."""
    return map_timestamps(schema, lambda t: pa.timestamp("us", t.tz))


def parse_key_index(text: str) -> list[Key]:
    """``"w,b,r;w,b,r;"`` -> [(w, b, r), ...]: the last key of each stripe."""
    keys = []
    for entry in text.split(";"):
        if not entry.strip():
            continue
        parts = entry.split(",")
        if len(parts) != 3:
            raise ValueError(f"bad key index entry {entry!r}")
        keys.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return keys


def format_key_index(keys: list[Key]) -> str:
    return "".join(f"{w},{b},{r};" for w, b, r in keys)


def read_flush_length(storage: Storage, side_file: str, *, data_size: int | None = None) -> int:
    """The committed length of a file being streamed: the last complete 8-byte big-endian
    value of its ``_flush_length`` side file (0 when none was written yet; a partial tail is
    a flush in progress). A negative length, or one beyond ``data_size`` (the data file's size,
    when the caller knows it), is corrupt. A side file gone since the listing was removed by the
    writer's clean close: then the whole data file is committed."""
    try:
        data = storage.read_bytes(side_file)
    except FileNotFoundError:
        data_file = side_file[: -len("_flush_length")] if side_file.endswith("_flush_length") else side_file
        try:
            return storage.fs.size(data_file)
        except FileNotFoundError:
            raise CorruptFileError(storage.display(data_file),
                                   "file vanished while planning (was it cleaned up?)") from None
    complete = len(data) // 8
    if complete == 0:
        return 0
    length = struct.unpack(">q", data[(complete - 1) * 8: complete * 8])[0]
    if length < 0:
        raise CorruptFileError(storage.display(side_file), f"negative flushed length {length}")
    if data_size is not None and length > data_size:
        raise CorruptFileError(storage.display(side_file), f"flushed length {length} is beyond the end of the data "
                                                          f"file ({data_size} bytes)")
    return length


class OrcFile:
    """One ORC file, opened lazily; ``length`` restricts it to a flushed prefix."""

    def __init__(self, storage: Storage, path: str, length: int | None = None):
        self.storage = storage
        self.path = path
        self.length = length

    @property
    def shown_path(self) -> str:
        """The file as errors name it: a URL with the table's scheme (``s3://...``)."""
        return self.storage.display(self.path)

    def _open_again(self):
        """Another handle on the file (pyorc reads through its own); a file gone since the
        listing was removed by the cleaner."""
        try:
            return self.storage.open_input(self.path, self.length)
        except FileNotFoundError as exc:
            raise SnapshotFilesRemovedError(self.shown_path) from exc

    def _fail(self, exc: BaseException, what: str):
        raise CorruptFileError(self.shown_path, f"{what}: {exc}") from exc

    @cached_property
    def _orc(self) -> paorc.ORCFile:
        try:
            return paorc.ORCFile(self.storage.open_input(self.path, self.length))
        except FileNotFoundError as exc:
            raise SnapshotFilesRemovedError(self.shown_path) from exc
        except (pa.ArrowException, OSError, ValueError) as exc:
            self._fail(exc, "not a readable ORC file")

    @cached_property
    def schema(self) -> pa.Schema:
        return self._orc.schema

    @cached_property
    def is_acid(self) -> bool:
        """True if the file holds ACID events (Hive 4's test: the six ACID column names, here
        in any case)."""
        names = [n.lower() for n in self.schema.names]
        return names == [c.lower() for c in ACID_COLUMNS]

    @cached_property
    def row_type(self) -> pa.StructType | None:
        """The type of an ACID file's ``row`` struct (None for a plain file). An ACID file whose
        event columns have impossible types is corrupt: reading it would fail deep inside."""
        if not self.is_acid:
            return None
        for i, field in enumerate(self.schema):
            if i == ROW and not pa.types.is_struct(field.type):
                raise CorruptFileError(self.shown_path, f"the ACID 'row' column is {field.type}, not a struct")
            if i != ROW and not pa.types.is_integer(field.type):
                raise CorruptFileError(self.shown_path,
                                       f"the ACID column {field.name!r} is {field.type}, not an integer")
        return self.schema.field(ROW).type

    @property
    def num_stripes(self) -> int:
        return self._orc.nstripes

    @property
    def num_rows(self) -> int:
        return self._orc.nrows

    @cached_property
    def user_metadata(self) -> dict[str, str]:
        meta = self._orc.metadata or {}
        out = {}
        for k, v in meta.items():
            key = k.decode("utf-8", "replace") if isinstance(k, bytes) else k
            out[key] = v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        return out

    @cached_property
    def key_index(self) -> list[Key] | None:
        """Last key per stripe, or None when missing or inconsistent (Hive then ignores it)."""
        text = self.user_metadata.get(KEY_INDEX)
        if text is None:
            return None
        try:
            keys = parse_key_index(text)
        except ValueError:
            return None
        return keys if len(keys) == self.num_stripes else None

    @cached_property
    def acid_stats(self) -> tuple[int, int, int] | None:
        text = self.user_metadata.get(ACID_STATS)
        if not text:
            return None
        try:
            ins, upd, dels = (int(x) for x in text.split(","))
        except ValueError:
            return None
        return ins, upd, dels

    def read_stripe(self, index: int, columns: Sequence[str] | None = None,
                    fields: Sequence[str] | None = None) -> pa.RecordBatch:
        """One stripe. For an ACID file ``columns`` are canonical event column names, looked up
        by position, and the batch carries the canonical names whatever the file calls them.
        ``fields``: the data columns to decode (as the file names them; None: all) - fields of
        the ``row`` struct of an ACID file, top-level columns of a plain one."""
        positions = None
        if self.row_type is not None:  # an ACID file (with sound event column types)
            names = list(ACID_COLUMNS) if columns is None else list(columns)
            positions = [ACID_COLUMNS.index(c) for c in names]
        if self.has_timestamps_beyond_nanoseconds:
            batch = self._read_stripe_with_micros(index, columns, positions)
        else:
            try:
                batch = self._orc.read_stripe(index, columns=self._selection(columns, positions, fields))
            except (pa.ArrowException, OSError, ValueError) as exc:
                self._fail(exc, f"stripe {index} is unreadable")
        if positions is not None and batch.schema.names != names:
            batch = pa.RecordBatch.from_arrays(batch.columns, names=names)
        return batch

    def _selection(self, columns: Sequence[str] | None, positions: list[int] | None,
                   fields: Sequence[str] | None) -> list | None:
        """What pyarrow's ORC reader is asked for: positions of event columns, or names (with
        ``row.<field>`` for the chosen fields of an ACID row)."""
        if fields is None:
            return positions if positions is not None else (list(columns) if columns is not None else None)
        if positions is None:  # a plain file: its chosen columns
            return list(fields)
        file_names = self.schema.names
        out: list[str] = []
        for pos in positions:
            if pos == ROW:
                out.extend(f"{file_names[ROW]}.{name}" for name in fields)
            else:
                out.append(file_names[pos])
        return out

    @cached_property
    def has_timestamps_beyond_nanoseconds(self) -> bool:
        """pyarrow's ORC reader turns timestamps into int64 nanoseconds and silently wraps
        values outside 1677-09-22..2262-04-11, while Hive and Spark allow years 0001-9999. The
        file statistics tell whether a file holds such values (or cannot prove it does not)."""
        if not any(_has_timestamp(f.type) for f in self.schema):
            return False
        reader = self._pyorc
        for column in _timestamp_column_ids(reader.schema):
            try:
                stats = reader[column].statistics
            except Exception:
                return True
            if stats.get("number_of_values") == 0:
                continue
            low, high = stats.get("minimum"), stats.get("maximum")
            if low is None or high is None or low < _NANOS_MIN or high > _NANOS_MAX:
                return True
        return False

    def _read_stripe_with_micros(self, index: int, columns: Sequence[str] | None,
                                 positions: list[int] | None = None) -> pa.RecordBatch:
        """Decode a stripe with pyorc, timestamps as microseconds: row by row, so only for
        files whose timestamps pyarrow cannot represent."""
        import pyorc

        schema = with_microsecond_timestamps(self.schema)
        if positions is not None:
            schema = pa.schema([schema.field(i) for i in positions])
        elif columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        source = self._open_again()
        try:
            reader = pyorc.Reader(
                source,
                column_indices=tuple(positions) if positions is not None else None,
                column_names=tuple(schema.names) if columns is not None and positions is None else None,
                struct_repr=pyorc.StructRepr.DICT,
                converters={pyorc.TypeKind.TIMESTAMP: _MicrosecondConverter,
                            pyorc.TypeKind.TIMESTAMP_INSTANT: _MicrosecondConverter},
            )
            rows = reader.read_stripe(index).read()
        except Exception as exc:
            self._fail(exc, f"stripe {index} is unreadable")
        arrays = [pa.array([row[f.name] for row in rows], type=f.type) for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    # --- stripe geometry and statistics (pyorc) ---------------------------------------------
    @cached_property
    def _pyorc(self):
        import pyorc

        source = self._open_again()
        try:
            return pyorc.Reader(source)
        except Exception as exc:  # pyorc raises its own ParseError / RuntimeError types
            self._fail(exc, "cannot read the ORC footer")

    @cached_property
    def stripes(self) -> list[StripeInfo]:
        reader = self._pyorc
        infos = []
        try:
            for i in range(reader.num_of_stripes):
                s = reader.read_stripe(i)
                infos.append(StripeInfo(i, s.bytes_offset, s.bytes_length, len(s), s.row_offset))
        except Exception as exc:
            self._fail(exc, "cannot read stripe information")
        return infos

    def data_column_id(self, name: str) -> int | None:
        """ORC column id of a table column: a field of the ``row`` struct (found by position)
        of an ACID file, or a top-level column of a plain file; names match case-insensitively."""
        node = self._pyorc.schema
        if self.is_acid:
            fields = list((getattr(node, "fields", None) or {}).values())
            if len(fields) != len(ACID_COLUMNS):
                return None
            node = fields[ROW]
        return self._column_id(node, (name,))

    def column_id(self, path: tuple[str, ...]) -> int | None:
        """ORC column id of a (possibly nested) field, matching names case-insensitively."""
        return self._column_id(self._pyorc.schema, path)

    @staticmethod
    def _column_id(node, path: tuple[str, ...]) -> int | None:
        for name in path:
            fields = getattr(node, "fields", None)
            if not fields:
                return None
            match = next((f for f in fields if f.lower() == name.lower()), None)
            if match is None:
                return None
            node = fields[match]
        return node.column_id

    def stripe_statistics(self, index: int, column_id: int) -> dict | None:
        try:
            return dict(self._pyorc.read_stripe(index)[column_id].statistics)
        except Exception:
            return None
