"""A Spark driver on the standalone cluster, a process of its own as spark-submit's would be:
``python streaming_pipeline.py CONFIG`` where CONFIG is JSON with

- ``master``, ``warehouse``, ``table``, ``inputs``, ``checkpoint``;
- ``options``: the table's options and the connections' (``log.*``, ``kafka.*``, ``s3.*``);
- ``testing``: ``testing.*`` options for the write (failures to inject), may be empty;
- ``read``: a folder for the read queries' checkpoints, or null for no read;
- ``executors``: after the rest, run 8 tasks that report the executor they ran in
  (:func:`where_am_i`), printed as ``"executors"``;
- ``driver_host`` (default ``127.0.0.1``): the address the driver binds and gives its
  executors; ``spark_conf``: more Spark settings.

It streams the input files into the table (the scenarios' input: three micro-batches of
inserts, updates and deletes), then, with ``read``, reads the table back through the
Spark source, transactional and eventual-then-normalized, and prints one JSON line:
``{"transactional": [...], "normalized": [...], "eventual": N}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def where_am_i(_: Iterator[int]) -> Iterator[dict[str, Any]]:
    """What a task reports about the executor it runs in (a function of this script, so
    that Spark ships it by value: executors cannot import this folder)."""
    import os

    from pyspark import TaskContext

    context = TaskContext.get()
    daemon = os.getppid()  # the Python workers' daemon, a child of the executor JVM
    with open(f"/proc/{daemon}/stat") as stat:
        executor_pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    yield {
        "partition": context.partitionId(),
        "executor_pid": executor_pid,
        # An executor runs in <worker work dir>/<application id>/<executor id>.
        "executor_dir": os.getcwd(),
    }


def main(config: dict[str, Any]) -> None:
    from tablelog.spark import normalize
    from tablelog.spark.session import local_session
    from tablelog.testing.spark_inputs import collect_stream
    from tablelog.testing.spark_scenarios import SparkExactlyOnceScenarios

    host = config.get("driver_host", "127.0.0.1")
    spark = local_session(config["master"], app_name="tablelog-cluster-pipeline", conf={
        "spark.driver.host": host, "spark.driver.bindAddress": host, "spark.executor.memory": "512m",
        **config.get("spark_conf", {}),
    })
    try:
        scenarios = SparkExactlyOnceScenarios()
        warehouse, name, options = config["warehouse"], config["table"], config["options"]
        query = scenarios._stream_write(spark, Path(config["inputs"]), warehouse, name, Path(config["checkpoint"]),
                                        options, **config["testing"])
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"the streaming write failed: {query.exception()}")
        report: dict[str, Any] = {"written": True}
        if config.get("executors"):
            report["executors"] = spark.sparkContext.parallelize(range(8), 8).mapPartitions(where_am_i).collect()
        if config["read"] is None:
            print(json.dumps(report), flush=True)
            return
        read = Path(config["read"])
        transactional = collect_stream(
            scenarios._read_stream(spark, warehouse, name, options, **{"scan.mode": "earliest"}),
            read / "transactional")
        eventual = scenarios._read_stream(spark, warehouse, name, options,
                                          **{"log.consistency": "eventual", "scan.mode": "earliest"})
        raw = collect_stream(eventual, read / "eventual")
        normalized = collect_stream(normalize(eventual, ["id"]), read / "normalized", "update")
        report.update(transactional=transactional, normalized=normalized, eventual=len(raw))
        print(json.dumps(report), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    from tablelog.testing.processes import child_config

    main(child_config())  # on standard input: the options hold the S3 secret key
