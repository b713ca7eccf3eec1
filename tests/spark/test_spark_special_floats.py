"""NaN and ±inf written by Spark come back from the log as the table holds them, through
the Spark source too, and verify finds table and log consistent (#13 item 2)."""

from __future__ import annotations

import math
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("y", pa.float32())])
VALUES = {1: (math.nan, math.nan), 2: (math.inf, -math.inf), 3: (-math.inf, math.inf), 4: (-0.0, -0.0)}


def bits(value: float | None) -> bytes | None:
    """A float compared by its bits: NaN equals NaN, -0.0 differs from 0.0."""
    return None if value is None else struct.pack("<d", value)


def test_special_floats_written_by_spark_round_trip_through_the_log_and_the_spark_source(
    spark: Any, tmp_path: Path
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    df = spark.createDataFrame([(i, x, y) for i, (x, y) in VALUES.items()], "id long, x double, y float")
    df.write.format("tablelog").option("warehouse", warehouse).option("table", name).mode("append").save()
    expected = {i: (bits(x), bits(y)) for i, (x, y) in VALUES.items()}
    assert {r["id"]: (bits(r["x"]), bits(r["y"])) for r in table.rows().to_pylist()} == expected
    assert verify(table).consistent

    changes: list[dict[str, Any]] = []
    query = (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
             .option("scan.mode", "earliest").load()
             .writeStream.foreachBatch(lambda batch, _: changes.extend(r.asDict() for r in batch.collect()))
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert {c["id"]: (bits(c["x"]), bits(c["y"])) for c in changes} == expected
    assert len(changes) == len(VALUES)
