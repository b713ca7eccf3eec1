"""Rows grouped by Paimon's bucket hash of a key, modulo any number: a fixed-bucket
table's buckets (modulo its bucket count), or a dynamic-bucket table's log partitions
(modulo their count), computed by Paimon's own row-key extractor, right for every key type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from tablelog.store.integer_hash import INTEGER_WIDTHS, grouped, integer_key_buckets


def key_hash_rows(
    table_schema: Any, key: Sequence[str], data: pa.Table, modulus: int
) -> list[tuple[int, list[int]]]:
    """Row indices of ``data`` per value of the hash of its ``key`` columns modulo
    ``modulus`` (values ascending, rows in input order). ``table_schema``: pypaimon's
    ``TableSchema`` of the table (Paimon serializes the key by its field types)."""
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

    columns = [data.column(k) for k in key]
    if data.num_rows and columns and all(c.type in INTEGER_WIDTHS and not c.null_count for c in columns):
        buckets = integer_key_buckets(columns, modulus)  # the same hash, vectorized
        order, slices = grouped(buckets, modulus)
        return [(value, order[start:stop].tolist()) for value, start, stop in slices]
    options = {**table_schema.options, "bucket": str(modulus), "bucket-key": ",".join(key)}
    extractor = FixedBucketRowKeyExtractor(table_schema.copy(new_options=options))
    groups: dict[int, list[int]] = {}
    offset = 0
    for batch in data.to_batches():
        for _partition, bucket, indices in extractor.extract_partition_bucket_groups(batch):
            rows = range(batch.num_rows) if indices is None else indices.to_pylist()
            groups.setdefault(int(bucket), []).extend(offset + i for i in rows)
        offset += batch.num_rows
    for rows in groups.values():
        rows.sort()
    return sorted(groups.items())
