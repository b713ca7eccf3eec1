"""The sink: ``df.write.format("tablelog")`` and ``df.writeStream.format("tablelog")``.

Driver (writer factory, :func:`plan_write`): parse the options, create the table when
it does not exist, check the DataFrame's schema against it (with ``mergeSchema = true``,
add the DataFrame's extra columns to the table first). Anything wrong fails here,
before a task runs, so nothing reaches the log or the table.

Executors (:func:`write_partition`): each task attempt opens a
:class:`~tablelog.writing.write_task.WriteTask` (a writer token of its own), writes the Arrow
batches, and ``finish()`` makes its records durable; the receipt is the commit message.
The log connection comes from the worker process's :func:`~tablelog.logs.pool.shared_pool`
(PySpark reuses its Python workers across tasks): only a task that finished cleanly
hands it on to the next one.

Driver (:func:`commit_messages`): ``Table.commit(writer_id, commit_identifier, receipts)``,
idempotent per (writer id, commit identifier). Streaming writes use
``commit_identifier = batchId + 1`` and, unless ``writer.id`` is given, the writer id
``spark-<queryId>``: Spark keeps the query id in the checkpoint, so a query restarted
from its checkpoint replays a batch under the same (writer id, identifier) and the
replay commits nothing twice.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa
from pyspark.sql import datasource as _ds

from tablelog.commit.history import find_commit
from tablelog.commit.leases import log_deletes_before, release_leases
from tablelog.commit.log_commit import CommitResult, WriteReceipt
from tablelog.errors import OptionError, TablelogError
from tablelog.logs.pool import shared_pool
from tablelog.spark.options import SourceOptions
from tablelog.spark.schema import check_write_schema, data_columns, extra_columns, to_arrow
from tablelog.store import AddColumn
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from tablelog.table_view import TableView
    from tablelog.writing.write_task import WriteTask

#: Local properties Spark sets on every task of a streaming micro-batch.
BATCH_ID_KEY = "streaming.sql.batchId"
QUERY_ID_KEY = "sql.streaming.queryId"

_ROW_CHUNK = 10_000


@dataclass
class TablelogCommitMessage(_ds.WriterCommitMessage):
    """One task attempt's receipt, sent from the executor to the driver's commit."""

    writer_id: str
    commit_identifier: int
    receipt: WriteReceipt


@attrs.frozen
class WritePlan:
    """What the driver decided for a write; pickled to the executors and the committer."""

    options: SourceOptions
    data_schema: pa.Schema
    streaming: bool
    writer_id: str | None  # None: streaming writes use the query id
    commit_identifier: int | None  # batch writes only (streaming: batchId + 1)

    def open(self) -> Table:
        return open_table(self.options.warehouse, self.options.table, self.options.runtime)


def query_writer_id(query_id: str) -> str:
    """The writer id of a streaming query that sets no ``writer.id``."""
    return f"spark-{query_id}"


# -- driver: plan ---------------------------------------------------------------------


def plan_write(options: Mapping[str, str], schema: StructType, overwrite: bool, streaming: bool) -> WritePlan:
    """Validate a write and create its table if needed; raises before anything is written."""
    parsed = SourceOptions.parse(options)
    if overwrite:
        raise OptionError(
            f"table {parsed.table!r}: the tablelog sink only appends changes (save mode 'append', "
            "output mode 'append' or 'update'); an overwrite (mode('overwrite'), INSERT OVERWRITE of the "
            "table or of a partition) is refused: the log would have to carry a -D of every row it replaces, "
            "and rows other writers commit meanwhile would be replaced without one, leaving a log that "
            "disagrees with the table. To replace rows, write their -D (column _kind) and the new rows; to "
            "drop old partitions, set partition.expiration-time"
        )
    data_schema = to_arrow(schema)
    table = open_or_create(parsed, data_schema)
    added = extra_columns(table.schema, data_schema)
    if added and parsed.merge_schema:
        # Everything else about the DataFrame is checked before the table changes.
        check_write_schema(table.identifier, pa.schema([*table.schema, *added]), data_schema, table.primary_key)
        table.alter(*(AddColumn(f.name, f.type) for f in added))
    check_write_schema(table.identifier, table.schema, data_schema, table.primary_key)
    writer_id, commit_identifier = parsed.writer_id, None
    if not streaming:
        if writer_id is None:
            writer_id, commit_identifier = f"spark-batch-{uuid.uuid4().hex}", 1
        else:
            commit_identifier = (table.last_commit_identifier(writer_id) or 0) + 1
    return WritePlan(parsed, data_schema, streaming, writer_id, commit_identifier)


def open_or_create(parsed: SourceOptions, data_schema: pa.Schema) -> Table:
    """The table named by the options; created from the DataFrame's columns when missing.
    Opening an existing one refuses options that would change its definition."""
    try:
        table = open_table(parsed.warehouse, parsed.table, parsed.runtime)
    except TablelogError as err:
        from tablelog.errors import TableNotFoundError

        if not isinstance(err, TableNotFoundError):
            raise
        check_write_schema(parsed.table, data_columns(data_schema), data_schema)  # the _kind column
        return create_table(
            parsed.warehouse, parsed.table, data_columns(data_schema),
            options=parsed.given, exist_ok=True,
        )
    return table


# -- executors: write -----------------------------------------------------------------


@attrs.frozen
class TaskAttempt:
    """The Spark task attempt a write runs in."""

    batch_id: int | None  # a streaming write's micro-batch
    partition: int = 0
    number: int = 0  # 0, then 1 for its first retry...

    @property
    def label(self) -> str:
        """Its name in its receipt (``WriteReceipt.task``) and in messages: ``b1-p0-a0``."""
        return f"{'' if self.batch_id is None else f'b{self.batch_id}-'}p{self.partition}-a{self.number}"


@attrs.define
class PartitionWrite:
    """One task attempt's write: the attempt, the writer id and commit identifier it
    writes under, and its :class:`~tablelog.writing.write_task.WriteTask`."""

    attempt: TaskAttempt
    writer_id: str
    commit_identifier: int
    task: WriteTask

    @classmethod
    def start(cls, plan: WritePlan) -> PartitionWrite:
        """The write of the task attempt this executor runs (Spark's ``TaskContext``)."""
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        number = context.attemptNumber() if context else 0
        batch_id: int | None = None
        if plan.streaming:
            batch_text = context.getLocalProperty(BATCH_ID_KEY) if context else None
            query_id = context.getLocalProperty(QUERY_ID_KEY) if context else None
            if batch_text is None or (plan.writer_id is None and query_id is None):
                raise TablelogError(
                    "the tablelog streaming sink found no micro-batch id / query id in the task context; "
                    "set option 'writer.id' to a name that is stable across restarts of this query"
                )
            batch_id = int(batch_text)
            writer_id = plan.writer_id or query_writer_id(str(query_id))
            commit_identifier = batch_id + 1
        else:
            assert plan.writer_id is not None and plan.commit_identifier is not None
            writer_id, commit_identifier = plan.writer_id, plan.commit_identifier
        attempt = TaskAttempt(batch_id, partition, number)
        task = plan.open().write_task(writer_id, commit_identifier, task=attempt.label, log_pool=shared_pool())
        return cls(attempt, writer_id, commit_identifier, task)

    def run(self, data: Iterable[Any]) -> TablelogCommitMessage:
        """Write the data (Arrow batches, or row chunks), finish, and return the receipt."""
        try:
            for chunk in data:
                self.task.write(chunk)
        except BaseException:
            self.task.abort()
            raise
        return TablelogCommitMessage(self.writer_id, self.commit_identifier, self.task.finish())


def write_partition(plan: WritePlan, data: Iterable[Any]) -> TablelogCommitMessage:
    """Write one task attempt's data (Arrow batches, or row chunks) and return its receipt."""
    return PartitionWrite.start(plan).run(data)


def row_chunks(plan: WritePlan, rows: Iterator[Any]) -> Iterator[pa.Table]:
    """Spark Rows (the row writers, for PySpark without Arrow writers) as Arrow tables."""
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row.asDict(recursive=True))
        if len(chunk) >= _ROW_CHUNK:
            yield pa.Table.from_pylist(chunk, schema=plan.data_schema)
            chunk = []
    if chunk:
        yield pa.Table.from_pylist(chunk, schema=plan.data_schema)


