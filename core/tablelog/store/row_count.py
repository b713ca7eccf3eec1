"""How many rows a table has at a snapshot.

A snapshot's ``total_record_count`` counts the records in its data files: in a
primary-key table every version of a key until a compaction merges them (3 inserts, an
update and a delete of those keys are 5 records, 2 rows). Only a merge read of the
files tells the rows; it reads the key columns alone, batch by batch.
"""

from __future__ import annotations

from typing import Any


def count_rows(paimon: Any, snapshot_id: int) -> int:
    """The rows of the primary-key table ``paimon`` (pypaimon's) at ``snapshot_id``."""
    table = paimon.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder().with_projection(list(table.table_schema.primary_keys))
    splits = builder.new_scan().plan().splits()
    return sum(batch.num_rows for batch in builder.new_read().to_arrow_batch_reader(splits))

