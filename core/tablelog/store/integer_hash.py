"""Paimon's bucket hash of integer keys, vectorized with numpy: the same Murmur3 of the
key serialized as a ``BinaryRow`` that Paimon's row-key extractors compute row by row.
The writer routes rows to log partitions with it (:mod:`tablelog.writing.routing`),
and the store's Python key-value writes take their buckets from it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_SEED = 42
INTEGER_WIDTHS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def integer_key_buckets(columns: list[pa.ChunkedArray | pa.Array], num_buckets: int) -> np.ndarray:
    """Paimon's bucket of each row whose bucket key is these (non-null) integer columns.

    A BinaryRow of k fixed-width fields is 8 bytes of null bits and row kind (all
    zero here), then one 8-byte little-endian slot per field holding the value in
    its own width, zero-padded. Murmur3 runs over its 4-byte words, in 32-bit
    arithmetic (numpy's uint32 wraps as Murmur3 does: no masking). The first two words
    are zero in every row: their hash is one number, computed once.
    """
    n = len(columns[0])
    h1 = np.full(n, _ZERO_HEADER_H1, dtype=np.uint32)
    for column in columns:
        width = INTEGER_WIDTHS[column.type]
        values = column.to_numpy()
        unsigned = values.astype(np.dtype(f"int{width}"), copy=False).view(np.dtype(f"uint{width}"))
        if width == 64:
            low, high = (unsigned & np.uint64(0xFFFFFFFF)).astype(np.uint32), (unsigned >> np.uint64(32)).astype(np.uint32)
            h1 = _mix_h1(_mix_h1(h1, _mix_k1(low)), _mix_k1(high))
        else:
            h1 = _mix_h1(_mix_h1(h1, _mix_k1(unsigned.astype(np.uint32))), np.uint32(0))
    h1 = _fmix(h1, 8 + 8 * len(columns))
    return np.abs(np.fmod(h1.view(np.int32), np.int32(num_buckets))).astype(np.int64)


def _rotl(x: Any, r: int) -> Any:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k1: Any) -> Any:
    return _rotl(k1 * _C1, 15) * _C2


def _mix_h1(h1: Any, k1: Any) -> Any:
    return _rotl(h1 ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h1: np.ndarray, length: int) -> np.ndarray:
    h1 = h1 ^ np.uint32(length)
    h1 ^= h1 >> np.uint32(16)
    h1 *= np.uint32(0x85EBCA6B)
    h1 ^= h1 >> np.uint32(13)
    h1 *= np.uint32(0xC2B2AE35)
    h1 ^= h1 >> np.uint32(16)
    return h1


with np.errstate(over="ignore"):  # Murmur3 wraps around by design
    _ZERO_HEADER_H1 = _mix_h1(_mix_h1(np.uint32(_SEED), np.uint32(0)), np.uint32(0))


def grouped(values: np.ndarray, count: int) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Rows grouped by their value (each of ``values``, in ``0..count-1``): ``(order,
    groups)``, ``order`` the row indices by value ascending (rows in input order within
    a value), each ``(value, start, stop)`` of ``groups`` one value's slice of it."""
    # As 16-bit integers, numpy's stable sort is a radix sort: linear in the rows.
    order = np.argsort(values.astype(np.int16) if count <= 1 << 15 else values, kind="stable")
    ranked = values[order]
    starts = [0, *(np.flatnonzero(np.diff(ranked)) + 1).tolist()] if len(ranked) else []
    stops = [*starts[1:], len(ranked)]
    return order, [(int(ranked[start]), start, stop) for start, stop in zip(starts, stops, strict=True)]
