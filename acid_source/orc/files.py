"""Opening ORC data files of an ACID table: data through pyarrow, stripe geometry and column
statistics through pyorc, and the ACID footer metadata (key index, stats, version).

Every failure of the underlying libraries becomes a :class:`CorruptFileError` naming the file.
"""

from __future__ import annotations

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
        try:
            return self._orc.read_stripe(index, columns=columns)
        except (pa.ArrowException, OSError, ValueError) as exc:
            self._fail(exc, f"stripe {index} is unreadable")

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
