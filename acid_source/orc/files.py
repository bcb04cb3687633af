"""Opening ORC data files of an ACID table: data through pyarrow, stripe geometry and column
statistics through pyorc, and the ACID footer metadata (key index, stats, version).

Every failure of the underlying libraries becomes a :class:`CorruptFileError` naming the file.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.orc as paorc

from ..errors import CorruptFileError
from ..storage import Storage

ACID_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
KEY_COLUMNS = ("originalTransaction", "bucket", "rowId")
KEY_INDEX = "hive.acid.key.index"
ACID_STATS = "hive.acid.stats"
ACID_VERSION = "hive.acid.version"

OP_INSERT, OP_UPDATE, OP_DELETE = 0, 1, 2

Key = tuple  # (originalTransaction, bucket, rowId)


@dataclass(frozen=True)
class StripeInfo:
    index: int
    offset: int
    length: int
    rows: int
    first_row: int


class _MicrosecondConverter:
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


def read_flush_length(storage: Storage, side_file: str) -> int:
    """The committed length of a file being streamed: the last complete 8-byte big-endian
    value of its ``_flush_length`` side file (0 when none was written yet)."""
    data = storage.read_bytes(side_file)
    complete = len(data) // 8
    if complete == 0:
        return 0
    return struct.unpack(">q", data[(complete - 1) * 8: complete * 8])[0]


class OrcFile:
    """One ORC file, opened lazily; ``length`` restricts it to a flushed prefix."""

    def __init__(self, storage: Storage, path: str, length: int | None = None):
        self.storage = storage
        self.path = path
        self.length = length

    def _fail(self, exc: BaseException, what: str):
        raise CorruptFileError(self.path, f"{what}: {exc}") from exc

    @cached_property
    def _orc(self) -> paorc.ORCFile:
        try:
            return paorc.ORCFile(self.storage.open_input(self.path, self.length))
        except FileNotFoundError as exc:
            raise CorruptFileError(self.path, "file vanished while reading (was it cleaned up?)") from exc
        except (pa.ArrowException, OSError, ValueError) as exc:
            self._fail(exc, "not a readable ORC file")

    @cached_property
    def schema(self) -> pa.Schema:
        return self._orc.schema

    @cached_property
    def is_acid(self) -> bool:
        """True if the file holds ACID events (Hive 4's test: the six ACID column names)."""
        names = [n.lower() for n in self.schema.names]
        return names == [c.lower() for c in ACID_COLUMNS]

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

    def read_stripe(self, index: int, columns: list[str] | None = None) -> pa.RecordBatch:
        if self.has_timestamps_beyond_nanoseconds:
            return self._read_stripe_with_micros(index, columns)
        try:
            return self._orc.read_stripe(index, columns=columns)
        except (pa.ArrowException, OSError, ValueError) as exc:
            self._fail(exc, f"stripe {index} is unreadable")

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

    def _read_stripe_with_micros(self, index: int, columns: list[str] | None) -> pa.RecordBatch:
        """Decode a stripe with pyorc, timestamps as microseconds: row by row, so only for
        files whose timestamps pyarrow cannot represent."""
        import pyorc

        schema = with_microsecond_timestamps(self.schema)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        try:
            reader = pyorc.Reader(
                self.storage.open_input(self.path, self.length),
                column_names=tuple(schema.names) if columns is not None else None,
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

        try:
            return pyorc.Reader(self.storage.open_input(self.path, self.length))
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

    def column_id(self, path: tuple[str, ...]) -> int | None:
        """ORC column id of a (possibly nested) field, matching names case-insensitively."""
        node = self._pyorc.schema
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
