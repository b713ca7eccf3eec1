"""Issue #17's Spark targets: the ``arrow`` log format in Spark's streaming sink and source.

    python -m bench.spark_arrow [--rows 1000000] [--rounds 3] [--only sink,read]

One Tansu broker, one ``local[2]`` session, 100-byte rows (``bench.common.make_rows``).

* **sink**: parquet files read as a stream (``maxFilesPerTrigger``), written to a
  primary-key table with 4 buckets, ``trigger(availableNow=True)``, as in
  ``bench.spark_sink``; rate = rows / wall time of the query. Variants, in an order
  that rotates every round: ``writeStream.format("tablelog")`` with ``log.system=none``,
  with ``log.system=kafka`` and ``log.format`` ``debezium-json``, and with ``arrow``;
  and the pipeline a user writes by hand (``bench.spark_by_hand``: ``foreachBatch``,
  pypaimon, Debezium JSON produced per row with confluent-kafka, no exactly-once).
* **read**: the same rows written by tablelog into a Kafka-logged table per format
  (in 4 commits), read with ``readStream.format("tablelog")`` (transactional,
  ``scan.mode=earliest``: every row comes from the log) into the ``noop`` sink,
  ``trigger(availableNow=True)``; ``arrow`` against ``debezium-json``, alternating;
  then the same query on Python sources that do no work (``bench.spark_floor``): one
  that returns no row, and one that returns as many prebuilt rows of the same shape:
  Spark's own cost of a query and of its rows, which both formats pay.

The tablelog sink variants run with compaction off: the committer's compaction of a
micro-batch rewrites every bucket on the driver, whichever variant's round it falls in,
and the hand-written pipeline never compacts. Rates by two clocks: the query's wall
time, and the sum of its micro-batches' ``triggerExecution`` (the query's start-up left
out: for the source, Spark starting its stream reader's Python process).

Prints the ratios and writes ``bench/results/spark_arrow.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.common import SCHEMA, batches, cache_bytecode, make_rows, stats, unique, write_full
from bench.spark_sink import BUCKETS, input_stream, sink_writer, write_inputs
from tablelog.testing import NO_COMPACTION

ROOT = Path(__file__).resolve().parents[1]
SINK_TARGETS = {"arrow / none": 0.9, "json / by hand": 0.8, "arrow / by hand": 1.5}
READ_TARGET = 3.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Timing:
    """A query's wall time (``start()`` to its end) and the time of its micro-batches
    (the sum of their ``triggerExecution``: the query's start-up left out)."""

    wall: float
    batches: float


def _timed_query(start: Callable[[], Any]) -> tuple[Timing, Any]:
    began = time.perf_counter()
    query = start()
    query.awaitTermination()
    elapsed = time.perf_counter() - began
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")
    batches = sum(p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress) / 1000
    return Timing(elapsed, batches or elapsed), query


def _rates(rows: int, timings: dict[str, list[Timing]]) -> dict[str, dict[str, list[float]]]:
    return {clock: {name: [rows / getattr(t, clock) for t in runs] for name, runs in timings.items()}
            for clock in ("wall", "batches")}


def _ratio(rates: dict[str, list[float]], a: str, b: str) -> list[float]:
    return [x / y for x, y in zip(rates[a], rates[b], strict=True)]


class SinkBench:
    """The streaming sink variants over the same parquet input."""

    def __init__(self, spark: Any, work: Path, bootstrap: str, rows: int, files: int, files_per_batch: int) -> None:
        self.spark, self.work, self.bootstrap = spark, work, bootstrap
        self.files_per_batch = files_per_batch
        self.inputs = work / "in"
        self.rows = write_inputs(self.inputs, rows, files)

    def tablelog(self, options: dict[str, str]) -> Timing:
        writer = sink_writer(self.spark, self.inputs, self.work, self.files_per_batch, {**NO_COMPACTION, **options})
        timing, _ = _timed_query(writer.start)
        return timing

    def by_hand(self) -> Timing:
        from bench.spark_by_hand import ForeachBatchDoubleWrite

        # Table and topic created before the clock starts, as the tablelog variants' are
        # created by the query's planning (timed there, but a few ms).
        double_write = ForeachBatchDoubleWrite(str(self.work / "wh"), SCHEMA, "id", BUCKETS, self.bootstrap)
        writer = (input_stream(self.spark, self.inputs, self.files_per_batch).writeStream.foreachBatch(double_write)
                  .option("checkpointLocation", str(self.work / unique("ckpt"))))
        timing, _ = _timed_query(lambda: writer.trigger(availableNow=True).start())
        double_write.close()
        if double_write.rows != self.rows:
            raise RuntimeError(f"the foreachBatch wrote {double_write.rows} rows of {self.rows}")
        return timing

    def variants(self) -> dict[str, Callable[[], Timing]]:
        kafka = {"log.system": "kafka", "kafka.bootstrap.servers": self.bootstrap}
        return {
            "none": lambda: self.tablelog({"log.system": "none"}),
            "json": lambda: self.tablelog({**kafka, "log.format": "debezium-json"}),
            "arrow": lambda: self.tablelog({**kafka, "log.format": "arrow"}),
            "by hand": self.by_hand,
        }


def measure_sink(spark: Any, bootstrap: str, rows: int, rounds: int, files: int, files_per_batch: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-spark-arrow-") as tmp:
        bench = SinkBench(spark, Path(tmp), bootstrap, rows, files, files_per_batch)
        variants = bench.variants()
        for name, run in variants.items():  # warm-up: JIT, Python workers, each code path once
            log(f"sink warm-up {name}: {bench.rows / run().wall:,.0f} rows/s")
        timings: dict[str, list[Timing]] = {k: [] for k in variants}
        names = list(variants)
        for round_ in range(rounds):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                timings[name].append(variants[name]())
            log(f"sink round {round_ + 1}, rows/s (wall; micro-batches): " + " ".join(
                f"{k}={bench.rows / v[-1].wall:,.0f}; {bench.rows / v[-1].batches:,.0f}" for k, v in timings.items()))
    return _summary({"rows": bench.rows, "files": files, "files_per_batch": files_per_batch, "rounds": rounds},
                    _rates(bench.rows, timings), [("arrow", "none"), ("json", "none"), ("json", "by hand"),
                                                  ("arrow", "by hand")])


def _summary(head: dict[str, Any], rates: dict[str, dict[str, list[float]]],
             pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Rates and ratios by clock: ``wall`` (the whole query) and ``batches`` (its micro-batches)."""
    return {**head,
            "rows_per_s": {clock: {k: stats(v) for k, v in by.items()} for clock, by in rates.items()},
            "ratios": {clock: {f"{a} / {b}": stats(_ratio(by, a, b)) for a, b in pairs}
                       for clock, by in rates.items()}}


def _logged_table(warehouse: str, bootstrap: str, log_format: str, parts: list[pa.Table]) -> str:
    import tablelog

    name = f"bench.{unique('r')}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=BUCKETS, options={
        "log.system": "kafka", "kafka.bootstrap.servers": bootstrap, "log.format": log_format})
    per_commit = max(1, len(parts) // 4)
    for i in range(0, len(parts), per_commit):
        write_full(table, parts[i:i + per_commit])
    return name


def read_stream(spark: Any, warehouse: str, name: str, checkpoint: Path, rows: int) -> Timing:
    stream = (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
              .option("scan.mode", "earliest").load())
    writer = stream.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
    timing, query = _timed_query(lambda: writer.trigger(availableNow=True).start())
    seen = sum(p["numInputRows"] for p in query.recentProgress)
    if seen != rows:
        raise RuntimeError(f"the stream read {seen} rows of {rows}")
    return timing


def measure_read(spark: Any, bootstrap: str, rows: int, rounds: int) -> dict[str, Any]:
    parts = batches(make_rows(rows, 100))
    with tempfile.TemporaryDirectory(prefix="bench-spark-read-") as tmp:
        warehouse = str(Path(tmp) / "wh")
        tables = {fmt: _logged_table(warehouse, bootstrap, fmt, parts) for fmt in ("debezium-json", "arrow")}
        for fmt, name in tables.items():
            warm = read_stream(spark, warehouse, name, Path(tmp) / unique("ck"), rows)
            log(f"read warm-up {fmt}: {rows / warm.wall:,.0f} rows/s")
        timings: dict[str, list[Timing]] = {k: [] for k in tables}
        names = list(tables)
        for round_ in range(rounds):
            order = names if round_ % 2 == 0 else names[::-1]
            for fmt in order:
                timings[fmt].append(read_stream(spark, warehouse, tables[fmt], Path(tmp) / unique("ck"), rows))
            log(f"read round {round_ + 1}, rows/s (wall; micro-batches): " + " ".join(
                f"{k}={rows / v[-1].wall:,.0f}; {rows / v[-1].batches:,.0f}" for k, v in timings.items()))
        floors: dict[str, list[Timing]] = {"nothing": [], "given_rows": []}
        for _ in range(rounds):
            floors["nothing"].append(read_doing_nothing(spark, Path(tmp) / unique("ck"), 0))
            floors["given_rows"].append(read_doing_nothing(spark, Path(tmp) / unique("ck"), rows))
        log("Python sources doing no work, s (wall; micro-batches): " + "  ".join(
            f"{k}: " + " ".join(f"{t.wall:.2f}; {t.batches:.2f}" for t in v) for k, v in floors.items()))
    return _summary({"rows": rows, "rounds": rounds,
                     "sources_doing_no_work_seconds": {
                         name: {clock: stats([getattr(t, clock) for t in runs]) for clock in ("wall", "batches")}
                         for name, runs in floors.items()}},
                    _rates(rows, timings), [("arrow", "debezium-json")])


def read_doing_nothing(spark: Any, checkpoint: Path, rows: int) -> Timing:
    """The query of ``read_stream`` on a Python source that does no work
    (``bench.spark_floor``): with ``rows`` 0, one that returns no row; else one that
    returns ``rows`` prebuilt rows of a tablelog read's shape in as many partitions as
    the tables have log partitions. Spark's own cost of a Python source's query."""
    from bench.spark_floor import FORMAT, NoWorkSource

    spark.dataSource.register(NoWorkSource)
    reader = spark.readStream.format(FORMAT).option("rows", str(rows))
    if rows:
        reader = reader.option("partitions", str(BUCKETS))
    writer = reader.load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
    timing, query = _timed_query(lambda: writer.trigger(availableNow=True).start())
    seen = sum(p["numInputRows"] for p in query.recentProgress)
    if seen != rows:
        raise RuntimeError(f"the source returned {seen} rows of {rows}")
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--read-rows", type=int, default=None, help="rows of the read part (default: --rows)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=8, help="parquet input files of the sink")
    parser.add_argument("--files-per-batch", type=int, default=2)
    parser.add_argument("--only", default="sink,read")
    args = parser.parse_args()
    from bench import brokers
    from tablelog.spark.session import local_session

    if note := cache_bytecode():
        log(note)

    out = ROOT / "bench" / "results" / "spark_arrow.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"args": vars(args)}
    with brokers.kafka() as bootstrap:
        spark = local_session("local[2]", app_name="tablelog-bench-arrow")
        try:
            if "sink" in args.only:
                result["sink"] = measure_sink(spark, bootstrap, args.rows, args.rounds, args.files,
                                              args.files_per_batch)
                out.write_text(json.dumps(result, indent=1))
            if "read" in args.only:
                result["read"] = measure_read(spark, bootstrap, args.read_rows or args.rows, args.rounds)
                out.write_text(json.dumps(result, indent=1))
        finally:
            spark.stop()
    print(json.dumps({part: {what: {clock: {k: round(v["median"], 3) for k, v in by.items()}
                                        for clock, by in result[part][what].items()}
                             for what in ("rows_per_s", "ratios")}
                      for part in ("sink", "read") if part in result}, indent=1))


if __name__ == "__main__":
    main()
