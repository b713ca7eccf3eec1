"""A transactional Spark stream of a table whose log moves to another topic (an alter):
the query fails at the move with ``LogMovedError`` after every change before it, and the
query restarted from its checkpoint goes on exactly there (docs/attaching.md)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog import SetOption
from tablelog.testing.spark_inputs import replay

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_a_stream_stops_at_a_move_of_the_log_and_resumes_from_its_checkpoint_exactly(
    spark: Any, tmp_path: Path
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"v1-{i}"} for i in range(50)])
        writer.commit()
    batches: list[list[dict[str, Any]]] = []

    def start() -> Any:
        return (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
                .option("scan.mode", "earliest").load()
                .writeStream.foreachBatch(lambda df, _: batches.append([r.asDict() for r in df.collect()]))
                .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds")
                .start())

    query = start()
    try:
        query.processAllAvailable()
        table.alter(SetOption("filesystem.topic", f"{name}.moved"))
        with table.writer() as writer:
            writer.write([{"id": i, "name": f"v2-{i}"} for i in range(40, 60)])
            writer.commit()
        with pytest.raises(Exception, match="LogMovedError"):
            query.processAllAvailable()
    finally:
        query.stop()
    assert Counter(c["id"] for batch in batches for c in batch) == Counter(range(50))
    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    changes = [c for batch in batches for c in batch]
    assert Counter(c["id"] for c in changes) == Counter(range(50)) + Counter(range(40, 60)), "each change once"
    assert replay(changes) == {r["id"]: r for r in table.rows().to_pylist()}
