"""A full scan in splits (what the Spark source's tasks read): for every merge engine, a
bucket of overlapping sorted runs (a compacted run of several files and level-0 files)
cut into several key ranges returns the rows of the table's whole read, each once; a
dynamic-bucket, partitioned table's splits too; and a task's memory holds a batch and the
files it merges, not its bucket."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION, merge_reference
from tablelog.testing.merge_reference import ENGINES, Engine, Input, Model, writes_as_changes

#: Small files, so that a few thousand rows make buckets of many files and splits.
SMALL = {**NO_COMPACTION, "target-file-size": "4 kb"}
DEDUPLICATE = Engine("deduplicate", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                     {}, lambda old, kind, new: None if kind in ("-D", "-U") else new,
                     lambda rng, n: [("-D" if rng.random() < 0.15 else "+I",
                                      {"id": rng.randrange(12), "v": f"v{rng.randrange(9)}"}) for _ in range(n)])


def _writes(engine: Engine, rng: random.Random, blocks: int) -> list[Input]:
    """The engine's random inputs, their keys spread over ``blocks`` times its key range."""
    writes = []
    for block in range(blocks):
        for kind, row in engine.inputs(rng, 12):
            writes.append((kind, {**row, "id": row["id"] + 16 * block}))
    return writes


def _commit(table: Table, model: Model, writes: list[Input]) -> None:
    with table.writer() as writer:
        writer.write(writes_as_changes(writes))
        writer.commit()
    model.commit(writes)


def _split_rows(table: Table, target_size: int) -> tuple[list[Any], list[dict[str, Any]]]:
    files = internals(table).files
    splits = files.scan_splits(files.latest_snapshot().id, target_size)
    return splits, [row for split in splits for rows in files.read_split(split) for row in rows.to_pylist()]


@pytest.mark.parametrize("engine", [*sorted(ENGINES), "deduplicate"])
def test_a_full_scan_cut_into_key_ranges_returns_the_rows_of_the_whole_read_each_once(
    tmp_path: Path, engine: str,
) -> None:
    chosen = DEDUPLICATE if engine == "deduplicate" else ENGINES[engine]
    table = merge_reference.create(str(tmp_path), chosen, {"log.system": "none"}, **SMALL)
    model, rng = Model(chosen), random.Random(engine)
    _commit(table, model, _writes(chosen, rng, 100))
    _commit(table, model, _writes(chosen, rng, 100))
    table.compact()  # a sorted run of several files in each bucket
    _commit(table, model, _writes(chosen, rng, 60))  # and level-0 files over it
    _commit(table, model, _writes(chosen, rng, 60))
    splits, rows = _split_rows(table, 1024)
    # first-row compacts every commit out of level 0: its buckets are one sorted run, read unmerged
    assert all(split.merged is not chosen.first_row for split in splits)
    if not chosen.first_row:
        assert {f.level > 0 for split in splits for f in split.files} == {True, False}
        assert sum(split.lo is not None for split in splits) >= 4  # cut into key ranges
    assert min(Counter(split.bucket for split in splits).values()) >= 2  # each bucket read by several tasks
    assert Counter(row["id"] for row in rows).most_common(1)[0][1] == 1  # each key once
    by_key = sorted(rows, key=lambda row: row["id"])
    assert by_key == sorted(table.rows().to_pylist(), key=lambda row: row["id"])
    assert {row["id"]: row for row in by_key} == model.rows


def test_a_dynamic_bucket_partitioned_tables_splits_read_each_row_of_the_chosen_partitions_once(
    tmp_path: Path,
) -> None:
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        ("v", pa.int64())])
    table = tablelog.create_table(str(tmp_path), "db.d", schema, primary_key=["dt", "id"], partition_keys=["dt"],
                                  bucket=-1, options={**SMALL, "dynamic-bucket.target-row-num": "1500"})
    for version in range(3):
        with table.writer() as writer:
            writer.write([{"dt": dt, "id": i, "v": version} for dt in ("a", "b") for i in range(version, 4000, 2)])
            writer.commit()
        if version == 1:
            table.compact()
    files = internals(table).files
    snapshot = files.latest_snapshot().id
    splits = files.scan_splits(snapshot, 4096, [{"dt": "b"}])
    assert {split.partition_values for split in splits} == {("b",)}
    assert len({split.bucket for split in splits}) >= 2 and len(splits) > len({split.bucket for split in splits})
    rows = [row for split in splits for rows in files.read_split(split) for row in rows.to_pylist()]
    assert sorted(rows, key=lambda row: row["id"]) == sorted(
        (row for row in table.rows().to_pylist() if row["dt"] == "b"), key=lambda row: row["id"])
    assert len(rows) == 4000


def test_a_task_streams_its_split_holding_a_fraction_of_the_bucket_in_memory(tmp_path: Path) -> None:
    """One bucket of 60,000 rows: a compacted run of many files and two small level-0 files
    of updates over all of it, cut into splits of 32 kb. A task holds, at each batch it yields
    (the Arrow memory in use then), a fraction of the bucket, which today's read of the
    bucket held whole; and no task reads more than a fraction of the bucket's rows."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.t", schema, primary_key=["id"], bucket=1,
                                  options={**NO_COMPACTION, "target-file-size": "64 kb"})
    rows = 60_000
    for ids in (range(0, rows, 2), range(1, rows, 2), range(0, rows, 41), range(7, rows, 37)):
        with table.writer() as writer:
            writer.write(pa.table({"id": pa.array(ids, pa.int64()),
                                   "v": [f"value {i:08d} of a row of about sixty bytes" for i in ids]}, schema=schema))
            writer.commit()
        if ids.stop == rows and ids.start == 1:
            table.compact()
    files = internals(table).files
    splits = files.scan_splits(files.latest_snapshot().id, 32 * 1024)
    assert len(splits) >= 12 and all(split.merged and split.bucket == 0 for split in splits)
    for _ in files.read_split(splits[0]):  # the reader's one-off allocations (its caches) are not the split's
        pass
    held, read, bucket_bytes = [], [], 0
    for split in splits:
        before, count = pa.total_allocated_bytes(), 0
        for batch in files.read_split(split):
            held.append(pa.total_allocated_bytes() - before)
            count += batch.num_rows
            bucket_bytes += batch.nbytes
            assert batch.num_rows <= 65_536  # pypaimon's merged read builds batches of at most this many
        read.append(count)
    assert sum(read) == rows and max(read) < rows / 10
    assert max(held) < bucket_bytes / 4
