"""A slow, literal reference reader for full-ACID Hive ORC tables (test support only).

Written straight from /work/shared/HIVE_ACID_FORMAT.md, sections 1 (directory names and
``getAcidState``), 2 (snapshot strings), 3.4 (``_flush_length``), 3.5 (synthetic ROW__IDs of
original files), 4 (the event schema) and 5.2 (the row-by-row merge). It deliberately shares
no code with ``acid_source``: every rule is re-derived from the document in the most obvious,
brute-force way, so that property tests compare two independent readings of the format.

Everything is plain Python objects read row by row with pyorc; nothing is vectorized, cached
or skipped. Only unpartitioned tables (one directory) are supported.

API::

    reference_read(table_dir, valid_write_ids, valid_txns) -> [(data tuple, (writeId, bucketId, rowId))]

``valid_write_ids`` is a ValidReaderWriteIdList string (``db.t:hwm:minOpen:open:aborted``) and
``valid_txns`` a ValidReadTxnList string (``hwm:minOpen:open:aborted``); ``None`` means
"everything on disk is valid". :class:`NotEnoughHistory` is Hive's ACID_NOT_ENOUGH_HISTORY.

The pure pieces (:func:`parse_write_id_list`, :func:`choose_directories`,
:func:`merge_events`) are reused by the history simulator of the property tests.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass, field

import pyorc

LONG_MAX = 9223372036854775807
LONG_MIN = -9223372036854775808

INSERT, UPDATE, DELETE = 0, 1, 2
ACID_FIELD_NAMES = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"]

NONE, SOME, ALL = "NONE", "SOME", "ALL"


class NotEnoughHistory(Exception):
    """Hive's ACID_NOT_ENOUGH_HISTORY (§1.2 step 7)."""


class TwoReaders(Exception):
    """Two files hold an event with the same ROW__ID and currentTransaction: Hive's merger
    fails with ``Two readers for {...}`` (§4.3); such a layout is not a valid table."""


# --------------------------------------------------------------------------------------------
# §2: ValidReaderWriteIdList / ValidReadTxnList
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IdList:
    """A high watermark plus open and aborted ids; the same rules serve write ids (§2.1) and
    transaction ids (§2.3)."""

    hwm: int = LONG_MAX
    min_open: int = LONG_MAX
    open: frozenset = frozenset()
    aborted: frozenset = frozenset()

    @property
    def exceptions(self) -> list[int]:
        return sorted(self.open | self.aborted)

    def is_valid(self, i: int) -> bool:
        """isWriteIdValid / isTxnValid: ``i <= hwm and i not in exceptions``."""
        return i <= self.hwm and i not in self.open and i not in self.aborted

    def is_aborted(self, i: int) -> bool:
        return i in self.aborted

    def is_valid_base(self, w: int) -> bool:
        """isValidBase: ``w < minOpenWriteId and w <= hwm``."""
        return w < self.min_open and w <= self.hwm

    def min_open_or_none(self) -> int | None:
        """getMinOpenWriteId: null when it is Long.MAX."""
        return None if self.min_open == LONG_MAX else self.min_open

    def range_valid(self, a: int, b: int) -> str:
        """isWriteIdRangeValid, exactly as the table in §2.1 states it."""
        if a > self.hwm:
            return NONE
        exc = self.exceptions
        if exc and exc[0] > b:
            return ALL
        cnt = max(0, b - self.hwm) + len([e for e in exc if a <= e <= b])
        if cnt == 0:
            return ALL
        if cnt == b - a + 1:
            return NONE
        return SOME

    def range_aborted(self, a: int, b: int) -> str:
        """isWriteIdRangeAborted."""
        if self.hwm < a:
            return NONE
        cnt = len([e for e in self.aborted if a <= e <= b])
        if cnt == 0:
            return NONE
        if cnt == b - a + 1:
            return ALL
        return SOME


EVERYTHING_VALID = IdList()


def _parse_ids(text: str) -> set[int]:
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:  # (4.x) runs written as lo-hi
            lo, hi = part.split("-")
            ids.update(range(int(lo), int(hi) + 1))
        else:
            ids.add(int(part))
    return ids


def _parse_fields(fields: list[str]) -> IdList:
    # Java's split(":") drops trailing empty fields: 1..4 fields may remain.
    hwm = int(fields[0]) if len(fields) > 0 and fields[0] else LONG_MAX
    min_open = int(fields[1]) if len(fields) > 1 and fields[1] else LONG_MAX
    open_ids = _parse_ids(fields[2]) if len(fields) > 2 else set()
    aborted = _parse_ids(fields[3]) if len(fields) > 3 else set()
    return IdList(hwm, min_open, frozenset(open_ids), frozenset(aborted))


