"""A partitioned primary-key table through Spark: written by a stream across three days'
partitions (``.option("partition", "dt")``), read back exactly once by the source, whole
and limited to partitions (``.option("partitions", "dt=...")``, or a batch read's filter on
the partition column, pushed down), in streaming and batch reads; an overwrite refused with its reason; pypaimon alone reads the table."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tablelog
from tablelog.table import internals
from tablelog.testing.partition_scenarios import DAYS, TableFilesReader
from tablelog.testing.spark_inputs import collect_stream

INPUT_SCHEMA = "dt string, id long, v string, _kind string"


def input_batches() -> list[list[dict[str, Any]]]:
    """Three micro-batches, each touching every day; a key changes at most once per batch."""
    def row(day: str, i: int, tag: str, kind: str) -> dict[str, Any]:
        return {"dt": day, "id": i, "v": f"{tag}-{i}", "_kind": kind}

    b0 = [row(day, i, "v1", "+I") for day in DAYS for i in range(20)]
    b1 = [row(day, i, "v2", "+U") for day in DAYS for i in range(5)]
    b1 += [row(DAYS[0], i, "v1", "-D") for i in range(15, 20)]
    b2 = [row(day, i, "v1", "+I") for day in DAYS for i in range(20, 25)]
    b2 += [row(DAYS[2], i, "v2", "-D") for i in range(2)]
    return [b0, b1, b2]


def counted(changes: list[dict[str, Any]], days: tuple[str, ...] = DAYS) -> Counter[tuple[Any, ...]]:
    return Counter((c["_kind"], c["dt"], c["id"], c["v"]) for c in changes if c["dt"] in days)


def replay(changes: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    state: dict[tuple[str, int], str] = {}
    for c in changes:
        if c["_kind"] in ("-U", "-D"):
            state.pop((c["dt"], c["id"]), None)
        else:
            state[(c["dt"], c["id"])] = c["v"]
    return state


def write_input(directory: Path) -> Path:
    directory.mkdir(parents=True)
    now = time.time() - 1000
    for b, batch in enumerate(input_batches()):
        path = directory / f"batch{b}.json"
        path.write_text("".join(json.dumps(c) + "\n" for c in batch))
        os.utime(path, (now + b, now + b))  # the file source's order: one file per micro-batch
    return directory


def test_a_partitioned_table_written_by_a_spark_stream_across_three_days_is_read_back_exactly_once(
    spark: Any, tmp_path: Path, read_with_pypaimon: TableFilesReader
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.p_{uuid.uuid4().hex[:8]}"
    source = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(str(write_input(tmp_path / "in")))
    query = (source.writeStream.format("tablelog").option("warehouse", warehouse).option("table", name)
             .option("primary-key", "dt,id").option("partition", "dt").option("bucket", "2")
             .option("log.system", "filesystem").option("checkpointLocation", str(tmp_path / "ck-write"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    table = tablelog.open_table(warehouse, name)
    assert internals(table).files.partition_keys == ("dt",)
    assert len([s for s in table.snapshots() if s.commit_kind == "APPEND"]) == 3  # one per micro-batch
    written = counted([c for batch in input_batches() for c in batch])
    rows = {(r["dt"], r["id"]): r["v"] for r in table.rows().to_pylist()}
    assert replay([c for batch in input_batches() for c in batch]) == rows

    def read_stream(checkpoint: str, **options: str) -> list[dict[str, Any]]:
        reader = spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
        for key, value in options.items():
            reader = reader.option(key, value)
        return collect_stream(reader.load(), tmp_path / checkpoint)

    everything = read_stream("ck-all", **{"scan.mode": "earliest"})
    assert counted(everything) == written  # each committed change once
    assert replay(everything) == rows
    one_day = read_stream("ck-day", **{"scan.mode": "earliest", "partitions": f"dt={DAYS[2]}"})
    assert counted(one_day) == counted([c for b in input_batches() for c in b], (DAYS[2],))
    assert {c["dt"] for c in one_day} == {DAYS[2]}
    batch = (spark.read.format("tablelog").option("warehouse", warehouse)
             .option("partitions", f"dt={DAYS[0]};dt={DAYS[1]}").load(name).collect())
    assert {(r["dt"], r["id"]): r["v"] for r in batch} == {k: v for k, v in rows.items() if k[0] != DAYS[2]}
    # A filter on the partition column is pushed down: no Filter is left in Spark's plan.
    one_day_batch = (spark.read.format("tablelog").option("warehouse", warehouse).load(name)
                     .where(f"dt = '{DAYS[1]}'"))
    assert not re.search(r"\bFilter \(", one_day_batch._jdf.queryExecution().executedPlan().toString())
    assert {(r["dt"], r["id"]): r["v"] for r in one_day_batch.collect()} == {
        k: v for k, v in rows.items() if k[0] == DAYS[1]}
    partitions, found = read_with_pypaimon(warehouse, name)
    assert partitions == ["dt"] and {(r["dt"], r["id"]): r["v"] for r in found} == rows
    frame = spark.createDataFrame([(DAYS[0], 1, "new")], "dt string, id long, v string")
    with pytest.raises(Exception, match=r"an overwrite \(mode\('overwrite'\).*is refused"):
        frame.write.format("tablelog").option("warehouse", warehouse).mode("overwrite").save(name)
    with pytest.raises(Exception, match=r"partitioning or clustering columns do not match"):
        frame.write.format("tablelog").option("warehouse", warehouse).partitionBy("dt").mode("append").save(name)
    assert {(r["dt"], r["id"]): r["v"] for r in table.rows().to_pylist()} == rows  # neither wrote anything
