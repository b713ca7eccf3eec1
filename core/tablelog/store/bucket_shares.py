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

    def rows(self, data: pa.Table, *, by_bucket: bool) -> list[tuple[np.ndarray | None, int | None]]:
        """``(row indices, bucket)`` of the rows of ``data`` this share writes, in input
        order: with ``by_bucket`` one pair per bucket, else one for all (bucket None); row
        indices None: every row."""
        if not by_bucket and self.count == 1:
            return [(None, None)]
        buckets = integer_key_buckets([data.column(k) for k in self.key], self.buckets)
        if not by_bucket:
            rows = np.flatnonzero(buckets % self.count == self.index)
            return [(rows, None)] if len(rows) else []
        out: list[tuple[np.ndarray | None, int | None]] = []
        for bucket in range(self.index, self.buckets, self.count):
            rows = np.flatnonzero(buckets == bucket)
            if len(rows):
                out.append((None if len(rows) == data.num_rows else rows, bucket))
        return out


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
