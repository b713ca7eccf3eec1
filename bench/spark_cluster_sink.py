"""Spark streaming sink on a standalone cluster against ``local[2]``, same run:
``python -m bench.spark_cluster_sink [ROWS] [ROUNDS]`` (200,000, 2).

Starts a standalone master and two workers (1 core each, separate JVMs,
``tablelog.testing.spark_cluster.spark_standalone``). The pipeline is
:mod:`bench.spark_sink`'s (parquet files read as a stream, ``writeStream.format("tablelog")``
to a primary-key table with 4 buckets, ``trigger(availableNow=True)``) with
``log.system=filesystem`` in one absolute directory. Each round runs it once in a
``local[2]`` session and once in a session on the cluster, alternating which goes first;
every session is new (one SparkContext per process) and runs the pipeline once untimed
first, so its start-up and the executors' first Python workers are not in the rate.
Rate = rows / wall time of the query, as in :mod:`bench.spark_sink`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench.common import make_rows, stats
from bench.spark_sink import _run

FILES = 8
FILES_PER_BATCH = 2


def _rate(master: str, inputs: Path, work: Path, rows: int) -> float:
    from tablelog.spark.session import local_session

    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if master.startswith("spark://"):
        conf.update({"spark.executor.memory": "512m", "spark.cores.max": "2"})
    spark = local_session(master, app_name="tablelog-bench-cluster", conf=conf)
    try:
        options = {"log.system": "filesystem", "filesystem.path": str(work / "log")}
        _run(spark, inputs, work, FILES_PER_BATCH, options)  # warm-up: executors, Python workers
        return rows / _run(spark, inputs, work, FILES_PER_BATCH, options)
    finally:
        spark.stop()


def measure(rows: int, rounds: int, log: Any = print) -> dict[str, Any]:
    from tablelog.testing.spark_cluster import spark_environment, spark_standalone

    with tempfile.TemporaryDirectory(prefix="bench-spark-cluster-") as tmp:
        work = Path(tmp)
        inputs = work / "in"
        inputs.mkdir()
        per_file = rows // FILES
        for f in range(FILES):
            pq.write_table(make_rows(per_file, 100, start=1_000_000 + f * per_file),
                           inputs / f"part-{f:04d}.parquet")
        os.environ.update({k: v for k, v in spark_environment(work / "driver", log_level="error").items()
                           if k.startswith(("SPARK_LOCAL", "PYSPARK_"))})
        with spark_standalone(work / "cluster", workers=2, cores=1) as cluster:
            variants = {"local[2]": "local[2]", "standalone": cluster.master_url}
            rates: dict[str, list[float]] = {k: [] for k in variants}
            for round_ in range(rounds):
                order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
                for name in order:
                    rates[name].append(_rate(variants[name], inputs, work, per_file * FILES))
                log(f"  round {round_ + 1}: " + " ".join(f"{k}={v[-1]:,.0f} rows/s" for k, v in rates.items()),
                    file=sys.stderr)
    return {
        "rows": per_file * FILES, "files": FILES, "files_per_batch": FILES_PER_BATCH, "rounds": rounds,
        "rate": {k: stats(v) for k, v in rates.items()},
        "ratio standalone / local[2]": stats(
            [a / b for a, b in zip(rates["standalone"], rates["local[2]"], strict=True)]),
    }


if __name__ == "__main__":
    began = time.perf_counter()
    result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000,
                     int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    result["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(result, indent=1))
