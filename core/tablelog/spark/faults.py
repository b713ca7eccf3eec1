"""Fault injection for tests and the demo: the data source ``tablelog-faults``.

It is the ``tablelog`` sink with a task attempt or the driver made to fail (or wait) at a
chosen stage of a write, so that the exactly-once scenarios
(:mod:`tablelog.testing.spark_scenarios`) and the demo can show what a retry, a replay
or a killed driver leaves behind. It wraps the sink's writers from the outside: the
sink does not know it exists, and the ``tablelog`` format refuses the ``testing.*``
options below as unknown table options. (It is not in :mod:`tablelog.testing`, whose
suites need pytest: the demo and the executors that unpickle these writers do not.)

::

    tablelog.spark.faults.register(spark)
    df.writeStream.format("tablelog-faults").option("testing.fail-after-finish", "1:0")...

* ``testing.fail-mid-write = "P"`` or ``"B:P"``: attempt 0 of partition P (in micro-batch
  B) raises after writing its first chunk, before ``finish()``: a task that dies with
  records produced, unflushed.
* ``testing.fail-after-finish = "P"`` or ``"B:P"``: attempt 0 of partition P (in
  micro-batch B) raises after its ``finish()`` made its records durable in the log: a
  task that dies after producing.
* ``testing.pause-mid-write = "B:P:SECONDS"``: attempt 0 of partition P in micro-batch B
  sleeps after writing its first chunk, before ``finish()``, having written where it runs
  (process id, working directory: the executor's) as JSON to the file
  ``testing.paused-task-file`` names (a window for a test to kill the task's host).
* ``testing.pause-after-commit = "B:SECONDS"``: the driver sleeps after committing
  micro-batch B to the table, before Spark records the batch in its commit log (a window
  for a test to kill the driver).
* ``testing.fail-after-commit = "B"``: the driver's commit of micro-batch B raises after
  the snapshot is in the table, as a commit whose answer was lost does
  (:class:`~tablelog.errors.CommitOutcomeUnknown`): Spark then aborts the batch.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tablelog.commit.log_commit import WriteReceipt
from tablelog.errors import CommitOutcomeUnknown, OptionError
from tablelog.spark import sink
from tablelog.spark.datasource import TablelogDataSource
from tablelog.spark.sink import PartitionWrite, TablelogCommitMessage, TaskAttempt

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from tablelog.writing.write_task import WriteTask

FORMAT = "tablelog-faults"

TESTING_PREFIX = "testing."
FAIL_MID_WRITE = "testing.fail-mid-write"
FAIL_AFTER_FINISH = "testing.fail-after-finish"
PAUSE_MID_WRITE = "testing.pause-mid-write"
PAUSED_TASK_FILE = "testing.paused-task-file"
PAUSE_AFTER_COMMIT = "testing.pause-after-commit"
FAIL_AFTER_COMMIT = "testing.fail-after-commit"
TESTING_KEYS = frozenset({FAIL_AFTER_FINISH, FAIL_MID_WRITE, PAUSE_MID_WRITE, PAUSED_TASK_FILE, PAUSE_AFTER_COMMIT,
                          FAIL_AFTER_COMMIT})


class InjectedFailure(RuntimeError):
    """Raised by a task attempt that a ``testing.fail-*`` option tells to fail."""


def split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The ``testing.*`` options (keys lower-cased, as the sink's) and the others, for the
    sink; an unknown ``testing.*`` key is refused."""
    testing: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, value in options.items():
        lowered = str(key).strip().lower()
        if lowered.startswith(TESTING_PREFIX):
            testing[lowered] = str(value)
        else:
            rest[key] = value
    unknown = sorted(set(testing) - TESTING_KEYS)
    if unknown:
        raise OptionError(f"unknown testing option(s) {unknown}; known: {sorted(TESTING_KEYS)}")
    return testing, rest


# -- the stages of a write ---------------------------------------------------------------


def mid_write(testing: Mapping[str, str], attempt: TaskAttempt, task: WriteTask) -> None:
    """After each chunk a task attempt wrote, before its ``finish()``: pause or raise as
    ``testing.pause-mid-write`` / ``testing.fail-mid-write`` ask."""
    _pause_mid_write(testing, attempt)
    spec = testing.get(FAIL_MID_WRITE)
    if spec is not None and _selects(spec, attempt):
        raise InjectedFailure(
            f"{FAIL_MID_WRITE}: task attempt {attempt.label} fails after producing its first "
            f"{task.rows} row(s), before finish (token {task.token})"
        )


def after_finish(testing: Mapping[str, str], attempt: TaskAttempt, receipt: WriteReceipt) -> None:
    """After a task attempt's ``finish()`` made its records durable: raise as
    ``testing.fail-after-finish`` asks (the receipt never reaches the driver)."""
    spec = testing.get(FAIL_AFTER_FINISH)
    if spec is not None and _selects(spec, attempt):
        raise InjectedFailure(
            f"{FAIL_AFTER_FINISH}: task attempt {attempt.label} fails after producing "
            f"{sum(r.count for r in receipt.ranges)} records (token {receipt.token})"
        )


