"""The source's plan: its Spark partitions are small frozen classes that say what they
read, and its offsets are reader positions whose checkpoint JSON keeps the shape of
every offset written so far."""

from __future__ import annotations

import dataclasses
import pickle
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import OptionError
from tablelog.positions import ReaderPosition
from tablelog.spark import offsets
from tablelog.spark.options import SourceOptions
from tablelog.spark.source import TablelogBatchReader, TablelogStreamReader
from tablelog.spark.source_tasks import CommittedChanges, FullScanSplit, LogRecords, NoRows
from tablelog.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(warehouse: Path, rows: int = 10, fmt: str = "debezium-json") -> Table:
    table = tablelog.create_table(str(warehouse), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                                  bucket=2, options={"log.system": "filesystem", "log.format": fmt})
    if rows:
        with table.writer() as writer:
            writer.write([{"id": i, "name": "x"} for i in range(rows)])
            writer.commit()
    return table


def _options(table: Table, **options: str) -> SourceOptions:
    return SourceOptions.parse({"warehouse": table.warehouse.path, "table": table.identifier, **options})


def _buckets(plan: list[Any]) -> list[tuple[int, int]]:
    """(snapshot, bucket) of each split of a full scan."""
    assert all(isinstance(p, FullScanSplit) for p in plan)
    return [(p.split.snapshot_id, p.split.bucket) for p in plan]


def _ids(batches: Any) -> list[int]:
    return sorted(i for batch in batches for i in batch.column("id").to_pylist())


# Offsets as the source checkpoints them. Positions are strings: they may exceed 64 bits.
CHECKPOINTED = [
    {"v": 1, "table": "0f3c", "topic": "kafka:orders", "consistency": "eventual", "snapshot": 2, "full": False,
     "positions": {"0": "17", "1": str(2**100 + 5)}},
    {"v": 1, "table": "0f3c", "topic": "kafka:orders", "consistency": "transactional", "snapshot": 7,
     "full": False, "positions": {}},
    {"v": 1, "table": "0f3c", "topic": "filesystem:orders", "consistency": "eventual", "snapshot": 1,
     "full": True, "positions": {"0": "0", "3": "12345"}},
]


@pytest.mark.parametrize("checkpointed", CHECKPOINTED)
def test_every_checkpointed_offset_shape_loads_as_a_reader_position_and_is_written_back_unchanged(
    checkpointed: dict[str, Any]
) -> None:
    position = offsets.parse_offset(checkpointed)
    assert isinstance(position, ReaderPosition)
    assert position.full_pending is checkpointed["full"]
    assert position.offsets == {int(p): int(o) for p, o in checkpointed["positions"].items()}
    assert offsets.to_offset(position) == checkpointed


def test_a_malformed_checkpoint_offset_is_an_option_error_that_shows_it() -> None:
    with pytest.raises(tablelog.TablelogError, match=r"invalid tablelog source offset \{'v': 1\}"):
        offsets.parse_offset({"v": 1})


def test_source_partitions_are_frozen_and_survive_pickling() -> None:
    for partition in (CommittedChanges(0, 2, 5), LogRecords(1, 10, 20), NoRows()):
        assert pickle.loads(pickle.dumps(partition)) == partition
        for field in dataclasses.fields(partition):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(partition, field.name, 0)


def test_a_hybrid_stream_plans_a_full_scan_per_bucket_then_committed_changes_per_log_partition(
    tmp_path: Path
) -> None:
    table = _table(tmp_path / "wh")
    options = _options(table)
    source = TablelogStreamReader(options)
    start = source.initialOffset()
    first = source.latestOffset(start)
    plan = source.partitions(start, first)
    assert _buckets(plan) == [(1, 0), (1, 1)]
    assert _ids(batch for p in plan for batch in source.read(p)) == list(range(10))
    with table.writer() as writer:
        writer.write([{"id": i, "name": "y"} for i in range(10, 14)])
        writer.commit()
    second = source.latestOffset(first)
    plan = source.partitions(first, second)
    assert plan and all(isinstance(p, CommittedChanges) and (p.start, p.end) == (1, 2) for p in plan)
    assert _ids(batch for p in plan for batch in source.read(p)) == [10, 11, 12, 13]


