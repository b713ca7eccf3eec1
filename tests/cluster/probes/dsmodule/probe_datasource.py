"""A tiny Python data source ``probe`` (not tablelog) for the Spark Connect and standalone probes.

Writers append one JSON line per task attempt to ``<path>/started.jsonl`` when it starts and
to ``<path>/tasks.jsonl`` when it ends (what Python ran them, the
TaskContext) and the streaming commit one line per batch to ``<path>/commits.jsonl``; the
stream reader produces ``rows`` numbers per micro-batch. Option ``sleep`` (seconds) slows
each write task, so that a probe can kill a worker in the middle of a job.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType


def _append(path: str, name: str, record: dict[str, Any]) -> None:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "a") as f:
        f.write(json.dumps(record) + "\n")


def _task_record(rows: int) -> dict[str, Any]:
    from pyspark import TaskContext

    context = TaskContext.get()
    return {
        "python": sys.executable, "pid": os.getpid(), "cwd": os.getcwd(), "rows": rows,
        "partition": context.partitionId() if context else None,
        "attempt": context.attemptNumber() if context else None,
        "task_attempt_id": context.taskAttemptId() if context else None,
        "stage": context.stageId() if context else None,
        "batch": context.getLocalProperty("streaming.sql.batchId") if context else None,
    }


class ProbeCommit(WriterCommitMessage):
    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record


class ProbeWriter(DataSourceWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options["path"]
        self.sleep = float(options.get("sleep", "0"))

    def write(self, iterator: Iterator[Any]) -> ProbeCommit:
        _append(self.path, "started.jsonl", _task_record(0))
        rows = sum(1 for _ in iterator)
        time.sleep(self.sleep)
        record = _task_record(rows)
        _append(self.path, "tasks.jsonl", record)
        return ProbeCommit(record)

    def commit(self, messages: list[ProbeCommit]) -> None:  # type: ignore[override]
        _append(self.path, "commits.jsonl", {"batch": None, "tasks": len(messages),
                                             "rows": sum(m.record["rows"] for m in messages),
                                             "python": sys.executable})


class ProbeStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options["path"]

    def write(self, iterator: Iterator[Any]) -> ProbeCommit:
        record = _task_record(sum(1 for _ in iterator))
        _append(self.path, "tasks.jsonl", record)
        return ProbeCommit(record)

    def commit(self, messages: list[ProbeCommit], batchId: int) -> None:  # type: ignore[override]  # noqa: N803
        _append(self.path, "commits.jsonl", {"batch": batchId, "tasks": len(messages),
                                             "rows": sum(m.record["rows"] for m in messages if m),
                                             "python": sys.executable})


class ProbeRange(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


class ProbeStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.rows = int(options.get("rows", "5"))
        self.batches = 0

    def initialOffset(self) -> dict[str, int]:  # noqa: N802
        return {"next": 0}

    def latestOffset(self) -> dict[str, int]:  # noqa: N802
        self.batches += 1
        return {"next": self.batches * self.rows}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[ProbeRange]:
        return [ProbeRange(start["next"], end["next"])]

    def read(self, partition: ProbeRange) -> Iterator[tuple[int, str]]:  # type: ignore[override]
        for i in range(partition.start, partition.end):
            yield (i, sys.executable)

    def commit(self, end: dict[str, int]) -> None:
        pass


class ProbeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "probe"

    def schema(self) -> str:
        return "id long, python string"

    def writer(self, schema: StructType, overwrite: bool) -> ProbeWriter:
        return ProbeWriter(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> ProbeStreamWriter:  # noqa: N802
        return ProbeStreamWriter(self.options)

    def streamReader(self, schema: StructType) -> ProbeStreamReader:  # noqa: N802
        return ProbeStreamReader(self.options)