def after_commit(testing: Mapping[str, str], batch_id: int | None) -> None:
    """After the driver committed micro-batch ``batch_id`` to the table, before Spark's
    commit log records it: sleep as ``testing.pause-after-commit`` asks, then fail as
    ``testing.fail-after-commit`` asks."""
    if batch_id is None:
        return
    spec = testing.get(PAUSE_AFTER_COMMIT)
    if spec is not None:
        batch, _, seconds = spec.partition(":")
        if int(batch) == batch_id:
            time.sleep(float(seconds))
    failing = testing.get(FAIL_AFTER_COMMIT)
    if failing is not None and int(failing) == batch_id:
        raise CommitOutcomeUnknown(f"{FAIL_AFTER_COMMIT}: micro-batch {batch_id} is committed and its "
                                   "answer is lost (injected)")


def _pause_mid_write(testing: Mapping[str, str], attempt: TaskAttempt) -> None:
    spec = testing.get(PAUSE_MID_WRITE)
    if spec is None:
        return
    batch, part, seconds = spec.split(":")
    if attempt.number != 0 or attempt.batch_id != int(batch) or attempt.partition != int(part):
        return
    marker = testing.get(PAUSED_TASK_FILE)
    if marker:
        with open(marker, "w") as f:
            json.dump({"pid": os.getpid(), "cwd": os.getcwd(), "batch": attempt.batch_id,
                       "partition": attempt.partition}, f)
    time.sleep(float(seconds))


def _selects(spec: str, attempt: TaskAttempt) -> bool:
    """Whether ``spec`` (``"P"`` or ``"B:P"``) names this attempt (attempt 0 only)."""
    if attempt.number != 0:
        return False
    batch, _, part = spec.rpartition(":")
    if batch and (attempt.batch_id is None or int(batch) != attempt.batch_id):
        return False
    return int(part) == attempt.partition


def _each_chunk_then(data: Iterable[Any], testing: Mapping[str, str], write: PartitionWrite) -> Iterator[Any]:
    """``data``, with :func:`mid_write` run when the sink asks for the next chunk: the one
    before is written by then (after the last, before ``finish()``)."""
    for chunk in data:
        yield chunk
        mid_write(testing, write.attempt, write.task)


# -- the sink's writers, with the stages injected ---------------------------------------


class _Injecting:
    """Mixed in before one of the sink's writer classes (whose Spark base class says
    whether Spark hands it Arrow batches or rows)."""

    plan: sink.WritePlan

    def __init__(self, plan: sink.WritePlan, testing: Mapping[str, str]) -> None:
        super().__init__(plan)  # type: ignore[call-arg]
        self.testing = dict(testing)

    def _chunks(self, iterator: Iterator[Any]) -> Iterable[Any]:
        return iterator  # Arrow batches

    def write(self, iterator: Iterator[Any]) -> TablelogCommitMessage:
        write = PartitionWrite.start(self.plan)
        message = write.run(_each_chunk_then(self._chunks(iterator), self.testing, write))
        after_finish(self.testing, write.attempt, message.receipt)
        return message


class _Rows(_Injecting):
    def _chunks(self, iterator: Iterator[Any]) -> Iterable[Any]:
        return sink.row_chunks(self.plan, iterator)


class _InjectingCommit:
    plan: sink.WritePlan
    testing: dict[str, str]

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 (Spark's name)
        if sink.commit_messages(self.plan, messages, batchId) is not None:  # None: no task ran
            after_commit(self.testing, batchId)


class BatchArrowWriter(_Injecting, sink.BatchArrowWriter):
    pass


class BatchRowWriter(_Rows, sink.BatchRowWriter):
    pass


class StreamArrowWriter(_InjectingCommit, _Injecting, sink.StreamArrowWriter):
    pass


class StreamRowWriter(_InjectingCommit, _Rows, sink.StreamRowWriter):
    pass


_INJECTING: dict[type, type[_Injecting]] = {
    sink.BatchArrowWriter: BatchArrowWriter,
    sink.BatchRowWriter: BatchRowWriter,
    sink.StreamArrowWriter: StreamArrowWriter,
    sink.StreamRowWriter: StreamRowWriter,
}


class FaultInjectingDataSource(TablelogDataSource):
    """``format("tablelog-faults")``: the ``tablelog`` data source, its writes with the
    ``testing.*`` options' faults injected."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        testing, options = split_options(self.options)
        writer = sink.batch_writer(options, schema, overwrite)
        return _INJECTING[type(writer)](writer.plan, testing)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802 (Spark's name)
        testing, options = split_options(self.options)
        writer = sink.stream_writer(options, schema, overwrite)
        return _INJECTING[type(writer)](writer.plan, testing)


def register(spark: SparkSession) -> None:
    """Register the ``tablelog-faults`` data source in ``spark`` (a classic or Connect session)."""
    spark.dataSource.register(FaultInjectingDataSource)
