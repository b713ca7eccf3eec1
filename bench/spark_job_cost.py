"""The fixed part of a Spark compaction job: ``python -m bench.spark_job_cost [--cores 1,2]
[--rounds R]``.

On a warm ``local[N]`` session (its Python workers started and the compaction's modules
imported, as ``bench.scale``'s Spark jobs are): a Spark job without Python
(``spark.range(4).collect()``), a job of four ``mapInArrow`` tasks that do nothing (the
shape of ``tablelog.spark.compact`` on a partition of four buckets), and the time each
task takes to open a small table: a worker's first open, then later ones. What is left of
a compaction job's wall time beyond its tasks' rewrites is mostly these.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from bench.common import stats

TASKS = 4


def _imports(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pypaimon.read.interval_partition  # noqa: F401
    import pypaimon.write.writer.key_value_data_writer  # noqa: F401

    import tablelog.commit.compaction  # noqa: F401
    import tablelog.spark.datasource  # noqa: F401
    import tablelog.store.compaction  # noqa: F401

    yield from batches


def _opens(warehouse: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def opens(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from tablelog.table import internals
        from tablelog.tables import open_table

        for _ in batches:
            began = time.perf_counter()
            internals(open_table(warehouse, "db.t", {}))
            yield pa.RecordBatch.from_pydict({"seconds": [time.perf_counter() - began]})
    return opens


def _timed(job: Callable[[], Any], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        job()
        times.append(time.perf_counter() - began)
    return times


def measure(cores: int, rounds: int, warehouse: str) -> dict[str, Any]:
    from tablelog.spark.session import local_session

    spark = local_session(f"local[{cores}]", app_name="bench-spark-job-cost")
    try:
        spark.range(cores, numPartitions=cores).mapInArrow(_imports, "id long").collect()
        jvm = _timed(lambda: spark.range(TASKS, numPartitions=TASKS).collect(), rounds)
        python = _timed(lambda: spark.range(TASKS, numPartitions=TASKS)
                        .mapInArrow(lambda batches: batches, "id long").collect(), rounds)
        first = spark.range(TASKS, numPartitions=TASKS).mapInArrow(_opens(warehouse), "seconds double").collect()
        later = spark.range(TASKS, numPartitions=TASKS).mapInArrow(_opens(warehouse), "seconds double").collect()
    finally:
        spark.stop()
    return {"jvm_job": jvm, "python_job": python,
            "first_opens": sorted(row.seconds for row in first)[-cores:],
            "later_opens": [row.seconds for row in later]}


def _spread(values: list[float]) -> str:
    got = stats(values)
    return f"{got['median']:.3f} s ({got['min']:.3f}-{got['max']:.3f})"


def main() -> None:
    import tablelog

    parser = argparse.ArgumentParser(prog="python -m bench.spark_job_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", default="1,2")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warehouse = tempfile.mkdtemp(prefix="bench-spark-job-cost-")
    try:
        schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
        tablelog.create_table(warehouse, "db.t", schema, primary_key=["id"], bucket=TASKS, options={"log.system": "none"})
        for cores in (int(c) for c in args.cores.split(",")):
            got = measure(cores, args.rounds, warehouse)
            print(f"local[{cores}]: a job without Python {_spread(got['jvm_job'])}; "
                  f"{TASKS} mapInArrow tasks doing nothing {_spread(got['python_job'])}; "
                  f"a worker's first open of the table {_spread(got['first_opens'])}, later opens {_spread(got['later_opens'])}")
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
