"""Hive's Murmur3 (``org.apache.hive.common.util.Murmur3.hash32``: MurmurHash3_x86_32, seed
104729, sign-extended tail bytes) and Java's ``31 * r + b`` byte hash, as numpy kernels over
many values at once, plus a one-value reference. The hashing kernels of :mod:`.bucketing`
(HIVE_ACID_FORMAT.md 6.4); numpy only.
"""

from __future__ import annotations

import struct

import numpy as np

SEED = 104729  # org.apache.hive.common.util.Murmur3.DEFAULT_SEED

_U32 = np.uint32
_C1 = _U32(0xCC9E2D51)
_C2 = _U32(0x1B873593)
_N = _U32(0xE6546B64)
_M = _U32(5)
_F1 = _U32(0x85EBCA6B)
_F2 = _U32(0xC2B2AE35)

# Murmur3 over variable-length values: once at most this many rows still have blocks left
# and more than _LONG_BLOCKS blocks remain, those rows finish in a per-row loop.
_LONG_ROWS = 16
_LONG_BLOCKS = 256


def murmur3_32(data: bytes, seed: int = SEED) -> int:
    """Hive's ``Murmur3.hash32(data)`` (signed int32), one value at a time.

    Standard MurmurHash3_x86_32 except that the 1-3 tail bytes are sign-extended.
    """
    h = seed & 0xFFFFFFFF
    n = len(data)
    nblocks = n >> 2
    for (k,) in struct.iter_unpack("<I", data[: nblocks * 4]):
        h = _scalar_body(h, k)
    tail = data[nblocks * 4:]
    if tail:
        k1 = 0
        for i in range(len(tail) - 1, -1, -1):  # data[i] << 8*i, sign-extended
            b = tail[i] - 256 if tail[i] >= 128 else tail[i]
            k1 ^= (b << (8 * i)) & 0xFFFFFFFF
        h ^= _scalar_mix_k(k1)
    return _scalar_fmix(h, n)


# ---------------------------------------------------------------------------------------
# Scalar Murmur3 pieces (reference, and the tail of very long values)
# ---------------------------------------------------------------------------------------

