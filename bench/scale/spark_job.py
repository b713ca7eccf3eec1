"""One Spark job of ``python -m bench.scale`` in a process of its own, with a new
session (so its Python workers' memory is this job's alone):
``python -m bench.scale.spark_job '<json>'``, printing one JSON line.

- ``{"job": "scan", ...}``: a batch read of the whole table written to Spark's ``noop``
  format (every row read, nothing kept): seconds, Spark tasks, peak task RSS.
- ``{"job": "compact", "partition": N, ...}``: ``tablelog.spark.compact`` of table
  partition ``p = N``: seconds, pairs, files before and after, the tasks' rewrite
  seconds summed, peak task RSS.

Both: ``warehouse``, ``table``, ``options`` (the table's connection options), ``master``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.scale.task_memory import TaskMemory


def _tasks(spark: Any, group: str) -> int:
    tracker = spark.sparkContext.statusTracker()
    stages = [stage for job in tracker.getJobIdsForGroup(group) if (info := tracker.getJobInfo(job))
              for stage in info.stageIds]
    return sum(info.numTasks for stage in stages if (info := tracker.getStageInfo(stage)))


def scan(spark: Any, job: dict[str, Any]) -> dict[str, Any]:
    reader = spark.read.format("tablelog").option("warehouse", job["warehouse"])
    for key, value in job["options"].items():
        reader = reader.option(key, value)
    spark.sparkContext.setJobGroup("scan", "full scan")
    began = time.perf_counter()
    reader.load(job["table"]).write.format("noop").mode("overwrite").save()
    return {"seconds": time.perf_counter() - began, "tasks": _tasks(spark, "scan")}


def compact(spark: Any, job: dict[str, Any]) -> dict[str, Any]:
    import tablelog.spark

    began = time.perf_counter()
    result = tablelog.spark.compact(spark, job["table"], warehouse=job["warehouse"], options=job["options"],
                                    partitions=[{"p": job["partition"]}])
    return {"seconds": time.perf_counter() - began, "pairs": len(result.pairs), "files_before": result.files_before,
            "files_after": result.files_after, "rewrite_seconds": result.rewrite_seconds, "summary": result.summary()}


def _warm_up(spark: Any) -> None:
    """Start the session's Python workers and import in them what the job's tasks use
    (tablelog's reads, its compaction and pypaimon's readers and writers under them): a
    job's rate is then its work, not Spark's start-up, as in a long-running application."""
    def imports(batches: Any) -> Any:
        import pypaimon.read.interval_partition  # noqa: F401
        import pypaimon.write.writer.key_value_data_writer  # noqa: F401

        import tablelog.commit.compaction  # noqa: F401
        import tablelog.spark.datasource  # noqa: F401
        import tablelog.store.compaction  # noqa: F401

        yield from batches

    cores = spark.sparkContext.defaultParallelism
    spark.range(cores, numPartitions=cores).mapInArrow(imports, "id long").collect()


def main(argv: list[str]) -> None:
    from tablelog.spark.session import local_session

    job = json.loads(argv[0])
    spark = local_session(job["master"], app_name=f"bench-scale-{job['job']}")
    try:
        _warm_up(spark)
        memory = TaskMemory().start()
        try:
            out = (scan if job["job"] == "scan" else compact)(spark, job)
        finally:
            memory.stop()
        out.update({"peak_task_rss_mb": memory.peak_mb(), "task_workers": memory.workers})
    finally:
        spark.stop()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
