"""The source: a hybrid streaming read (current rows, then later committed changes: no gap,
no overlap) and a batch read of the table's rows."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.testing.spark_inputs import replay

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_hybrid_stream_read_returns_current_rows_then_committed_changes_and_batch_read_the_rows(
    spark: Any, tmp_path: Path
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    with table.writer("setup") as writer:
        writer.write([{"id": i, "name": f"v1-{i}"} for i in range(100)])
        writer.commit()
    batches: list[list[dict[str, Any]]] = []
    query = (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name).load()
             .writeStream.foreachBatch(lambda df, _: batches.append([r.asDict() for r in df.collect()]))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds")
             .start())
    try:
        query.processAllAvailable()
        full = [c for batch in batches for c in batch]
        assert len(full) == 100 and {c["_kind"] for c in full} == {"+I"}
        assert sorted(c["id"] for c in full) == list(range(100))
        with table.writer("setup") as writer:
            writer.write([("+U", {"id": i, "name": f"v2-{i}"}) for i in range(20)]
                         + [("-D", {"id": i, "name": f"v1-{i}"}) for i in range(90, 100)]
                         + [{"id": i, "name": f"v1-{i}"} for i in range(100, 130)])
            writer.commit()
        doomed = table.write_task("doomed", 1)  # produced and durable, never committed
        doomed.write([{"id": 999, "name": "never"}])
        doomed.finish()
        query.processAllAvailable()
    finally:
        query.stop()
    changes = [c for batch in batches for c in batch][100:]
    assert Counter(c["_kind"] for c in changes) == Counter({"+U": 20, "-D": 10, "+I": 30})
    assert not any(c["id"] == 999 for c in changes)
    expected = {r["id"]: r for r in table.rows().to_pylist()}
    assert replay(full + changes) == expected  # no gap, no overlap
    batch_read = spark.read.format("tablelog").option("warehouse", warehouse).load(name).collect()
    assert {r["id"]: {"id": r["id"], "name": r["name"]} for r in batch_read} == expected
    assert {r["_kind"] for r in batch_read} == {"+I"} and len(batch_read) == len(expected)


@pytest.mark.parametrize("projection", [None, "price"], ids=["table-topic", "projection-stream"])
def test_a_stream_read_of_an_arrow_log_with_the_columns_option_returns_only_those_and_the_key(
    spark: Any, tmp_path: Path, projection: str | None
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}"
    wide = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64()), ("note", pa.string())])
    options = {"log.system": "filesystem", "log.format": "arrow"}
    if projection is not None:  # the read's columns are the projection's: it reads that stream
        options["log.arrow.projection"] = projection
    table = tablelog.create_table(warehouse, name, wide, primary_key=["id"], bucket=2, options=options)
    with table.writer("setup") as writer:
        writer.write([{"id": i, "name": f"n{i}", "price": i / 2, "note": "x"} for i in range(50)])
        writer.commit()
    stream = (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
              .option("scan.mode", "earliest").option("columns", "price").load())
    assert stream.columns == ["_kind", "id", "price"]
    query = (stream.writeStream.format("memory").queryName(f"cols_{uuid.uuid4().hex[:8]}")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.table(query.name).collect()
    assert sorted((r["id"], r["price"]) for r in rows) == [(i, i / 2) for i in range(50)]


def test_a_large_buckets_batch_read_and_full_scan_run_in_several_tasks_each_row_once(
    spark: Any, large_bucket: Any, tmp_path: Path
) -> None:
    from pyspark.sql.functions import spark_partition_id

    table = large_bucket
    expected = {r["id"]: r for r in table.rows().to_pylist()}
    read = (spark.read.format("tablelog").option("warehouse", table.warehouse.path)
            .option("source.split.target-size", "32 kb").load(table.identifier))
    rows = [r.asDict() for r in read.withColumn("task", spark_partition_id()).collect()]
    tasks = Counter(r["task"] for r in rows)  # the one bucket's rows, by the task that read them
    assert len(tasks) >= 4 and max(tasks.values()) < len(expected) / 2
    assert sorted(r["id"] for r in rows) == sorted(expected)  # every row exactly once
    assert {r["id"]: {"id": r["id"], "name": r["name"]} for r in rows} == expected
    first: list[dict[str, Any]] = []

    def keep(df: Any, batch_id: int) -> None:
        if batch_id == 0:  # latest-full: the full scan alone
            first.extend(r.asDict() for r in df.withColumn("task", spark_partition_id()).collect())

    query = (spark.readStream.format("tablelog").option("warehouse", table.warehouse.path)
             .option("table", table.identifier).option("source.split.target-size", "32 kb").load()
             .writeStream.foreachBatch(keep).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert Counter(r["task"] for r in first) == tasks
    assert sorted(r["id"] for r in first) == sorted(expected) and {r["_kind"] for r in first} == {"+I"}


@pytest.mark.matrix
def test_a_dynamic_bucket_partitioned_tables_full_scan_reads_each_row_of_the_chosen_partitions_once(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql.functions import spark_partition_id

    from tablelog.testing import NO_COMPACTION

    warehouse = str(tmp_path / "wh")
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        ("v", pa.int64())])
    table = tablelog.create_table(warehouse, "db.d", schema, primary_key=["dt", "id"], partition_keys=["dt"],
                                  bucket=-1, options={**NO_COMPACTION, "log.system": "filesystem",
                                                      "target-file-size": "8 kb",
                                                      "dynamic-bucket.target-row-num": "3000"})
    for version in range(3):
        with table.writer() as writer:
            writer.write([{"dt": dt, "id": i, "v": version} for dt in ("a", "b") for i in range(version, 9000, 2)])
            writer.commit()
        if version == 1:
            table.compact()
    expected = sorted(r["id"] for r in table.rows().to_pylist() if r["dt"] == "b")
    read = (spark.read.format("tablelog").option("warehouse", warehouse).option("partitions", "dt=b")
            .option("source.split.target-size", "16 kb").load("db.d"))
    rows = [r.asDict() for r in read.withColumn("task", spark_partition_id()).collect()]
    tasks = Counter(r["task"] for r in rows)
    assert len(tasks) >= 4 and max(tasks.values()) < len(expected) / 2  # 3 buckets, more tasks, none reading all
    assert sorted(r["id"] for r in rows) == expected and {r["dt"] for r in rows} == {"b"}
