"""Spark streaming sink: the same pipeline with ``log.system=kafka`` and ``log.system=none``.

Input: parquet files of the benchmark rows (100-byte records) read as a stream
(``maxFilesPerTrigger``), written with ``writeStream.format("tablelog")`` to a
primary-key table with 4 buckets, ``trigger(availableNow=True)``, until the
query ends. Rate = rows / wall time of the query (start to termination,
including Spark's per-query and per-batch overhead, identical for both).
Runs alternate kafka / none on one local session (``local[2]``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench.common import make_rows, stats, unique

BUCKETS = 4


def write_inputs(inputs: Path, rows: int, files: int) -> int:
    """``files`` parquet files of the benchmark rows in ``inputs`` (created); returns the
    rows written (``rows`` rounded down to a multiple of ``files``)."""
    inputs.mkdir()
    per_file = rows // files
    for f in range(files):
        pq.write_table(make_rows(per_file, 100, start=1_000_000 + f * per_file), inputs / f"part-{f:04d}.parquet")
    return per_file * files


def input_stream(spark: Any, inputs: Path, files_per_batch: int) -> Any:
    """The input files as a stream, ``files_per_batch`` a micro-batch."""
    return (spark.readStream.schema("id long, seq long, payload string")
            .option("maxFilesPerTrigger", files_per_batch).parquet(str(inputs)))


def sink_writer(spark: Any, inputs: Path, work: Path, files_per_batch: int, options: dict[str, str]) -> Any:
    """The input stream written by the tablelog sink to a new primary-key table of
    :data:`BUCKETS` buckets in ``work``, with ``options`` (not started)."""
    writer = (input_stream(spark, inputs, files_per_batch).writeStream.format("tablelog")
              .option("warehouse", str(work / "wh")).option("table", f"bench.{unique('s')}")
              .option("primary-key", "id").option("bucket", str(BUCKETS))
              .option("checkpointLocation", str(work / unique("ckpt"))))
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer.trigger(availableNow=True)


def _run(spark: Any, inputs: Path, work: Path, files_per_batch: int, options: dict[str, str]) -> float:
    writer = sink_writer(spark, inputs, work, files_per_batch, options)
    began = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    elapsed = time.perf_counter() - began
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")
    return elapsed


def measure(bootstrap: str, rows: int, files: int, files_per_batch: int, rounds: int,
            log: Any = print) -> dict[str, Any]:
    from tablelog.spark.session import local_session

    spark = local_session("local[2]", app_name="tablelog-bench")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
            work = Path(tmp)
            inputs = work / "in"
            written = write_inputs(inputs, rows, files)
            variants = {
                "kafka": {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap},
                "none": {"log.system": "none"},
            }
            _run(spark, inputs, work, files_per_batch, variants["none"])  # warm-up (JIT, workers)
            rates: dict[str, list[float]] = {k: [] for k in variants}
            for round_ in range(rounds):
                order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
                for name in order:
                    rates[name].append(written / _run(spark, inputs, work, files_per_batch, variants[name]))
                log(f"  spark round {round_ + 1}: " + " ".join(f"{k}={v[-1]:,.0f} rows/s" for k, v in rates.items()))
    finally:
        spark.stop()
    return {
        "rows": written, "files": files, "files_per_batch": files_per_batch, "rounds": rounds,
        "rate": {k: stats(v) for k, v in rates.items()},
        "ratio kafka / none": stats([a / b for a, b in zip(rates["kafka"], rates["none"], strict=True)]),
    }


if __name__ == "__main__":
    import json
    import sys

    from bench import brokers

    with brokers.kafka() as address:
        print(json.dumps(measure(address, int(sys.argv[1]), 8, 2, int(sys.argv[2])), indent=1))
