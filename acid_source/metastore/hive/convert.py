"""Between the Hive Metastore's thrift structs and acidorc's values: table schemas and
properties (:class:`~acid_source.metastore.tableinfo.TableInfo`), and the snapshot lists
(``GetOpenTxnsResponse`` -> ValidTxnList, ``TableValidWriteIds`` -> ValidWriteIdList) exactly
as Hive's ``TxnCommonUtils.createValidReadTxnList`` / ``createValidReaderWriteIdList`` build them.

Pure functions over plain attributes, so they are tested without a server (and without the
thrift bindings): a struct is anything with the IDL's attribute names.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import pyarrow as pa

from ...layout.hive_types import hive_type_of, parse_hive_type
from ...layout.writeids import LONG_MAX, ValidTxnList, ValidWriteIdList

ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
ORC_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"


# --- snapshots -------------------------------------------------------------------------------
def bitset_members(bits: bytes | None) -> set[int]:
    """The set bits of a Java ``BitSet.toByteArray()`` (little-endian: bit i of byte i // 8),
    which is how the HMS marks which exceptions of a list are aborted."""
    members: set[int] = set()
    for index, byte in enumerate(bits or b""):
        for bit in range(8):
            if byte >> bit & 1:
                members.add(index * 8 + bit)
    return members


def split_exceptions(ids: Iterable[int], aborted_bits: bytes | None) -> tuple[list[int], list[int]]:
    """``(open, aborted)`` from an exception list (sorted, as the HMS sends it) and its bitset."""
    aborted_at = bitset_members(aborted_bits)
    ordered = sorted(int(i) for i in ids)
    return ([w for i, w in enumerate(ordered) if i not in aborted_at],
            [w for i, w in enumerate(ordered) if i in aborted_at])


def valid_txns(response, current_txn: int = 0) -> ValidTxnList:
    """Hive 4's ValidReadTxnList of a ``GetOpenTxnsResponse`` (``TxnCommonUtils.
    createValidReadTxnList``). For a reader inside transaction ``current_txn`` (> 0) the
    high-water mark drops to that transaction, so later ones stay invisible (snapshot
    isolation), and only exceptions below it remain; its own transaction is valid to itself.
    ``min_open`` is the lowest open exception kept (Hive 4 ignores the server's
    ``min_open_txn`` here)."""
    hwm = response.txn_high_water_mark
    if current_txn > 0:
        hwm = min(current_txn, hwm)
    aborted_at = bitset_members(response.abortedBits)
    open_ids: list[int] = []
    aborted: list[int] = []
    for index, txn in enumerate(sorted(response.open_txns or ())):
        if current_txn > 0 and txn >= current_txn:
            break
        (aborted if index in aborted_at else open_ids).append(txn)
    return ValidTxnList(high_watermark=hwm, min_open=min(open_ids, default=LONG_MAX),
                        open_ids=open_ids, aborted_ids=aborted)


def valid_write_ids(table: object) -> ValidWriteIdList:
    """Hive's ValidReaderWriteIdList of a ``TableValidWriteIds``."""
    open_ids, aborted = split_exceptions(getattr(table, "invalidWriteIds", None) or (),
                                         getattr(table, "abortedBits", None))
    min_open = getattr(table, "minOpenWriteId", None)
    if min_open is None:
        min_open = min(open_ids, default=LONG_MAX)
    return ValidWriteIdList(high_watermark=table.writeIdHighWaterMark, min_open=min_open,  # type: ignore[attr-defined]
                            open_ids=open_ids, aborted_ids=aborted,
                            table_name=getattr(table, "fullTableName", None))


# --- names -----------------------------------------------------------------------------------
def split_name(name: str, default_db: str = "default") -> tuple[str, str]:
    """``db.table`` (or ``table`` in ``default_db``), lower-cased as the HMS stores names."""
    db, _, table = name.strip().lower().rpartition(".")
    return (db or default_db), table


def table_id_of(full_name: str) -> int:
    """A stable id for ``db.table`` in every process (acidorc's store numbers its tables; the
    HMS's own id is not in the Hive 3.1 thrift API): 52 bits of a SHA-256 of the name."""
    return int.from_bytes(hashlib.sha256(full_name.encode()).digest()[:8], "big") >> 12


# --- types -----------------------------------------------------------------------------------
def arrow_type(hive_type: str) -> pa.DataType:
    """The Arrow type acidorc reads a Hive column type as (timestamps wall-clock, microseconds;
    char and varchar as strings). ValueError for types acidorc cannot hold (uniontype,
    intervals)."""
    try:
        tree = parse_hive_type(hive_type)
    except NotImplementedError as exc:
        raise ValueError(str(exc)) from None
    return _arrow(tree)


def _arrow(tree: tuple) -> pa.DataType:
    kind = tree[0]
    simple = {"boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
              "integer": pa.int32(), "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(),
              "string": pa.string(), "binary": pa.binary(), "date": pa.date32(),
              "timestamp": pa.timestamp("us"), "void": pa.null(), "char": pa.string(), "varchar": pa.string()}
    if kind in simple:
        return simple[kind]
    if kind == "decimal":
        return pa.decimal128(tree[1], tree[2])
    if kind == "array":
        return pa.list_(_arrow(tree[1]))
    if kind == "map":
        return pa.map_(_arrow(tree[1]), _arrow(tree[2]))
    if kind == "struct":
        return pa.struct([pa.field(n, _arrow(t)) for n, t in tree[1]])
    raise ValueError(f"Hive type {kind} has no Arrow equivalent in acidorc")


def hive_type(arrow: pa.DataType) -> str:
    """The Hive column type string of an Arrow type (what Hive's DDL would say)."""
    return _render(hive_type_of(arrow))


def _render(tree: tuple) -> str:
    kind = tree[0]
    if kind == "decimal":
        return f"decimal({tree[1]},{tree[2]})"
    if kind == "array":
        return f"array<{_render(tree[1])}>"
    if kind == "map":
        return f"map<{_render(tree[1])},{_render(tree[2])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{n}:{_render(t)}" for n, t in tree[1]) + ">"
    if kind == "void":
        raise ValueError("a column of Arrow type null has no Hive type; give it a real type")
    return kind


def hms_location(location: str) -> str:
    """A location as the HMS and Hive's FileSystem expect it: local paths as ``file:`` URLs."""
    return location if "://" in location else f"file:{location}"
