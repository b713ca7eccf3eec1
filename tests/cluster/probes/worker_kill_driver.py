"""The driver of the worker-kill probe, a process of its own: ``python worker_kill_driver.py
MASTER OUT TASKS SLEEP SHUFFLE`` writes TASKS partitions (after a shuffle if SHUFFLE is 1) through the ``probe`` data source (each
task sleeps SLEEP seconds) and prints JSON events with wall-clock times."""

from __future__ import annotations

import json
import os
import sys
import time


def event(name: str, **fields: object) -> None:
    print(json.dumps({"event": name, "t": time.time(), **fields}), flush=True)


def main(master: str, out: str, tasks: int, sleep: float, shuffle: bool) -> None:
    from probe_datasource import ProbeDataSource  # installed in this environment (the probe's .pth)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master).appName("tablelog-worker-kill")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.executor.memory", "512m").config("spark.pyspark.python", sys.executable)
        .config(map=json.loads(os.environ.get("PROBE_DRIVER_CONF", "{}")))
        .getOrCreate()
    )
    try:
        spark.dataSource.register(ProbeDataSource)
        sc = spark.sparkContext
        deadline = time.monotonic() + 60
        while sc._jsc.sc().getExecutorIds().size() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        event("executors", count=sc._jsc.sc().getExecutorIds().size())
        event("write-start")
        data = spark.range(tasks * 10).repartition(tasks) if shuffle else spark.range(0, tasks * 10, 1, tasks)
        data.selectExpr("id", "'x' as python").write.format("probe") \
            .mode("append").option("path", out).option("sleep", str(sleep)).save()
        event("write-done")
    except Exception as exc:
        event("write-failed", error=str(exc)[:500])
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "1")