def _scalar_mix_k(k: int) -> int:
    k = (k * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    return (k * 0x1B873593) & 0xFFFFFFFF


def _scalar_body(h: int, k: int) -> int:
    h ^= _scalar_mix_k(k)
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF


def _scalar_fmix(h: int, length: int) -> int:
    h ^= length & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


# ---------------------------------------------------------------------------------------
# Vectorized Murmur3 (uint32 arrays; all operations wrap mod 2**32)
# ---------------------------------------------------------------------------------------

def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _mix_k(k: np.ndarray) -> np.ndarray:
    k = k * _C1
    k = _rotl(k, 15)
    k *= _C2
    return k


def _mix_h(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One body block: ``h = rotl(h ^ mix(k), 13) * 5 + n``."""
    h = h ^ _mix_k(k)
    h = _rotl(h, 13)
    h *= _M
    h += _N
    return h


def _fmix(h: np.ndarray, length) -> np.ndarray:
    h = h ^ np.asarray(length).astype(np.uint32)
    h ^= h >> _U32(16)
    h *= _F1
    h ^= h >> _U32(13)
    h *= _F2
    h ^= h >> _U32(16)
    return h


def _seed(n: int) -> np.ndarray:
    return np.full(n, SEED, dtype=np.uint32)


def _mm_words(words: list[np.ndarray], length: int) -> np.ndarray:
    """Murmur3 of fixed-length keys made of whole 4-byte blocks (already little-endian words)."""
    h = _seed(len(words[0]))
    for k in words:
        h = _mix_h(h, k)
    return _fmix(h, length)


def mm_int32(v: np.ndarray) -> np.ndarray:
    """Murmur3 of ``ByteBuffer.putInt(v)`` (4 bytes big-endian)."""
    return _mm_words([v.astype(">i4").view("<u4")], 4)


def mm_int64(v: np.ndarray) -> np.ndarray:
    """Murmur3 of ``ByteBuffer.putLong(v)`` (8 bytes big-endian)."""
    w = v.astype(">i8").view("<u4").reshape(-1, 2)
    return _mm_words([w[:, 0], w[:, 1]], 8)


def mm_int16(v: np.ndarray) -> np.ndarray:
    """Murmur3 of ``ByteBuffer.putShort(v)``: a 2-byte tail, sign-extended."""
    v = v.astype(np.int16)
    b0 = (v >> 8).astype(np.int32)  # first (high) byte, as a signed byte
    b1 = v.astype(np.int8).astype(np.int32)  # second (low) byte, as a signed byte
    k1 = ((b1 << 8) ^ b0).view(np.uint32)
    h = _seed(len(v)) ^ _mix_k(k1)
    return _fmix(h, 2)


def mm_matrix(mat: np.ndarray) -> np.ndarray:
    """Murmur3 of every row of a (rows, L) uint8 matrix (fixed-length keys of L bytes)."""
    rows, length = mat.shape
    nb = length >> 2
    h = _seed(rows)
    if nb:
        words = np.ascontiguousarray(mat[:, : 4 * nb]).view("<u4")
        for j in range(nb):
            h = _mix_h(h, words[:, j])
    if length & 3:
        k1 = np.zeros(rows, dtype=np.int32)
        for i in range(length - 4 * nb):  # sign-extended tail bytes
            k1 ^= mat[:, 4 * nb + i].view(np.int8).astype(np.int32) << (8 * i)
        h ^= _mix_k(k1.view(np.uint32))
    return _fmix(h, length)


def mm_var(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Murmur3 of ``data[starts[i] : starts[i] + lengths[i]]`` for every i (uint8 data)."""
    n = len(starts)
    out = _seed(n)
    if n == 0:
        return out
    starts = starts.astype(np.int64, copy=False)
    lengths = lengths.astype(np.int64, copy=False)
    buf = np.zeros(len(data) + 4, dtype=np.uint8)  # padded: tail reads never run off the end
    buf[: len(data)] = data
    # every (unaligned) little-endian 4-byte word of the buffer: words[i] = buf[i:i+4]
    words = np.ndarray(shape=(len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))

    nblocks = lengths >> 2
    max_nb = int(nblocks.max())
    # rows with the most blocks first (small keys: numpy's stable sort is a radix sort)
    key = max_nb - nblocks
    key = key.astype(np.uint16 if max_nb < 1 << 16 else np.int64)
    order = np.argsort(key, kind="stable")
    nb = nblocks[order]
    st = starts[order]
    h = _seed(n)
    nb_asc = nb[::-1]
    j = 0
    while j < max_nb:
        cnt = n - int(np.searchsorted(nb_asc, j, side="right"))  # rows with more than j blocks
        if cnt <= _LONG_ROWS and max_nb - j > _LONG_BLOCKS:
            for r in range(cnt):  # a few very long values: finish their blocks row by row
                s, e = int(st[r]) + 4 * j, int(st[r]) + 4 * int(nb[r])
                hr = int(h[r])
                for (k,) in struct.iter_unpack("<I", buf[s:e].tobytes()):
                    hr = _scalar_body(hr, k)
                h[r] = hr
            break
        h[:cnt] = _mix_h(h[:cnt], words[st[:cnt] + 4 * j])
        j += 1

    # tail: 1-3 bytes, each sign-extended before shifting (Hive's variant)
    ln = lengths[order]
    tail = (ln & 3).astype(np.int32)
    if tail.any():
        w = words[st + 4 * nb].view(np.int32)  # the (padded) 4 bytes after the last block
        k1 = np.zeros(n, dtype=np.int32)
        for i in (2, 1, 0):
            b = (w << (24 - 8 * i)) >> 24  # byte i, sign-extended (arithmetic shift)
            k1 ^= np.where(tail > i, b << (8 * i), 0).astype(np.int32)
        h ^= np.where(tail > 0, _mix_k(k1.view(np.uint32)), _U32(0))
    out[order] = _fmix(h, ln)
    return out


# ---------------------------------------------------------------------------------------
# Legacy (version 1) hash of byte strings: r = 31 * r + (signed byte)
# ---------------------------------------------------------------------------------------

_INV31 = pow(31, -1, 1 << 32)  # 31 is odd, hence invertible mod 2**32


def powers(base: int, n: int) -> np.ndarray:
    """``base**i mod 2**32`` for i in 0..n (uint32)."""
    p = np.empty(n + 1, dtype=np.uint32)
    p[0] = 1
    k = 1
    while k <= n:  # doubling: p[k:2k] = p[0:k] * base**k
        step = min(k, n + 1 - k)
        np.multiply(p[:step], _U32(pow(base, k, 1 << 32)), out=p[k:k + step])
        k += step
    return p


def poly31_var(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, init: int) -> np.ndarray:
    """``r = init; for b in bytes: r = 31 * r + (byte) b`` for every value (uint32).

    With ``S[i] = sum(b_t * 31**-(t+1) for t < i)`` over the whole data range (31 has an
    inverse mod 2**32), the value ``data[s:e]`` hashes to ``init * 31**(e-s) +
    31**e * (S[e] - S[s])``: one pass of prefix sums, no per-row work.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    starts = starts.astype(np.int64, copy=False)
    lengths = lengths.astype(np.int64, copy=False)
    lo = int(starts.min())
    hi = int((starts + lengths).max())
    m = max(hi - lo, 0)
    s = starts - lo
    e = s + lengths
    p31 = powers(31, m)
    out = p31[lengths] * _U32(init)
    if m == 0:
        return out
    signed = data[lo:hi].view(np.int8).astype(np.int32).view(np.uint32)
    signed *= powers(_INV31, m)[1:]
    csum = np.zeros(m + 1, dtype=np.uint32)
    np.cumsum(signed, dtype=np.uint32, out=csum[1:])
    return out + p31[e] * (csum[e] - csum[s])
