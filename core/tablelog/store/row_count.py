"""A table's rows at a snapshot, and how many it has.

A snapshot's ``total_record_count`` counts the records in its data files: in a
primary-key table every version of a key until a compaction merges them (3 inserts, an
update and a delete of those keys are 5 records, 2 rows). Only a merge read of the
files tells the rows; it reads the key columns alone, batch by batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from tablelog.store.merged_reads import merged_read_table, merges_with_tablelog
from tablelog.store.partitions import partition_predicate
from tablelog.store.schema import KIND_FIELD


def read_snapshot_rows(
    paimon: Any, snapshot_id: int, buckets: Iterable[int] | None, partitions: Sequence[Mapping[str, Any]] | None,
) -> tuple[pa.Table | None, int]:
    """The rows of ``paimon`` (pypaimon's table) at ``snapshot_id``, without the kind
    column, in the schema the snapshot was committed with (and that schema's id); with
    ``buckets``, only those buckets' rows (in every table partition); with
    ``partitions``, only those table partitions' files are read. None: no rows. A
    merge-engine table's rows are merged by :mod:`tablelog.merging` (:mod:`.merged_reads`)."""
    table = merged_read_table(paimon, {"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    if partitions:
        builder = builder.with_filter(partition_predicate(builder, partitions))
    splits = builder.new_scan().plan().splits()
    if buckets is not None:
        wanted = set(buckets)
        splits = [s for s in splits if s.bucket in wanted]
    result = builder.new_read().to_arrow(splits)
    if result is not None and KIND_FIELD in result.schema.names:
        result = result.drop_columns([KIND_FIELD])
    return result, int(table.table_schema.id)


def count_rows(paimon: Any, snapshot_id: int) -> int:
    """The rows of the primary-key table ``paimon`` (pypaimon's) at ``snapshot_id``."""
    table = merged_read_table(paimon, {"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    if not merges_with_tablelog(paimon):  # a merge engine decides from every column whether a key keeps a row
        builder = builder.with_projection(list(table.table_schema.primary_keys))
    splits = builder.new_scan().plan().splits()
    return sum(batch.num_rows for batch in builder.new_read().to_arrow_batch_reader(splits))

