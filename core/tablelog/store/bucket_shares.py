"""An attempt's rows shared out by bucket among several writes of its data files.

A table of fixed buckets whose bucket key is integer columns has each row's bucket
computed here, vectorized (:func:`tablelog.store.integer_hash.integer_key_buckets`, the
hash pypaimon's Python writer takes its buckets from too): so the rows of an attempt can
go to several writes, each of whole buckets (a bucket has one writer, which numbers its
records in the order written), and a write can give pypaimon-rust's writer each row's
bucket rather than have it hash every row, holding the GIL.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pyarrow as pa

from tablelog.store.integer_hash import INTEGER_WIDTHS, integer_key_buckets


@attrs.frozen
class BucketShare:
    """The rows one write of an attempt writes: those of the buckets ``b`` with
    ``b % count == index``, of a table of ``buckets`` buckets whose bucket key is the
    integer columns ``key``."""

    key: tuple[str, ...]
    buckets: int
    index: int = 0
    count: int = 1

    def rows(self, data: pa.Table, *, by_bucket: bool) -> tuple[np.ndarray | None, list[Span]]:
        """The rows of ``data`` this share writes: their indices (None: every row, as they
        are), and the spans of them to write: with ``by_bucket`` one ``(bucket, start,
        stop)`` a bucket (the rows then in bucket order), else one ``(None, 0, count)``.
        Rows keep their input order within a bucket: a later write of a key is written later."""
        n = data.num_rows
        if not by_bucket and self.count == 1:
            return None, [(None, 0, n)] if n else []
        buckets = integer_key_buckets([data.column(k) for k in self.key], self.buckets)
        mine = None if self.count == 1 else np.flatnonzero(buckets % self.count == self.index)
        if not by_bucket:
            assert mine is not None
            return (None if len(mine) == n else mine), [(None, 0, len(mine))] if len(mine) else []
        own = buckets if mine is None else buckets[mine]
        # As 16-bit integers, numpy's stable sort is a radix sort: linear in the rows.
        order = np.argsort(own.astype(np.int16) if self.buckets <= 1 << 15 else own, kind="stable")
        in_order = own[order]
        starts = [0, *(np.flatnonzero(np.diff(in_order)) + 1).tolist()]
        stops = [*starts[1:], len(own)]
        spans: list[Span] = [(int(in_order[a]), a, b) for a, b in zip(starts, stops, strict=True) if b > a]
        rows = order if mine is None else mine[order]
        return (None if len(spans) == 1 and len(rows) == n else rows), spans


#: Rows ``start`` to ``stop`` of a share's rows, all of ``bucket`` (None: any).
Span = tuple["int | None", int, int]


def bucket_shares(table_schema: Any, schema: pa.Schema, buckets: int, most: int) -> list[BucketShare] | None:
    """Up to ``most`` shares of a table's buckets (pypaimon's ``table_schema``, its Arrow
    ``schema``, its bucket count); None when its rows' buckets are not computed here:
    dynamic buckets, a bucket key not all integers, a table without a primary key (whose
    bucket key may hold nulls)."""
    key = tuple(table_schema.bucket_keys)
    if buckets < 1 or not table_schema.primary_keys or not key or any(schema.field(k).type not in INTEGER_WIDTHS for k in key):
        return None
    count = max(1, min(most, buckets))
    return [BucketShare(key, buckets, index, count) for index in range(count)]
