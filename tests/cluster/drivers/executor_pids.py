"""A Spark driver run as its own process (as spark-submit would): ``python executor_pids.py
spark://host:port TASKS`` runs TASKS tasks and prints, as JSON, what each reports about the
executor it ran in."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


def where_am_i(_: Iterator[int]) -> Iterator[dict[str, Any]]:
    import os

    from pyspark import TaskContext

    context = TaskContext.get()
    daemon = os.getppid()  # the Python workers' daemon, a child of the executor JVM
    with open(f"/proc/{daemon}/stat") as stat:
        executor_pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    yield {
        "partition": context.partitionId(),
        "attempt": context.attemptNumber(),
        "python_pid": os.getpid(),
        "executor_pid": executor_pid,
        # An executor runs in <worker work dir>/<application id>/<executor id>.
        "executor_dir": os.getcwd(),
    }


def main(master: str, tasks: int) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master).appName("tablelog-executor-pids")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.executor.memory", "512m").config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        rows = spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(where_am_i).collect()
        print(json.dumps(rows))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