def parse_write_id_list(text: str | None) -> IdList:
    """``<db.table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>``; empty/None = all valid."""
    if text is None or text.strip() == "":
        return EVERYTHING_VALID
    fields = text.strip().split(":")
    return _parse_fields(fields[1:])


def parse_txn_list(text: str | None) -> IdList:
    """``<hwm>:<minOpenTxn>:<open txns>:<aborted txns>``; empty/None = all valid."""
    if text is None or text.strip() == "":
        return EVERYTHING_VALID
    return _parse_fields(text.strip().split(":"))


# --------------------------------------------------------------------------------------------
# §1: directory names and getAcidState
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AcidDirName:
    name: str
    kind: str  # "base" | "delta" | "delete_delta"
    min: int
    max: int
    stmt: int  # -1 when the name has none
    visibility: int  # 0 when there is no _v suffix


def parse_dir_name(name: str) -> AcidDirName | None:
    """§1.1: strip ``_v<digits>`` first, then the prefix decides the kind."""
    visibility = 0
    rest = name
    i = name.find("_v")
    if i >= 0 and name[i + 2:].isdigit():
        visibility = int(name[i + 2:])
        rest = name[:i]
    if rest.startswith("base_"):
        digits = rest[len("base_"):]
        if not digits.isdigit():
            return None
        return AcidDirName(name, "base", int(digits), int(digits), -1, visibility)
    if rest.startswith("delete_delta_"):
        kind, parts = "delete_delta", rest[len("delete_delta_"):].split("_")
    elif rest.startswith("delta_"):
        kind, parts = "delta", rest[len("delta_"):].split("_")
    else:
        return None
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        return None
    stmt = int(parts[2]) if len(parts) == 3 else -1
    return AcidDirName(name, kind, int(parts[0]), int(parts[1]), stmt, visibility)


@dataclass
class Selection:
    """What getAcidState hands to the reader."""

    base: AcidDirName | None
    deltas: list[AcidDirName]  # insert and delete deltas, in Hive's delta order
    use_originals: bool  # originals are read only when no base was chosen
    obsolete: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)


def choose_directories(dir_names: list[str], write_ids: IdList, txns: IdList,
                       metadata_compacted=lambda name: False) -> Selection:
    """§1.2 - §1.4 over the names of the subdirectories of a partition directory (in listing
    order). ``metadata_compacted(name)`` tells whether a base carries ``_metadata_acid`` with
    ``dataFormat=compacted`` (§3.3). Names that are not ACID directories are ignored here."""
    bases: list[AcidDirName] = []
    candidates: list[AcidDirName] = []
    aborted: list[str] = []
    obsolete: list[str] = []
    for name in dir_names:
        if name.startswith("_") or name.startswith("."):
            continue
        d = parse_dir_name(name)
        if d is None:
            continue
        # step 3: isDirUsable
        if not txns.is_valid(d.visibility):
            if txns.is_aborted(d.visibility):
                aborted.append(name)
            continue  # open: silently skipped
        if d.kind == "base":
            bases.append(d)
            continue
        # step 4
        if write_ids.range_aborted(d.min, d.max) == ALL:
            aborted.append(name)
            continue
        if write_ids.range_valid(d.min, d.max) != NONE:
            candidates.append(d)

    # step 5: processBaseDir, in listing order
    def compacted(b: AcidDirName) -> bool:
        return b.visibility > 0 or metadata_compacted(b.name)

    def is_valid_base(b: AcidDirName) -> bool:
        w = b.max
        if w == LONG_MIN:
            return True
        min_open = write_ids.min_open_or_none()
        if min_open is not None and w <= min_open:
            return True
        if compacted(b):
            return write_ids.is_valid_base(w)
        return write_ids.is_valid(w)

    oldest: AcidDirName | None = None
    best: AcidDirName | None = None
    for b in bases:
        if oldest is None or b.max < oldest.max:
            oldest = b
        if not compacted(b) and write_ids.is_aborted(b.max):
            aborted.append(b.name)
            continue
        better = (best is None or b.max > best.max
                  or (b.max == best.max and compacted(b) and txns.is_valid(b.visibility)))
        if not better:
            obsolete.append(b.name)
            continue
        if not is_valid_base(b):
            continue  # better but invalid: neither used nor obsolete
        if best is not None:
            obsolete.append(best.name)
        best = b

    # step 7
    if best is None and oldest is not None and compacted(oldest):
        raise NotEnoughHistory(f"no usable base; the oldest base {oldest.name} is compacted")

    # §1.3 ordering and §1.4 findBestWorkingDeltas
    ordered = sorted(candidates, key=lambda d: (d.min, -d.max, d.stmt, d.name))
    kept: list[AcidDirName] = []
    current = best.max if best is not None else 0
    last_stmt = -1
    prev: AcidDirName | None = None
    for d in ordered:
        if d.max > current:
            if write_ids.range_valid(current + 1, d.max) != NONE:
                kept.append(d)
                current = d.max
                last_stmt = d.stmt
                prev = d
            # else: dropped, not obsolete
        elif d.max == current and last_stmt >= 0:
            kept.append(d)
            prev = d
        elif prev is not None and (d.min, d.max, d.stmt) == (prev.min, prev.max, prev.stmt):
            kept.append(d)
            prev = d
        else:
            obsolete.append(d.name)
    return Selection(best, kept, best is None, obsolete, aborted)


