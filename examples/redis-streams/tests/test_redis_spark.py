"""PySpark writes a table whose log is Redis Streams: the plugin runs inside Spark's
Python workers with nothing but its entry point."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import RedisServer

import tablelog

pytestmark = pytest.mark.spark


def test_a_pyspark_batch_write_with_log_system_redis_reads_back_exactly_once(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    from tablelog.testing.spark_scenarios import spark_test_session

    spark = spark_test_session("local[2]")
    warehouse, topic = str(tmp_path / "wh"), f"spark-{tmp_path.name}"
    rows = [(i, f"n{i}", i * 0.5, "+I") for i in range(100)] + [(7, "n7", 3.5, "-D")]
    df = spark.createDataFrame(rows, "id long, name string, score double, _kind string").repartition(2, "id")
    (df.write.format("tablelog")
       .option("warehouse", warehouse).option("table", "db.orders")
       .option("primary-key", "id").option("bucket", "2")
       .option("log.system", "redis").option("redis.url", redis_server.url)
       .option("redis.topic", topic)
       .mode("append").save())

    table = tablelog.open_table(warehouse, "db.orders")
    assert table.options.log_system == "redis"
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.5)
    assert Counter((c.kind.value, c.row["id"]) for c in changes) == Counter(
        [("+I", i) for i in range(100)] + [("-D", 7)]
    )
    assert sorted(r["id"] for r in table.rows().to_pylist()) == [i for i in range(100) if i != 7]
    client = redis_server.client()
    assert client.xlen(f"{topic}:0") + client.xlen(f"{topic}:1") >= 101  # every change is in the streams
