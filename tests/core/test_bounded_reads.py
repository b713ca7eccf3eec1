"""tablelog's reads of a data file hold a batch of it, not the file: each Parquet file is
decoded a batch at a time (:func:`tablelog.store.pypaimon_internals.read_files_by_row_group`),
so that a compaction's runs and a full scan's split take the same memory whatever the size
of the files they read. The Arrow memory in use is sampled at every batch handed out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tablelog
from tablelog.commit.compaction import compact
from tablelog.store import layout
from tablelog.store.compaction import bucket_files
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.pypaimon_internals import key_value_file_batches
from tablelog.store.warehouse import Warehouse
from tablelog.table import internals

ROWS = 1_000_000


@pytest.fixture(scope="module")
def one_large_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, int]:
    """A one-bucket table whose one file (written by a compaction) holds many row groups;
    the Arrow bytes of its largest row group."""
    path = tmp_path_factory.mktemp("wh")
    warehouse = Warehouse(str(path))
    create_paimon_table(warehouse, "db.t", pa.schema([("k", pa.int64()), ("payload", pa.string())]), ["k"], bucket=1)
    files = warehouse.open("db.t")
    keys = np.arange(ROWS, dtype=np.int64)
    rows = pa.table({"k": keys, "payload": pa.array([f"{k:0100d}" for k in keys])}, schema=files.schema)
    write = files.new_write()
    try:
        write.write_arrow(rows, ["+I"] * ROWS)
        files.commit(write.prepare_commit(1), commit_user="test", commit_identifier=1, properties={})
    finally:
        write.close()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "ROW_GROUP_BYTES", 1 << 20)
        compact(internals(tablelog.open_table(str(path), "db.t")))
    files = warehouse.open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)
    (file,) = bucket.files
    metadata = pq.ParquetFile(file.file_path).metadata
    assert metadata.num_row_groups >= 6
    largest = max(metadata.row_group(g).num_rows for g in range(metadata.num_row_groups))
    return warehouse, largest * rows.nbytes // ROWS


def _most_in_use(batches: Iterable[Any]) -> tuple[int, int]:
    """The rows of ``batches`` and the most Arrow memory in use (above the start) as each came."""
    start = pa.total_allocated_bytes()
    count = most = 0
    for batch in batches:
        count += batch.num_rows
        most = max(most, pa.total_allocated_bytes() - start)
    return count, most


def test_a_compaction_reads_a_run_s_file_a_batch_at_a_time(one_large_file: tuple[Warehouse, int]) -> None:
    warehouse, row_group_bytes = one_large_file
    files = warehouse.open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)

    count, most = _most_in_use(key_value_file_batches(files.paimon, bucket.partition, bucket.bucket, bucket.files))

    assert count == ROWS
    assert most < 2 * row_group_bytes


def test_a_full_scan_split_holds_a_bounded_part_of_its_file(one_large_file: tuple[Warehouse, int]) -> None:
    warehouse, row_group_bytes = one_large_file
    files = warehouse.open("db.t")
    (split,) = files.scan_splits(files.latest_snapshot().id, 1 << 30)

    count, most = _most_in_use(files.read_split(split))

    assert count == ROWS
    assert most < 2 * row_group_bytes
