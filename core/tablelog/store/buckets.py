"""Which bucket each row goes to, as Paimon's own row-key extractor assigns it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def bucket_rows(paimon: Any, data: pa.Table) -> list[tuple[int, list[int]]]:
    """Row indices per bucket (buckets ascending, rows in input order) of ``data`` in
    ``paimon`` (pypaimon's table). A partitioned table's buckets repeat in every table
    partition: the rows of bucket b of every partition are grouped together."""
    extractor = paimon.create_row_key_extractor()
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
