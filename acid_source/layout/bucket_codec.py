"""Hive's BucketCodec: how the ``bucket`` field of a ROW__ID packs writer id and statement id.

V0 (Hive 1/2) stores the plain bucket number; V1 (Hive 3+) packs
``version(3) | reserved(1) | writer id(12) | reserved(4) | statement id(12)``.
"""

from __future__ import annotations

import numpy as np

_VERSION_SHIFT = 29
_WRITER_SHIFT = 16
_WRITER_MASK = 0x0FFF0000
_STMT_MASK = 0x0FFF
MAX_WRITER_ID = 0x0FFF
MAX_STATEMENT_ID = 0x0FFF


def encode_v1(writer_id: int, statement_id: int = 0) -> int:
    """The V1 bucket property Hive 3 writes for ``writer_id`` and ``statement_id``."""
    if not 0 <= writer_id <= MAX_WRITER_ID:
        raise ValueError(f"writer id {writer_id} is outside 0..{MAX_WRITER_ID}")
    stmt = max(0, statement_id)
    if stmt > MAX_STATEMENT_ID:
        raise ValueError(f"statement id {statement_id} is outside 0..{MAX_STATEMENT_ID}")
    return (1 << _VERSION_SHIFT) | (writer_id << _WRITER_SHIFT) | stmt


def version_of(prop: int) -> int:
    return (prop & 0xE0000000) >> _VERSION_SHIFT


def decode_writer_id(prop: int) -> int:
    """Writer (bucket) id of a bucket property, V0 or V1."""
    if version_of(prop) == 0:
        return prop
    return (prop & _WRITER_MASK) >> _WRITER_SHIFT


def decode_statement_id(prop: int) -> int:
    return 0 if version_of(prop) == 0 else prop & _STMT_MASK


def decode_writer_ids(props: np.ndarray) -> np.ndarray:
    """Vectorized :func:`decode_writer_id` over an int32 array."""
    p = props.astype(np.int64) & 0xFFFFFFFF
    v1 = (p >> _VERSION_SHIFT) != 0
    return np.where(v1, (p & _WRITER_MASK) >> _WRITER_SHIFT, p)


def to_string(prop: int) -> str:
    """Hive's display form, e.g. ``536870912(1.0.0)``."""
    return f"{prop}({version_of(prop)}.{decode_writer_id(prop)}.{decode_statement_id(prop)})"
