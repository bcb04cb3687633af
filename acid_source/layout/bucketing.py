"""Hive's bucket assignment: which ``bucket_N`` file a row of a bucketed table belongs in.

HIVE_ACID_FORMAT.md 6.4.  A writer must route rows exactly as Hive does, otherwise Hive's
bucket pruning (``FixedBucketPruningOptimizer``) and bucket map joins silently skip rows::

    bucket = (hash & 0x7FFFFFFF) % num_buckets
    hash   = 0; for each bucket column: hash = 31 * hash + field_hash(value)   (int32 wrap)

``field_hash`` depends on the table's ``bucketing_version``:

* **2** (Hive 3 default): ``ObjectInspectorUtils.hashCodeMurmur`` -- Hive's Murmur3 32-bit
  (``org.apache.hive.common.util.Murmur3.hash32``, seed 104729, *sign-extended* tail bytes)
  over the big-endian bytes of the value.
* **1** (legacy, Hive 1/2 tables): ``ObjectInspectorUtils.hashCode`` -- Java ``hashCode``
  style values.

Everything is computed with numpy over whole columns, without per-row Python: fixed-width
keys (int, bigint, date, double, ...) are hashed with uint32 array arithmetic; strings and
binaries run Murmur3 block by block over the Arrow offsets/data buffers for all rows at once
(rows sorted by length, so block ``j`` only touches rows that have one), and their legacy
``31 * r + b`` hash is a single prefix sum; timestamp and decimal encodings are built as byte
matrices and hashed in one fixed-length pass per encoded length.  Only a handful of values
far longer than all others (over ~1 KiB more) finish their Murmur3 blocks in a per-row loop.

Per-type field hash (null -> 0 everywhere; ``mm(b)`` = Hive Murmur3 of the bytes ``b``):

============  ===============================  =============================================
Hive type     version 2                        version 1
============  ===============================  =============================================
boolean       1 / 0                            1 / 0
tinyint       value                            value
smallint      mm(2 bytes BE)                   value
int           mm(4 bytes BE)                   value
bigint        mm(8 bytes BE)                   ``(int)(v ^ v >>> 32)``
float         mm(BE bytes of ``(float)         ``floatToIntBits(v)``
              floatToIntBits(v)``) [1]_
double        mm(BE bytes of ``(double)        ``(int)(b ^ b >>> 32)``, ``b =
              doubleToLongBits(v)``) [1]_      doubleToLongBits(v)``
string        mm(UTF-8)                        ``r = 31*r + b`` over signed bytes, r0 = 0
varchar       mm(UTF-8)                        same, but r0 = 1 (``Text.hashCode``)
char          mm(UTF-8, trailing ' ' removed)  as varchar, trailing ' ' removed
binary        mm(bytes) [2]_                   as varchar (``BytesWritable.hashCode``)
date          mm(4 bytes BE of epoch days)     epoch days
timestamp     mm(``TimestampWritable``         ``(int)(x ^ x >>> 32)``, ``x = seconds << 30
              serialized bytes) [3]_           | nanos`` [3]_
decimal       mm(``BigInteger.toByteArray``    ``BigDecimal.hashCode`` of the normalized
              of the normalized unscaled       value (trailing zeros stripped)
              value) [4]_
array         ``r = 31*r + h(elem)``           same with v1 element hashes
map           ``sum(h2(key) ^ h1(value))``     ``sum(h1(key) ^ h1(value))``
struct        ``r = 31*r + h(field)``          same with v1 field hashes
============  ===============================  =============================================

.. [1] ``putFloat(floatToIntBits(f))`` converts the *int* bit pattern numerically back to a
   float before writing it, so e.g. ``1.0f`` is hashed as the bytes of ``1.06535322E9f``.
.. [2] Hive hashes ``BytesWritable.getBytes()``, i.e. the whole backing array, which is
   longer than the value when a reused writable held a longer value before
   (``BytesWritable.set`` keeps its capacity).  This module hashes exactly the value's
   bytes, which is what Hive computes for exactly-sized writables (``new
   BytesWritable(bytes)``, e.g. constants); where Hive hashes a reused writable it does not
   route by value at all, so bucketing on binary columns is best avoided.
.. [3] ``seconds``/``nanos`` of the Hive timestamp, i.e. of the wall clock read as UTC
   (Hive 3 ``TimestampWritableV2``; Hive 2 ``TimestampWritable`` agrees when its JVM runs
   in UTC).  Arrow timestamps must therefore be tz-naive wall-clock values.
.. [4] ``HiveDecimalWritable.getInternalStorage()``; Hive stores decimals normalized, so
   ``1.50`` in a ``decimal(10,2)`` column hashes as unscaled 15, scale 1.

Arrow types map to Hive types in the obvious way (int8 -> tinyint, ..., string -> string,
date32 -> date, decimal128 -> decimal, list -> array, ...).  Pass ``hive_types`` to say which
columns are ``char(n)``/``varchar(n)`` (Arrow has only ``string``; the three hash differently
in version 1, and ``char`` strips trailing spaces) or to hash, say, an int64 Arrow column as
Hive ``int``.  Hive types that are not implemented (``uniontype``, ``timestamp with local time
zone``, intervals) raise :class:`NotImplementedError`.

Here: the public entry points and the per-type encodings. Hive type strings are parsed in
:mod:`.hive_types`; Murmur3 and Java's ``31 * r + b`` kernels live in :mod:`.murmur3` (every
public name stays importable from this module).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .hive_types import hive_type_of, is_binary_type, is_string_type, parse_hive_type
from .murmur3 import SEED, mm_int16, mm_int32, mm_int64, mm_matrix, mm_var, murmur3_32, poly31_var, powers

__all__ = [
    "SEED",
    "bucket_ids",
    "bucket_hash_codes",
    "field_hashes",
    "murmur3_32",
    "parse_hive_type",
    "hive_type_of",
]

_U32 = np.uint32
_FLOAT_NAN_BITS = np.uint32(0x7FC00000)  # Float.floatToIntBits(NaN)
_DOUBLE_NAN_BITS = np.uint64(0x7FF8000000000000)  # Double.doubleToLongBits(NaN)

# Rows processed per chunk: bounds the per-byte temporaries of the string hashes.
_CHUNK_ROWS = 1 << 18


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------

def bucket_ids(columns: Sequence[pa.Array | pa.ChunkedArray], num_buckets: int,
               bucketing_version: int = 2, *,
               hive_types: Sequence[str | tuple | None] | None = None) -> np.ndarray:
    """Hive's bucket number (int32, ``0 <= b < num_buckets``) of every row.

    :param columns: the table's bucket columns, in ``CLUSTERED BY`` order, all the same length.
    :param num_buckets: the table's bucket count (``> 0``).
    :param bucketing_version: the table property ``bucketing_version`` (1 or 2).
    :param hive_types: optional Hive type per column (string or parsed tree, ``None`` = derive
        from the Arrow type); needed for ``char``/``varchar`` columns.
    """
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)):
        raise TypeError(f"num_buckets must be an int, got {num_buckets!r}")
    if not 0 < num_buckets <= 0x7FFFFFFF:
        raise ValueError(f"Number of Buckets must be > 0 (and fit an int), got {num_buckets}")
    h = bucket_hash_codes(columns, bucketing_version, hive_types=hive_types)
    return ((h.view(np.uint32) & _U32(0x7FFFFFFF)) % _U32(num_buckets)).astype(np.int32)


def bucket_hash_codes(columns: Sequence[pa.Array | pa.ChunkedArray], bucketing_version: int = 2,
                      *, hive_types: Sequence[str | tuple | None] | None = None) -> np.ndarray:
    """``getBucketHashCode``: the combined int32 hash of the bucket columns of every row."""
    columns = list(columns)
    if not columns:
        raise ValueError("at least one bucket column is needed")
    if hive_types is None:
        hive_types = [None] * len(columns)
    hive_types = list(hive_types)
    if len(hive_types) != len(columns):
        raise ValueError(f"{len(hive_types)} hive_types for {len(columns)} columns")
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError(f"bucket columns differ in length: {[len(c) for c in columns]}")
    h = np.zeros(n, dtype=np.uint32)
    for col, ht in zip(columns, hive_types):
        fh = field_hashes(col, bucketing_version, hive_type=ht).view(np.uint32)
        h *= _U32(31)
        h += fh
    return h.view(np.int32)


def field_hashes(column: pa.Array | pa.ChunkedArray, bucketing_version: int = 2, *,
                 hive_type: str | tuple | None = None) -> np.ndarray:
    """The int32 field hash (``hashCodeMurmur`` for version 2, ``hashCode`` for version 1)
    of every value of one column; nulls hash to 0."""
    if bucketing_version not in (1, 2):
        raise ValueError(f"bucketing_version must be 1 or 2, got {bucketing_version!r}")
    if isinstance(column, pa.ChunkedArray):
        chunks = column.chunks
    elif isinstance(column, pa.Array):
        chunks = [column]
    else:
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")
    if isinstance(hive_type, str):
        htype = parse_hive_type(hive_type)
    elif hive_type is None:
        htype = hive_type_of(column.type)
    else:
        htype = tuple(hive_type)
    out = []
    for chunk in chunks:
        for start in range(0, len(chunk), _CHUNK_ROWS):
            out.append(_hash(chunk.slice(start, _CHUNK_ROWS), htype, bucketing_version))
    if not out:
        return np.zeros(0, dtype=np.int32)
    return np.concatenate(out).view(np.int32)


# ---------------------------------------------------------------------------------------
# Per-type hashing (returns uint32, nulls -> 0)
# ---------------------------------------------------------------------------------------

def _null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_null().to_numpy(zero_copy_only=False)


def _fixed_values(arr: pa.Array, dtype) -> np.ndarray:
    """The value buffer of a fixed-width array as numpy (values under nulls are arbitrary)."""
    dtype = np.dtype(dtype)
    buf = arr.buffers()[1]
    if buf is None:  # all-null arrays may have no data buffer
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def _binary_parts(arr: pa.Array):
    """(data uint8, starts int64, lengths int64) of a string/binary array."""
    t = arr.type
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        buf = arr.buffers()[1]
        data = (np.frombuffer(buf, dtype=np.uint8) if buf is not None
                else np.zeros(0, dtype=np.uint8))
        starts = (np.arange(len(arr), dtype=np.int64) + arr.offset) * w
        lengths = np.full(len(arr), w, dtype=np.int64)
        if buf is None:
            lengths[:] = 0
        return data, starts, lengths
    if not (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):  # views etc.
        arr = arr.cast(pa.large_binary())
        t = arr.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    off_dtype = np.int64 if large else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=arr.offset + len(arr) + 1)[arr.offset:]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets[:-1], np.diff(offsets)


def _strip_trailing_spaces(data, starts, lengths) -> np.ndarray:
    """Lengths with trailing ' ' (0x20) removed (``HiveChar.getStrippedValue``)."""
    lengths = lengths.copy()
    active = np.nonzero(lengths > 0)[0]
    while active.size:
        last = data[starts[active] + lengths[active] - 1]
        sp = last == 0x20
        active = active[sp]
        lengths[active] -= 1
        active = active[lengths[active] > 0]
    return lengths


_CANONICAL_ARROW = {
    "boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
    "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(), "date": pa.date32(),
}


def _hash(arr: pa.Array, ht: tuple, v: int) -> np.ndarray:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    kind = ht[0]
    if kind == "void" or pa.types.is_null(arr.type):
        return np.zeros(n, dtype=np.uint32)
    if kind in ("array", "map", "struct"):
        h = _hash_nested(arr, ht, v)
    else:
        h = _hash_primitive(arr, ht, v)
    nulls = _null_mask(arr)
    if nulls is not None:
        h[nulls] = 0
    return h


def _hash_primitive(arr: pa.Array, ht: tuple, v: int) -> np.ndarray:
    kind = ht[0]
    target = _CANONICAL_ARROW.get(kind)
    if target is not None and arr.type != target:
        if kind == "date" and pa.types.is_date64(arr.type):
            arr = pc.cast(arr, pa.date32())
        elif is_string_type(arr.type) or is_binary_type(arr.type) or pa.types.is_timestamp(arr.type):
            raise TypeError(f"cannot hash Arrow {arr.type} as Hive {kind}")
        else:
            arr = pc.cast(arr, target)  # safe cast: raises on overflow / truncation
    if kind == "boolean":
        return pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint32)
    if kind == "tinyint":
        return _fixed_values(arr, np.int8).astype(np.int32).view(np.uint32)
    if kind == "smallint":
        x = _fixed_values(arr, np.int16)
        return mm_int16(x) if v == 2 else x.astype(np.int32).view(np.uint32)
    if kind in ("int", "date"):
        x = _fixed_values(arr, np.int32)
        return mm_int32(x) if v == 2 else x.view(np.uint32).copy()
    if kind == "bigint":
        x = _fixed_values(arr, np.int64)
        return mm_int64(x) if v == 2 else _fold64(x.view(np.uint64))
    if kind == "float":
        bits = _fixed_values(arr, np.uint32)
        f = bits.view(np.float32)
        bits = np.where(np.isnan(f), _FLOAT_NAN_BITS, bits)  # floatToIntBits
        if v == 1:
            return bits
        # putFloat((float) intBits): the int is converted numerically to a float
        return mm_int32(bits.view(np.int32).astype(np.float32).view(np.int32))
    if kind == "double":
        bits = _fixed_values(arr, np.uint64)
        d = bits.view(np.float64)
        bits = np.where(np.isnan(d), _DOUBLE_NAN_BITS, bits)  # doubleToLongBits
        if v == 1:
            return _fold64(bits)
        return mm_int64(bits.view(np.int64).astype(np.float64).view(np.int64))
    if kind in ("string", "varchar", "char", "binary"):
        if kind == "binary":
            if not is_binary_type(arr.type) and not is_string_type(arr.type):
                raise TypeError(f"cannot hash Arrow {arr.type} as Hive binary")
        elif not is_string_type(arr.type):
            raise TypeError(f"cannot hash Arrow {arr.type} as Hive {kind} (need a string array)")
        data, starts, lengths = _binary_parts(arr)
        if kind == "char":
            lengths = _strip_trailing_spaces(data, starts, lengths)
        if v == 2:
            return mm_var(data, starts, lengths)
        # v1: STRING hashes like String.hashCode over bytes; Text/BytesWritable start at 1
        return poly31_var(data, starts, lengths, 0 if kind == "string" else 1)
    if kind == "timestamp":
        return _hash_timestamp(arr, v)
    if kind == "decimal":
        return _hash_decimal(arr, v)
    raise NotImplementedError(f"bucketing hash of Hive type {kind!r} is not implemented")


def _fold64(bits: np.ndarray) -> np.ndarray:
    """``(int) (x ^ (x >>> 32))`` of uint64 values."""
    bits = bits.astype(np.uint64, copy=False)
    return ((bits ^ (bits >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


# -- timestamp ---------------------------------------------------------------------------

_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _hash_timestamp(arr: pa.Array, v: int) -> np.ndarray:
    if not pa.types.is_timestamp(arr.type):
        raise TypeError(f"cannot hash Arrow {arr.type} as Hive timestamp")
    if arr.type.tz is not None:
        raise ValueError(
            f"Hive timestamps are wall-clock values: convert the tz-aware Arrow {arr.type} "
            "column to a tz-naive wall clock (in the zone Hive should see) before bucketing")
    raw = _fixed_values(arr, np.int64)
    unit = _UNIT_NANOS[arr.type.unit]
    per_sec = 1_000_000_000 // unit
    seconds = raw // per_sec  # floor, as Timestamp.toEpochSecond()
    nanos = (raw % per_sec) * unit  # 0 <= nanos < 1e9
    if v == 1:  # TimestampWritable.hashCode
        x = (seconds.view(np.uint64) << np.uint64(30)) | nanos.view(np.uint64)
        return _fold64(x)
    return _mm_timestamp_bytes(seconds, nanos)


_BYTE_LIMITS = np.array([(1 << (8 * k)) - 1 for k in range(8)], dtype=np.uint64)


def _vlong_parts(x: np.ndarray):
    """Hadoop ``WritableUtils.writeVLong`` of int64 values as (first byte, magnitude, length).

    -112..127 is the single byte itself; otherwise a byte -113..-120 (positive) or
    -121..-128 (negative, one's complement stored) giving the count of big-endian magnitude
    bytes that follow: ``length - 1`` low bytes of ``magnitude``.
    """
    small = (x >= -112) & (x <= 127)
    neg = x < 0
    mag = np.where(neg, ~x, x).view(np.uint64)
    nbytes = np.searchsorted(_BYTE_LIMITS, mag, side="left")  # significant bytes of mag
    first = np.where(small, x, np.where(neg, -120 - nbytes, -112 - nbytes))
    return first.astype(np.int8).view(np.uint8), mag, np.where(small, 1, 1 + nbytes)


def _vlong_matrix(first: np.ndarray, mag: np.ndarray, length: int) -> np.ndarray:
    """The encoded bytes (rows, length) of VLongs that all have the same length."""
    be = mag.astype(">u8").view(np.uint8).reshape(-1, 8)
    return np.concatenate([first[:, None], be[:, 9 - length:]], axis=1)


def _reverse_nanos(nanos: np.ndarray) -> np.ndarray:
    """The 9 decimal digits of the nanoseconds reversed (``setNanosBytes``)."""
    rev = np.zeros_like(nanos)
    x = nanos.copy()
    for _ in range(9):
        rev = rev * 10 + x % 10
        x //= 10
    return rev


def _mm_timestamp_bytes(seconds: np.ndarray, nanos: np.ndarray) -> np.ndarray:
    """Murmur3 of ``TimestampWritable(V2).getBytes()``.

    4 bytes BE: low 31 bits of the seconds, top bit set when more follows; then, if the
    nanos are non-zero or the seconds need more than 31 bits, a VLong of the reversed nanos
    (``-rev - 1`` when a second VLong follows); then a VLong of ``seconds >> 31``.
    """
    n = len(seconds)
    out = np.empty(n, dtype=np.uint32)
    rev = _reverse_nanos(nanos)
    has_second = (seconds < 0) | (seconds > 0x7FFFFFFF)
    flag = (rev != 0) | has_second
    first_int = (seconds & 0x7FFFFFFF) | np.where(flag, np.int64(0x80000000), 0)
    head = first_int.astype(np.uint32).astype(">u4").view(np.uint8).reshape(n, 4)
    f1, m1, len1 = _vlong_parts(np.where(has_second, -rev - 1, rev))
    len1 = np.where(flag, len1, 0)
    f2, m2, len2 = _vlong_parts(seconds >> 31)
    len2 = np.where(has_second, len2, 0)
    combo = len1 * 16 + len2
    for c in np.unique(combo):  # a handful of layouts: one fixed-length pass each
        idx = np.nonzero(combo == c)[0]
        a, b = int(c) // 16, int(c) % 16
        parts = [head[idx]]
        if a:
            parts.append(_vlong_matrix(f1[idx], m1[idx], a))
        if b:
            parts.append(_vlong_matrix(f2[idx], m2[idx], b))
        out[idx] = mm_matrix(np.concatenate(parts, axis=1))
    return out


# -- decimal -----------------------------------------------------------------------------
#
# Values are handled as sign + magnitude in four 32-bit limbs (most significant first, held
# in uint64 so that long division by 10 fits): Hive's decimals have at most 38 digits.

_M32 = np.uint64(0xFFFFFFFF)


def _decimal_words(arr: pa.Array):
    """(lo, hi) uint64 halves of the 128-bit two's-complement unscaled values."""
    width = arr.type.byte_width
    n = len(arr)
    buf = arr.buffers()[1]
    if buf is None:
        z = np.zeros(n, dtype=np.uint64)
        return z, z.copy()
    if width in (4, 8):  # decimal32 / decimal64
        v = np.frombuffer(buf, dtype=f"<i{width}", count=arr.offset + n)[arr.offset:]
        v = v.astype(np.int64)
        return v.view(np.uint64).copy(), (v >> 63).view(np.uint64)
    words = np.frombuffer(buf, dtype="<u8", count=(arr.offset + n) * (width // 8))
    words = words.reshape(-1, width // 8)[arr.offset:]
    lo, hi = words[:, 0].copy(), words[:, 1].copy()
    if width > 16:  # decimal256: must still fit 128 bits (Hive: at most 38 digits)
        ext = (hi.view(np.int64) >> 63).view(np.uint64)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        if np.any(valid & ~np.all(words[:, 2:] == ext[:, None], axis=1)):
            raise ValueError(f"{arr.type} value beyond 38 digits: not a Hive decimal")
    return lo, hi


def _neg128(lo: np.ndarray, hi: np.ndarray):
    nlo = ~lo + np.uint64(1)
    return nlo, ~hi + (nlo == 0).astype(np.uint64)


def _hash_decimal(arr: pa.Array, v: int) -> np.ndarray:
    if not pa.types.is_decimal(arr.type):
        raise TypeError(f"cannot hash Arrow {arr.type} as Hive decimal")
    scale = arr.type.scale
    if scale < 0:
        raise NotImplementedError(f"bucketing hash of Arrow {arr.type} (negative scale)")
    n = len(arr)
    lo, hi = _decimal_words(arr)
    neg = hi >> np.uint64(63) == 1
    mlo, mhi = _neg128(lo, hi)
    mlo, mhi = np.where(neg, mlo, lo), np.where(neg, mhi, hi)
    limbs = [mhi >> np.uint64(32), mhi & _M32, mlo >> np.uint64(32), mlo & _M32]
    zero = (mlo == 0) & (mhi == 0)

    # HiveDecimal is normalized: strip trailing decimal zeros (zero has scale 0)
    sc = np.where(zero, 0, scale).astype(np.int64)
    active = np.nonzero(sc > 0)[0]
    while active.size:
        rem = np.zeros(active.size, dtype=np.uint64)
        quot = []
        for limb in limbs:  # long division of the magnitude by 10
            cur = (rem << np.uint64(32)) | limb[active]
            quot.append(cur // np.uint64(10))
            rem = cur % np.uint64(10)
        ok = rem == 0
        active = active[ok]
        for limb, q in zip(limbs, quot):
            limb[active] = q[ok]
        sc[active] -= 1
        active = active[sc[active] > 0]

    if v == 1:  # BigDecimal.hashCode: 31 * (signum * fold31(magnitude ints)) + scale
        h = np.zeros(n, dtype=np.uint32)
        for limb in limbs:
            h = h * _U32(31) + limb.astype(np.uint32)
        h = np.where(neg, (-h.view(np.int32)).view(np.uint32), h)
        return h * _U32(31) + sc.astype(np.uint32)

    # version 2: Murmur3 of BigInteger.toByteArray() (minimal two's complement, big-endian)
    mlo = (limbs[2] << np.uint64(32)) | limbs[3]
    mhi = (limbs[0] << np.uint64(32)) | limbs[1]
    nlo, nhi = _neg128(mlo, mhi)
    ulo, uhi = np.where(neg, nlo, mlo), np.where(neg, nhi, mhi)
    be = np.concatenate([uhi.astype(">u8").view(np.uint8).reshape(n, 8),
                         ulo.astype(">u8").view(np.uint8).reshape(n, 8)], axis=1)
    # length = bitLength() / 8 + 1, bitLength of x = (u >= 0 ? u : ~u)
    xbe = np.where(neg[:, None], ~be, be)
    nz = np.concatenate([xbe != 0, np.ones((n, 1), bool)], axis=1)
    first = np.argmax(nz, axis=1)  # index of the first non-zero byte (16 if none)
    top = xbe[np.arange(n), np.minimum(first, 15)]
    length = np.maximum(16 - first + (top >= 0x80), 1)
    out = np.empty(n, dtype=np.uint32)
    for length_ in np.unique(length):
        idx = np.nonzero(length == length_)[0]
        out[idx] = mm_matrix(be[idx, 16 - int(length_):])
    return out


# -- nested ------------------------------------------------------------------------------

def _list_parts(arr: pa.Array):
    """(child values array, starts, lengths) with the child sliced to the used range."""
    if pa.types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        starts = np.arange(len(arr), dtype=np.int64) * size
        lengths = np.full(len(arr), size, dtype=np.int64)
        return arr.values.slice(arr.offset * size, len(arr) * size), starts, lengths
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    return arr.values.slice(lo, hi - lo), offsets[:-1] - lo, np.diff(offsets)


def _segment_sums(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    csum = np.zeros(len(values) + 1, dtype=np.uint32)
    np.cumsum(values, dtype=np.uint32, out=csum[1:])
    return csum[starts + lengths] - csum[starts]


def _hash_nested(arr: pa.Array, ht: tuple, v: int) -> np.ndarray:
    kind = ht[0]
    n = len(arr)
    if kind == "struct":
        if not pa.types.is_struct(arr.type):
            raise TypeError(f"cannot hash Arrow {arr.type} as Hive struct")
        fields = ht[1]
        if len(fields) != arr.type.num_fields:
            raise TypeError(f"Hive struct has {len(fields)} fields, Arrow {arr.type} has "
                            f"{arr.type.num_fields}")
        h = np.zeros(n, dtype=np.uint32)
        for child, (_, ft) in zip(arr.flatten(), fields):
            h *= _U32(31)
            h += _hash(child, ft, v)
        return h
    if kind == "map":
        if not pa.types.is_map(arr.type):
            raise TypeError(f"cannot hash Arrow {arr.type} as Hive map")
        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        lo, hi = int(offsets[0]), int(offsets[-1])
        keys = arr.keys.slice(lo, hi - lo)
        items = arr.items.slice(lo, hi - lo)
        # Hive: key with the table's hash, value always with the legacy hash
        entry = _hash(keys, ht[1], v) ^ _hash(items, ht[2], 1)
        return _segment_sums(entry, offsets[:-1] - lo, np.diff(offsets))
    if kind == "array":
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)
                or pa.types.is_fixed_size_list(arr.type)):
            raise TypeError(f"cannot hash Arrow {arr.type} as Hive array")
        values, starts, lengths = _list_parts(arr)
        eh = _hash(values, ht[1], v)
        # r = sum(h_i * 31**(L-1-i)): weight each element by its distance from its list's end
        # (the lists tile the sliced child array back to back)
        ends = starts + lengths
        from_end = np.repeat(ends - 1, lengths) - np.arange(len(eh), dtype=np.int64)
        pw = powers(31, int(lengths.max()) if n else 0)
        return _segment_sums(eh * pw[from_end], starts, lengths)
    raise NotImplementedError(f"bucketing hash of Hive type {kind!r} is not implemented")