# --------------------------------------------------------------------------------------------
# §3 / §4: reading files
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ev:
    """One ACID event as read from a file (or synthesized for an original file)."""

    operation: int
    original_write_id: int
    bucket: int
    row_id: int
    current_write_id: int
    row: tuple | None
    source: str = field(default="", compare=False)  # the file it came from

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.original_write_id, self.bucket, self.row_id)


def encode_bucket_v1(bucket_id: int, stmt_id: int) -> int:
    """§4.2 BucketCodec V1."""
    return (1 << 29) | (bucket_id << 16) | max(0, stmt_id)


def read_flush_length(side_file: str) -> int:
    """§3.4: the last complete 8-byte big-endian value; a partial tail is ignored."""
    with open(side_file, "rb") as fh:
        data = fh.read()
    values = [struct.unpack(">q", data[i:i + 8])[0] for i in range(0, len(data) - len(data) % 8, 8)]
    if not values:
        raise ValueError(f"{side_file}: no complete length value")
    return values[-1]


def _open_orc(path: str, length: int | None):
    with open(path, "rb") as fh:
        data = fh.read()
    if length is not None:
        data = data[:length]
    return pyorc.Reader(io.BytesIO(data), struct_repr=pyorc.StructRepr.TUPLE)


def _top_level_names(path: str) -> list[str]:
    reader = _open_orc(path, None)
    return list(reader.schema.fields)


def is_acid_file(path: str) -> bool:
    """Hive 4's test (§4.4): the top-level field names are exactly the six ACID names."""
    return _top_level_names(path) == ACID_FIELD_NAMES


def read_acid_events(path: str, length: int | None = None) -> list[Ev]:
    """Every event of an ACID file (or of its first ``length`` bytes), row by row."""
    if length == 0:
        return []
    reader = _open_orc(path, length)
    return [Ev(op, owid, bucket, rid, cwid, row, path) for op, owid, bucket, rid, cwid, row in reader]


def read_plain_rows(path: str) -> list[tuple]:
    return list(_open_orc(path, None))


def original_bucket_id(file_name: str) -> int:
    """§3.1: the integer before the first ``_`` (``000001_0_copy_2`` -> 1); bucket_N too."""
    if file_name.startswith("bucket_"):
        return int(file_name[len("bucket_"):].split("_")[0])
    head = file_name.split("_")[0]
    if not head.isdigit():
        raise ValueError(f"cannot parse a bucket id from original file {file_name!r}")
    return int(head)


def synthesize_original_events(files: list[str], write_id: int, stmt_id: int) -> list[Ev]:
    """§3.5: rows of original files as insert events with synthetic ROW__IDs. ``files`` are
    full paths already sorted by full path string; empty files are skipped."""
    events: list[Ev] = []
    offset_by_bucket: dict[int, int] = {}
    for path in files:
        if os.path.getsize(path) == 0:
            continue
        bucket_id = original_bucket_id(os.path.basename(path))
        rows = read_plain_rows(path)
        offset = offset_by_bucket.get(bucket_id, 0)
        bucket = encode_bucket_v1(bucket_id, stmt_id)
        for i, row in enumerate(rows):
            events.append(Ev(INSERT, write_id, bucket, offset + i, write_id, tuple(row), path))
        offset_by_bucket[bucket_id] = offset + len(rows)
    return events


def _files_of(directory: str) -> list[str]:
    """Data files of an ACID directory: not hidden, not a ``_flush_length`` side file."""
    return sorted(
        os.path.join(directory, n) for n in os.listdir(directory)
        if not n.startswith(("_", ".")) and not n.endswith("_flush_length")
        and os.path.isfile(os.path.join(directory, n))
    )


def _original_files(partition_dir: str) -> list[str]:
    """§1.2 step 2: files at the root plus files of non-ACID subdirectories, recursively."""
    found = []
    for name in os.listdir(partition_dir):
        if name.startswith(("_", ".")):
            continue
        path = os.path.join(partition_dir, name)
        if os.path.isfile(path):
            if os.path.getsize(path) > 0:
                found.append(path)
        elif parse_dir_name(name) is None:
            for sub_root, subdirs, files in os.walk(path):
                subdirs[:] = [s for s in subdirs if not s.startswith(("_", "."))]
                for f in files:
                    p = os.path.join(sub_root, f)
                    if not f.startswith(("_", ".")) and os.path.getsize(p) > 0:
                        found.append(p)
    return sorted(found)  # full path string order (§1.2 step 6, §3.5)


