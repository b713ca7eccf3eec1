"""Bucket routing: each row goes to log partition = its Paimon bucket.

Paimon decides a row's bucket by hashing its bucket key; computing it with
pypaimon's own extractor keeps tablelog's partitions identical to the buckets
any Paimon engine (Java, Rust, Python) writes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def route_rows(store: Any, data: pa.Table) -> list[tuple[int, list[int]]]:
    """Row indices per partition, partitions ascending, rows in input order."""
    if data.num_rows == 0:
        return []
    if store.bucket == 1:
        return [(0, list(range(data.num_rows)))]
    extractor = store.paimon.create_row_key_extractor()
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