# -- driver: commit / abort -------------------------------------------------------------


def commit_messages(plan: WritePlan, messages: list[Any], batch_id: int | None) -> CommitResult | None:
    """Commit the receipts of one job (or micro-batch) as one snapshot, once."""
    received = [m for m in messages if m is not None]
    if not received:
        return None  # no task ran: nothing to commit
    writer_ids = {m.writer_id for m in received}
    identifiers = {m.commit_identifier for m in received}
    expected = None if batch_id is None else batch_id + 1
    if len(writer_ids) != 1 or len(identifiers) != 1 or (expected is not None and identifiers != {expected}):
        raise TablelogError(
            f"inconsistent commit messages: writer ids {sorted(writer_ids)}, commit identifiers "
            f"{sorted(identifiers)} (micro-batch {batch_id}); nothing was committed"
        )
    table = plan.open()
    # The pool keeps the committer's log connection (end positions, commit hook) from one
    # micro-batch to the next: opening a connection is a broker round trip per commit.
    return table.commit(writer_ids.pop(), identifiers.pop(), [m.receipt for m in received],
                        log_pool=shared_pool())


def abort_messages(plan: WritePlan, messages: list[Any]) -> None:
    """The job failed: delete the data files the successful attempts prepared, and their
    writer leases (which would hold their log records until they expire). Spark aborts
    also when the commit raised, and a commit whose snapshot put got no answer
    (:class:`~tablelog.errors.CommitOutcomeUnknown`) may be in the table: the files are
    deleted only once the table, read again, shows that commit absent."""
    receipts = [msg.receipt for msg in messages if msg is not None]
    paimon_messages = [m for receipt in receipts for m in receipt.paimon_messages]
    produced = any(receipt.ranges for receipt in receipts)
    if not paimon_messages and not produced:
        return
    # Best effort: unreferenced files are harmless (Paimon's orphan clean-up), leases expire.
    with contextlib.suppress(Exception):
        table = plan.open()
        if produced and log_deletes_before(internals(table)):
            release_leases(internals(table), receipts)
        if paimon_messages and not _maybe_committed(internals(table), messages):
            internals(table).files.abort(paimon_messages)


