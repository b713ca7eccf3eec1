"""Bucket routing: each row goes to log partition = its Paimon bucket.

Paimon decides a row's bucket by a Murmur3 hash of the bucket key serialized as a
``BinaryRow``. For integer keys (the common case) this module computes the same
hash vectorized with numpy; any other key type goes through Paimon's own
extractor (:meth:`tablelog.store.PaimonTable.bucket_rows`). A test checks both
agree, so tablelog's partitions stay identical to the buckets every Paimon engine
(Java, Rust, Python) writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from tablelog.store import PaimonTable

_C1, _C2, _MASK = np.uint64(0xCC9E2D51), np.uint64(0x1B873593), np.uint64(0xFFFFFFFF)
_SEED = 42
_INTEGER_WIDTHS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def partition_order(store: PaimonTable, data: pa.Table) -> tuple[np.ndarray | None, list[tuple[int, int, int]]]:
    """The rows grouped by partition: ``(order, groups)``, where ``order`` lists row
    indices, partitions ascending and rows in input order within each, and every
    ``(partition, start, stop)`` of ``groups`` is one partition's slice of it.
    ``order`` is None when the input order already is that order (one partition).

    Slices rather than index lists: the writer encodes the rows in this order and
    hands each partition a slice of the encoded values, no per-row look-up."""
    n = data.num_rows
    if n == 0:
        return None, []
    if store.bucket == 1:
        return None, [(0, 0, n)]
    keys = list(store.bucket_keys)
    if keys and all(data.schema.field(k).type in _INTEGER_WIDTHS for k in keys):
        buckets = integer_key_buckets([data.column(k) for k in keys], store.bucket)
        order = np.argsort(buckets, kind="stable")
        sorted_buckets = buckets[order]
        starts = [0, *(np.flatnonzero(np.diff(sorted_buckets)) + 1).tolist()]
        stops = [*starts[1:], n]
        groups = [(int(sorted_buckets[start]), start, stop) for start, stop in zip(starts, stops, strict=True)]
    else:
        grouped = store.bucket_rows(data)
        order = np.fromiter((i for _, rows in grouped for i in rows), np.int64, n)
        groups, start = [], 0
        for bucket, rows in grouped:
            groups.append((bucket, start, start + len(rows)))
            start += len(rows)
    if len(groups) == 1:
        return None, groups
    return order, groups


def integer_key_buckets(columns: list[pa.ChunkedArray | pa.Array], num_buckets: int) -> np.ndarray:
    """Paimon's bucket of each row whose bucket key is these (non-null) integer columns.

    A BinaryRow of k fixed-width fields is 8 bytes of null bits and row kind (all
    zero here), then one 8-byte little-endian slot per field holding the value in
    its own width, zero-padded. Murmur3 runs over its 4-byte words.
    """
    n = len(columns[0])
    h1 = np.full(n, _SEED, dtype=np.uint64)
    zero = np.zeros(n, dtype=np.uint64)
    words = [zero, zero]
    for column in columns:
        width = _INTEGER_WIDTHS[column.type]
        values = column.to_numpy() if isinstance(column, pa.Array) else column.to_numpy()
        unsigned = values.astype(np.dtype(f"int{width}")).view(np.dtype(f"uint{width}")).astype(np.uint64)
        words.append(unsigned & _MASK)
        words.append(unsigned >> np.uint64(32))
    for word in words:
        h1 = _mix_h1(h1, _mix_k1(word))
    h1 = _fmix(h1, 8 + 8 * len(columns))
    signed = h1.astype(np.uint32).view(np.int32).astype(np.int64)
    return np.abs(np.fmod(signed, num_buckets))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _MASK


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    k1 = (k1 * _C1) & _MASK
    k1 = _rotl(k1, 15)
    return (k1 * _C2) & _MASK


def _mix_h1(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * np.uint64(5) + np.uint64(0xE6546B64)) & _MASK


def _fmix(h1: np.ndarray, length: int) -> np.ndarray:
    h1 = h1 ^ np.uint64(length)
    h1 ^= h1 >> np.uint64(16)
    h1 = (h1 * np.uint64(0x85EBCA6B)) & _MASK
    h1 ^= h1 >> np.uint64(13)
    h1 = (h1 * np.uint64(0xC2B2AE35)) & _MASK
    h1 ^= h1 >> np.uint64(16)
    return h1