def _is_raw_dir(d: AcidDirName, directory: str) -> bool:
    """§1.2 step 8: isRawFormat of a chosen base / kept insert delta."""
    if d.kind == "delete_delta":
        return False
    if d.kind == "delta" and d.min != d.max:
        return False
    if d.kind == "base" and d.visibility > 0:
        return False
    files = _files_of(directory)
    files = [f for f in files if os.path.getsize(f) > 0]
    return bool(files) and not is_acid_file(files[0])


def _metadata_compacted(directory: str) -> bool:
    import json

    meta = os.path.join(directory, "_metadata_acid")
    if not os.path.exists(meta):
        return False
    with open(meta, "rb") as fh:
        doc = json.loads(fh.read().decode("utf-8"))
    return str(doc.get("dataFormat", "")).lower() == "compacted"


def _events_of_dir(d: AcidDirName, directory: str) -> list[Ev]:
    if _is_raw_dir(d, directory):
        # LOAD DATA into an ACID dir: original files with write id X = the dir's min (§3.5)
        return synthesize_original_events(_files_of(directory), d.min, d.stmt)
    events: list[Ev] = []
    may_have_side_file = d.kind == "delta" and d.min != d.max and d.visibility == 0
    for path in _files_of(directory):
        length = None
        if may_have_side_file and os.path.exists(path + "_flush_length"):
            length = read_flush_length(path + "_flush_length")
        events.extend(read_acid_events(path, length))
    return events


# --------------------------------------------------------------------------------------------
# §5.2: the merge
# --------------------------------------------------------------------------------------------
def merge_events(events: list[Ev], write_ids: IdList) -> list[Ev]:
    """Sort by (originalTransaction, bucket, rowId) ascending, currentTransaction descending,
    delete before insert on a tie; per ROW__ID the first event whose currentTransaction is
    valid wins; a winning delete hides the row. Returns the winning non-delete events (an
    UPDATE winner carries the new row under the original ROW__ID)."""

    def valid(w: int) -> bool:
        return w == 0 or write_ids.is_valid(w)  # write id 0 (pre-ACID data) is always valid

    ordered = sorted(events, key=lambda e: (e.original_write_id, e.bucket, e.row_id,
                                            -e.current_write_id, 0 if e.operation == DELETE else 1))
    for a, b in zip(ordered, ordered[1:]):
        tie = (a.key, a.current_write_id, a.operation == DELETE) == (b.key, b.current_write_id, b.operation == DELETE)
        if tie and a.source != b.source:
            raise TwoReaders(f"Two readers for {a.key} at write id {a.current_write_id}: {a.source}, {b.source}")
    winners: list[Ev] = []
    decided: tuple | None = None
    for e in ordered:
        if e.key == decided:
            continue
        if not valid(e.current_write_id):
            continue
        decided = e.key
        if e.operation != DELETE:
            winners.append(e)
    return winners


# --------------------------------------------------------------------------------------------
# the reader
# --------------------------------------------------------------------------------------------
def collect_events(table_dir: str, valid_write_ids: str | None, valid_txns: str | None) -> tuple[list[Ev], IdList]:
    """Directory selection plus every event of every chosen file."""
    table_dir = str(table_dir)
    write_ids = parse_write_id_list(valid_write_ids)
    txns = parse_txn_list(valid_txns)
    names = [n for n in os.listdir(table_dir) if os.path.isdir(os.path.join(table_dir, n))]
    selection = choose_directories(
        names, write_ids, txns, metadata_compacted=lambda n: _metadata_compacted(os.path.join(table_dir, n)))
    events: list[Ev] = []
    if selection.base is not None:
        events.extend(_events_of_dir(selection.base, os.path.join(table_dir, selection.base.name)))
    if selection.use_originals:
        events.extend(synthesize_original_events(_original_files(table_dir), 0, 0))
    for d in selection.deltas:
        events.extend(_events_of_dir(d, os.path.join(table_dir, d.name)))
    return events, write_ids


def reference_read(table_dir, valid_write_ids: str | None, valid_txns: str | None) -> list[tuple[tuple, tuple]]:
    """The rows a reader with this snapshot sees: ``[(data tuple, (writeId, bucketId, rowId))]``
    in ROW__ID order. Raises :class:`NotEnoughHistory` like Hive's ACID_NOT_ENOUGH_HISTORY."""
    events, write_ids = collect_events(table_dir, valid_write_ids, valid_txns)
    return [(tuple(e.row) if e.row is not None else None, e.key) for e in merge_events(events, write_ids)]