def _maybe_committed(table: TableView, messages: list[Any]) -> bool:
    """Whether the table holds the commit of ``messages`` (raises when it cannot be read:
    the caller then deletes nothing)."""
    received = [m for m in messages if m is not None]
    return any(find_commit(table.files, m.writer_id, m.commit_identifier) is not None
               for m in {(m.writer_id, m.commit_identifier): m for m in received}.values())


# -- the writer classes Spark calls -----------------------------------------------------

_ArrowWriter: Any = getattr(_ds, "DataSourceArrowWriter", None)
_StreamArrowWriter: Any = getattr(_ds, "DataSourceStreamArrowWriter", None)
#: Whether this PySpark hands writers Arrow batches (4.0+ batch, 4.1+ streaming).
ARROW_BATCH_WRITES = _ArrowWriter is not None
ARROW_STREAM_WRITES = _StreamArrowWriter is not None


class _BatchWriterBase:
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def commit(self, messages: list[Any]) -> None:
        commit_messages(self.plan, messages, None)

    def abort(self, messages: list[Any]) -> None:
        abort_messages(self.plan, messages)


class _StreamWriterBase:
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 (Spark's name)
        commit_messages(self.plan, messages, batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        abort_messages(self.plan, messages)


class BatchArrowWriter(_BatchWriterBase, _ArrowWriter or _ds.DataSourceWriter):  # type: ignore[misc]
    def write(self, iterator: Iterator[pa.RecordBatch]) -> TablelogCommitMessage:
        return write_partition(self.plan, iterator)


class BatchRowWriter(_BatchWriterBase, _ds.DataSourceWriter):
    def write(self, iterator: Iterator[Any]) -> TablelogCommitMessage:
        return write_partition(self.plan, row_chunks(self.plan, iterator))


class StreamArrowWriter(_StreamWriterBase, _StreamArrowWriter or _ds.DataSourceStreamWriter):  # type: ignore[misc]
    def write(self, iterator: Iterator[pa.RecordBatch]) -> TablelogCommitMessage:
        return write_partition(self.plan, iterator)


class StreamRowWriter(_StreamWriterBase, _ds.DataSourceStreamWriter):
    def write(self, iterator: Iterator[Any]) -> TablelogCommitMessage:
        return write_partition(self.plan, row_chunks(self.plan, iterator))


def batch_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> Any:
    plan = plan_write(options, schema, overwrite, streaming=False)
    return BatchArrowWriter(plan) if ARROW_BATCH_WRITES else BatchRowWriter(plan)


def stream_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> Any:
    plan = plan_write(options, schema, overwrite, streaming=True)
    return StreamArrowWriter(plan) if ARROW_STREAM_WRITES else StreamRowWriter(plan)
