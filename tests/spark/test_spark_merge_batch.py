"""A partial-update table written by a Spark batch job whose two tasks fill different
columns of the same keys (the committer computes the commit's changes again), read back
through the Spark source: its changelog is the merged rows, not the partial inputs. The
long scenarios with a driver kill and a dead task attempt are in
tests/spark/test_spark_merge_engines.py (`tox -e matrix`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.testing.spark_inputs import collect_stream, replay

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64())])


def test_two_spark_tasks_filling_columns_of_the_same_keys_log_the_merged_rows(spark: Any, tmp_path: Path) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.pu_{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2, options={
        "log.system": "filesystem", "log.system.partitions": "2", "merge-engine": "partial-update"})
    rows = [(i, f"a{i}", None) for i in range(6)] + [(i, None, i * 10) for i in range(6)]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id long, a string, b long")
    frame.write.format("tablelog").option("warehouse", warehouse).mode("append").save(name)
    again = spark.createDataFrame([(0, "z", None), (1, None, 7)], "id long, a string, b long")
    again.write.format("tablelog").option("warehouse", warehouse).mode("append").save(name)
    merged = {i: {"id": i, "a": f"a{i}", "b": i * 10} for i in range(6)}
    merged[0]["a"], merged[1]["b"] = "z", 7
    assert {r["id"]: r for r in table.rows().to_pylist()} == merged
    changes = collect_stream(spark.readStream.format("tablelog").option("warehouse", warehouse)
                             .option("table", name).option("scan.mode", "earliest").load(), tmp_path / "ck")
    shown = sorted((c["_kind"], c["id"], c["a"], c["b"]) for c in changes)
    assert shown == sorted(
        [("+I", i, f"a{i}", i * 10) for i in range(6)]  # one change per key: the two tasks' rows merged
        + [("-U", 0, "a0", 0), ("+U", 0, "z", 0), ("-U", 1, "a1", 10), ("+U", 1, "a1", 7)])
    assert replay(changes) == merged
    batch = spark.read.format("tablelog").option("warehouse", warehouse).load(name).collect()
    assert {r["id"]: {k: v for k, v in r.asDict().items() if k != "_kind"} for r in batch} == merged
