"""Compaction as a distributed Spark job, as Paimon's ``CALL sys.compact`` on Spark: the
driver plans the (partition, bucket) pairs to rewrite at the latest snapshot
(:func:`tablelog.commit.compaction.plan_compaction`), one Spark task rewrites each pair,
the largest first, and the driver commits every pair's new files in one ``COMPACT``
snapshot (:func:`tablelog.commit.compaction_commit.commit_rewrites`), dropping a pair
that another compaction or an overwrite changed meanwhile (its new files deleted) and
never losing a writer's commit.

A pair is the unit of work and of retry: a failed task is run again by Spark, and its
files are rewritten anew. Files a failed attempt (or the loser of a speculative one) had
written are never committed: orphans, as Paimon's are, until an orphan-file removal.
The job runs on classic Spark and on Spark Connect alike (a DataFrame of task numbers,
mapped with ``mapInArrow``).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit.compaction import plan_compaction
from tablelog.commit.compaction_commit import (
    CompactionResult,
    PairRewrite,
    PairTask,
    commit_rewrites,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession


def compact(
    spark: SparkSession, table: str, *, warehouse: str, options: Mapping[str, str] | None = None,
    buckets: Sequence[int] | None = None, partitions: Sequence[Mapping[str, Any]] | None = None,
    full: bool = True,
) -> CompactionResult:
    """Compact ``table`` of ``warehouse`` with ``spark``'s executors: every pair with
    more than one sorted run (``full``), else the runs Paimon's universal compaction picks
    for pairs past ``num-sorted-run.compaction-trigger``; only ``buckets`` and
    ``partitions`` (mappings of partition column to value) when given. ``options``: the
    table's connection and runtime options (an S3 warehouse's credentials), given to
    every task."""
    from tablelog.table import internals
    from tablelog.tables import open_table

    began = time.perf_counter()
    given = dict(options or {})
    view = internals(open_table(warehouse, table, given))
    plan = plan_compaction(view, buckets, partitions=partitions, automatic=not full)
    if not plan.tasks or plan.snapshot_id is None:
        return CompactionResult(view.identifier, None, skipped=plan.skipped)
    tasks = sorted(plan.tasks, key=lambda task: -sum(int(f.file_size) for f in task.files.files))
    job = pickle.dumps((warehouse, table, given, tasks))
    numbers = spark.range(len(tasks), numPartitions=len(tasks))  # one task number per Spark task
    rewritten = numbers.mapInArrow(lambda batches: _rewrite(job, batches), "rewrite binary").collect()
    rewrites: list[PairRewrite] = [pickle.loads(row["rewrite"]) for row in rewritten]
    return attrs.evolve(commit_rewrites(view, plan.snapshot_id, rewrites), seconds=time.perf_counter() - began)


def _rewrite(job: bytes, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a Spark task: rewrite the pairs whose numbers ``batches`` hold."""
    import pyarrow as pa

    from tablelog.commit.compaction import rewrite_pair
    from tablelog.table import internals
    from tablelog.tables import open_table

    warehouse, table, options, tasks = pickle.loads(job)
    view = None
    for batch in batches:
        for number in batch.column(0).to_pylist():
            view = view or internals(open_table(warehouse, table, options))
            task: PairTask = tasks[number]
            rewrite = rewrite_pair(view, task)
            yield pa.RecordBatch.from_pydict({"rewrite": [pickle.dumps(rewrite)]},
                                             schema=pa.schema([("rewrite", pa.binary())]))