def test_an_eventual_stream_plans_the_log_records_between_two_offsets(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    source = TablelogStreamReader(_options(table, **{"log.consistency": "eventual", "scan.mode": "earliest"}))
    start = source.initialOffset()
    end = source.latestOffset(start)
    plan = source.partitions(start, end)
    assert plan and all(isinstance(p, LogRecords) and p.start < p.end for p in plan)
    assert _ids(batch for p in plan for batch in source.read(p)) == list(range(10))


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
def test_an_eventual_micro_batch_reads_no_record_written_after_its_end_offset(tmp_path: Path, fmt: str) -> None:
    table = _table(tmp_path / "wh", fmt=fmt)
    source = TablelogStreamReader(_options(table, **{"log.consistency": "eventual", "scan.mode": "earliest"}))
    start = source.initialOffset()
    end = source.latestOffset(start)
    with table.writer() as writer:  # after the micro-batch's end: the next micro-batch's records
        writer.write([{"id": i, "name": "later"} for i in range(10, 20)])
        writer.commit()
    plan = source.partitions(start, end)
    batches = [batch for p in plan for batch in source.read(p)]
    assert _ids(batches) == list(range(10))
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    later = source.partitions(end, source.latestOffset(end))
    assert _ids(batch for p in later for batch in source.read(p)) == list(range(10, 20))


def test_a_batch_read_of_a_table_without_a_snapshot_plans_one_partition_of_no_rows(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh", rows=0)
    reader = TablelogBatchReader(_options(table))
    assert reader.partitions() == [NoRows()]
    assert list(reader.read(NoRows())) == []


def test_a_batch_read_plans_a_full_scan_per_bucket_of_the_latest_snapshot(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    reader = TablelogBatchReader(_options(table))
    plan = reader.partitions()
    assert _buckets(plan) == [(1, 0), (1, 1)]
    assert _ids(batch for p in plan for batch in reader.read(p)) == list(range(10))
    (again,) = pickle.loads(pickle.dumps(plan[:1]))  # as Spark ships it to an executor
    assert _ids(reader.read(again)) == _ids(reader.read(plan[0]))


def test_a_dynamic_bucket_tables_full_scan_is_a_task_per_bucket_none_reading_the_whole_table(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path / "wh"), "db.d", SCHEMA, primary_key=["id"], bucket=-1,
                                  options={"log.system": "filesystem", "log.system.partitions": "3",
                                           "dynamic-bucket.target-row-num": "8"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": "x"} for i in range(40)])
        writer.commit()
    reader = TablelogBatchReader(_options(table))
    plan = reader.partitions()
    buckets = _buckets(plan)
    assert len(buckets) >= 5 and len(set(buckets)) == len(buckets)
    per_task = [_ids(reader.read(p)) for p in plan]
    assert all(0 < len(ids) < 40 for ids in per_task)
    assert sorted(i for ids in per_task for i in ids) == list(range(40))
    source = TablelogStreamReader(_options(table))  # scan.mode latest-full: the same full scan first
    start = source.initialOffset()
    assert _buckets(source.partitions(start, source.latestOffset(start))) == buckets


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_stream_read_with_the_columns_option_returns_only_those_and_the_key(
    tmp_path: Path, fmt: str, consistency: str,
) -> None:
    table = _table(tmp_path / "wh", fmt=fmt)
    source = TablelogStreamReader(_options(table, **{"log.consistency": consistency, "scan.mode": "earliest",
                                                     "columns": "name"}))
    start = source.initialOffset()
    batches = [batch for p in source.partitions(start, source.latestOffset(start)) for batch in source.read(p)]
    assert batches and all(b.schema.names == ["_kind", "id", "name"] for b in batches)
    assert _ids(batches) == list(range(10))


def test_a_batch_read_with_the_columns_option_returns_only_those_and_the_key(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    reader = TablelogBatchReader(_options(table, columns=" name "))
    batches = [batch for p in reader.partitions() for batch in reader.read(p)]
    assert batches and all(b.schema.names == ["_kind", "id", "name"] for b in batches)


def test_the_columns_option_naming_no_column_of_the_table_is_refused_naming_its_columns(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    with pytest.raises(OptionError, match="no column 'price'; its columns: id, name"):
        TablelogStreamReader(_options(table, columns="price"))


def test_a_large_bucket_is_planned_in_splits_of_the_target_size_each_row_read_once(large_bucket: Table) -> None:
    table = large_bucket
    expected = sorted(table.rows().column("id").to_pylist())
    assert len(expected) == 19_800
    whole = TablelogBatchReader(_options(table)).partitions()  # 128 mb: one split
    assert _buckets(whole) == [(4, 0)]
    reader = TablelogBatchReader(_options(table, **{"source.split.target-size": "32 kb"}))
    plan = reader.partitions()
    assert len(plan) >= 4 and set(_buckets(plan)) == {(4, 0)}
    per_task = [_ids(reader.read(p)) for p in plan]
    assert max(len(ids) for ids in per_task) < len(expected) / 2
    assert sorted(i for ids in per_task for i in ids) == expected
    source = TablelogStreamReader(_options(table, **{"source.split.target-size": "32 kb"}))
    start = source.initialOffset()
    assert len(source.partitions(start, source.latestOffset(start))) == len(plan)  # latest-full's first batch
    with pytest.raises(OptionError, match=r"'0 kb' for option 'source.split.target-size': expected a size > 0"):
        TablelogBatchReader(_options(table, **{"source.split.target-size": "0 kb"}))
