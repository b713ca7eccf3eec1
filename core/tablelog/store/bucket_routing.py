"""An attempt's rows routed by bucket to the writes of its data files.

A table of fixed buckets whose bucket key is integer columns has each row's bucket
computed here, vectorized (:func:`tablelog.store.integer_hash.integer_key_buckets`, the
hash pypaimon's Python writer takes its buckets from too), once per write: the rows are
put in bucket order and each of several writes of the attempt takes whole buckets (a
bucket has one writer, which numbers its records in the order written), and pypaimon-
rust's writer is given each row's bucket rather than hash every row, holding the GIL.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pyarrow as pa

from tablelog.store.integer_hash import INTEGER_WIDTHS, grouped, integer_key_buckets

#: Rows ``start`` to ``stop`` (of a write's rows in bucket order), all of ``bucket``.
Span = tuple[int, int, int]


@attrs.frozen
class BucketRouting:
    """The rows of a table of ``buckets`` buckets, whose bucket key is the integer
    columns ``key``, routed to ``writes`` writes: write ``i`` takes the buckets ``b`` with
    ``b % writes == i``."""

    key: tuple[str, ...]
    buckets: int
    writes: int

    def route(self, data: pa.Table) -> tuple[np.ndarray | None, list[list[Span]]]:
        """The order to put the rows of ``data`` in (row indices; None: as they are), and
        for each write the spans of its buckets in that order (one a bucket, a write's
        spans one after the other). Rows keep their input order within a bucket: a later
        write of a key is written later."""
        if self.buckets == 1:
            return None, [[(0, 0, data.num_rows)] if data.num_rows else []]
        buckets = integer_key_buckets([data.column(k) for k in self.key], self.buckets)
        rank = buckets if self.writes == 1 else (buckets % self.writes) * self.buckets + buckets
        order, groups = grouped(rank, self.writes * self.buckets)
        spans: list[list[Span]] = [[] for _ in range(self.writes)]
        for ranked, start, stop in groups:
            bucket = ranked % self.buckets
            spans[bucket % self.writes].append((bucket, start, stop))
        return (None if len(groups) <= 1 else order), spans


def bucket_routing(table_schema: Any, schema: pa.Schema, buckets: int, most: int) -> BucketRouting | None:
    """The routing of a table's rows to up to ``most`` writes (pypaimon's ``table_schema``,
    its Arrow ``schema``, its bucket count); None when its rows' buckets are not computed
    here: dynamic buckets, a bucket key not all integers, a table without a primary key
    (whose bucket key may hold nulls)."""
    key = tuple(table_schema.bucket_keys)
    if buckets < 1 or not table_schema.primary_keys or not key or any(
            schema.field(k).type not in INTEGER_WIDTHS for k in key):
        return None
    return BucketRouting(key, buckets, max(1, min(most, buckets)))
