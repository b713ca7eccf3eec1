"""The source: ``spark.readStream.format("tablelog")`` and ``spark.read.format("tablelog")``.

Rows come out as ``_kind`` (``+I``, ``-U``, ``+U``, ``-D``) followed by the table's
columns. Offsets are reader positions, as JSON (:mod:`tablelog.spark.offsets`):

- **transactional** (default): offsets are snapshot ids. A micro-batch ``(start, end]``
  returns the committed changes of snapshots ``start+1 .. end``, each once, one Spark
  partition per log partition (so per-key order is kept inside a partition). Records of
  failed or replayed attempts are never returned.
- **eventual**: offsets are log positions per partition; a micro-batch returns every
  record between them (at least once: add :func:`tablelog.spark.normalize`).
- ``scan.mode = latest-full`` (default): the first micro-batch holds the rows of the
  latest snapshot as ``+I`` (one Spark partition per log partition); later micro-batches the
  changes after it (transactional: from the next snapshot; eventual: from that
  snapshot's log end positions). No gap, no overlap.

Batch reads return the rows of the latest snapshot (``_kind = '+I'``).

Each Spark partition is one of the small frozen classes below (pickled to the
executors): a log partition's rows (:class:`FullScanPartition`), its committed changes
(:class:`CommittedChanges`) or records (:class:`LogRecords`), or nothing
(:class:`NoRows`, the batch read of a table without a snapshot).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from tablelog.commit.history import snapshot_commits
from tablelog.commit.log_commit import is_foreign
from tablelog.errors import OptionError, TablelogError
from tablelog.formats.codec import KIND_COLUMN
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition, check_not_past_ends, log_name
from tablelog.reading.log_eras import LogEras
from tablelog.reading.reader import selected_columns
from tablelog.reading.table_partitions import table_partitions
from tablelog.records import RowKind
from tablelog.spark import offsets
from tablelog.spark.options import SourceOptions
from tablelog.table import Table, internals
from tablelog.tables import open_table
from tablelog.writing.routing import log_modulus

_BATCH_ROWS = 10_000


def output_arrow_schema(table: Table, schema_id: int, columns: Sequence[str] | None = None) -> pa.Schema:
    """``_kind``, then the columns of schema ``schema_id`` (only ``columns``, when given:
    the names :func:`selected_columns` returns)."""
    fields = [f for f in internals(table).files.schema_version(schema_id).schema if columns is None or f.name in columns]
    return pa.schema([pa.field(KIND_COLUMN, pa.string(), nullable=False), *fields])


def _batches(data: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    shaped = pa.Table.from_arrays(data.columns, schema=schema)
    yield from shaped.to_batches(max_chunksize=_BATCH_ROWS)


def read_full(
    table: Table, snapshot: int, partition: int, schema_id: int, columns: Sequence[str] | None = None,
    only: Sequence[Mapping[str, Any]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``snapshot`` in log ``partition`` (of the table partitions ``only``), as ``+I``."""
    files = internals(table).files
    typed = None if only is None else table_partitions(table.identifier, files.partition_keys, files.schema, only)
    rows = internals(table).log_partition_rows(snapshot, [partition], schema_id, typed)
    if columns is not None:
        rows = rows.select([name for name in rows.column_names if name in columns])
    kinds = pa.array([RowKind.INSERT.value] * rows.num_rows, pa.string())
    yield from _batches(rows.add_column(0, KIND_COLUMN, kinds), output_arrow_schema(table, schema_id, columns))


def read_committed(
    table: Table, partition: int, start: int, end: int, schema_id: int, columns: Sequence[str] | None = None,
    only: Sequence[Mapping[str, Any]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The committed changes of snapshots ``start+1 .. end`` in log partition ``partition``
    (of the table partitions ``only``)."""
    position = ReaderPosition(Consistency.TRANSACTIONAL, snapshot=start)
    schema = output_arrow_schema(table, schema_id, columns)
    with table.reader(position=position, partitions=[partition], table_partitions=only, until_snapshot=end,
                      schema_id=schema_id, columns=columns) as reader:
        stalled_since = time.monotonic()
        while reader.position.snapshot < end:
            changes = reader.poll_arrow(max_records=_BATCH_ROWS, timeout_s=0.5)
            if changes.num_rows:
                stalled_since = time.monotonic()
                yield from _batches(changes, schema)
            elif time.monotonic() - stalled_since > reader.options.log_fetch_timeout_ms / 1000:
                raise TablelogError(
                    f"table {table.identifier!r}: snapshot {reader.position.snapshot + 1} could not be "
                    f"read within log.fetch-timeout-ms={reader.options.log_fetch_timeout_ms}"
                )


def read_log(
    table: Table, partition: int, start: int, end: int, schema_id: int, columns: Sequence[str] | None = None,
    snapshots: tuple[int, int] | None = None, only: Sequence[Mapping[str, Any]] | None = None,
    log: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """Every record of log partition ``partition`` in ``[start, end)`` (eventual: at least once),
    as Arrow: an ``arrow`` log's batches as they are, no Python row. ``snapshots``: the
    changes other writers committed in the partition in snapshots ``first+1 .. last``
    too, in their place among the records (:mod:`tablelog.reading.foreign`); of the table
    partitions ``only`` (None: all). ``log``: the log the driver planned the span in
    (``<system>:<topic>``): a table whose log moved since refuses it."""
    first, last = snapshots if snapshots is not None else (0, None)
    position = ReaderPosition(Consistency.EVENTUAL, snapshot=first, offsets={partition: start},
                              table=table.table_id, topic=log)
    schema = output_arrow_schema(table, schema_id, columns)
    with table.reader(position=position, partitions=[partition], table_partitions=only, schema_id=schema_id,
                      until_positions={partition: end}, until_snapshot=last, columns=columns) as reader:
        stalled_since, reached = time.monotonic(), start
        while (now_at := reader.position.offsets.get(partition, start)) < end or (
            last is not None and reader.position.snapshot < last
        ):
            if now_at != reached:  # records of other tables on the topic move it too
                stalled_since, reached = time.monotonic(), now_at
            changes = reader.poll_arrow(max_records=_BATCH_ROWS, timeout_s=0.5)
            if changes.num_rows:
                yield from _batches(changes, schema)
            elif time.monotonic() - stalled_since > reader.options.log_fetch_timeout_ms / 1000:
                raise TablelogError(
                    f"table {table.identifier!r}: log partition {partition} returned nothing between "
                    f"positions {reader.position.offsets.get(partition)} and {end} within "
                    f"log.fetch-timeout-ms={reader.options.log_fetch_timeout_ms}"
                )


@dataclass(frozen=True)
class FullScanPartition(InputPartition):
    """The rows of ``snapshot`` in log ``partition``, as ``+I``."""

    snapshot: int
    partition: int

    def read(self, table: Table, schema_id: int, columns: Sequence[str] | None = None,
             only: Sequence[Mapping[str, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        return read_full(table, self.snapshot, self.partition, schema_id, columns, only)


def full_scan(table: Table, snapshot: int) -> list[InputPartition]:
    """A full scan of ``snapshot``: one task per log partition holding rows (fixed
    buckets: per bucket, which is its partition)."""
    files = internals(table).files
    return [FullScanPartition(snapshot, p) for p in range(log_modulus(files, table.log_partitions))]


@dataclass(frozen=True)
class _LogPartitionSpan(InputPartition):
    """A span of one log partition; ``start`` and ``end`` are snapshot ids or log positions."""

    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class CommittedChanges(_LogPartitionSpan):
    """The committed changes of snapshots ``start+1 .. end`` in log partition ``partition``."""

    def read(self, table: Table, schema_id: int, columns: Sequence[str] | None = None,
             only: Sequence[Mapping[str, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        return read_committed(table, self.partition, self.start, self.end, schema_id, columns, only)


@dataclass(frozen=True)
class LogRecords(_LogPartitionSpan):
    """Every record of log partition ``partition`` in ``[start, end)`` of log ``log``
    (``<system>:<topic>``: :func:`tablelog.positions.log_name`), and the partition's
    changes of other writers' snapshots ``snapshots[0]+1 .. snapshots[1]`` (None: none)."""

    snapshots: tuple[int, int] | None = None
    log: str | None = None

    def read(self, table: Table, schema_id: int, columns: Sequence[str] | None = None,
             only: Sequence[Mapping[str, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        return read_log(table, self.partition, self.start, self.end, schema_id, columns, self.snapshots, only,
                        self.log)


@dataclass(frozen=True)
class NoRows(InputPartition):
    """The batch read of a table without a snapshot (Spark wants one partition at least)."""

    def __init__(self) -> None:  # no value: InputPartition's constructor takes one
        pass

    def read(self, table: Table, schema_id: int, columns: Sequence[str] | None = None,
             only: Sequence[Mapping[str, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        return iter(())


SourcePartition = FullScanPartition | CommittedChanges | LogRecords | NoRows


def read_partition(options: SourceOptions, partition: SourcePartition, schema_id: int) -> Iterator[pa.RecordBatch]:
    """A partition's rows in schema ``schema_id``: the columns the query was planned with."""
    table = open_table(options.warehouse, options.table, options.runtime)
    columns = selected_columns(internals(table), options.columns, of_some_partitions=options.table_partitions is not None)
    yield from partition.read(table, schema_id, columns, options.table_partitions)


class _TableHolder:
    """Opens the table on the driver once; never pickled to the executors. A query returns
    the columns of the table's schema when it starts (``schema_id``): Spark fixes a
    source's columns then; changes written under other schemas are mapped into it, and a
    query started after an alter returns the new columns."""

    options: SourceOptions
    schema_id: int = 0
    _table: Table | None = None

    @property
    def table(self) -> Table:
        if self._table is None:
            self._table = open_table(self.options.warehouse, self.options.table, self.options.runtime)
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_table"}


class TablelogStreamReader(_TableHolder, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: ReaderPosition | None = None
        self._log_eras: LogEras | None = None
        table = self.table
        self.schema_id = table.schema_id
        if not table.options.log_enabled:
            raise OptionError(
                f"table {table.identifier!r} has log.system=none: streaming reads follow the log; "
                "create the table with a log.system, or read it with spark.read"
            )
        with table.reader(options=options.read_options, consumer_id=options.consumer_id, schema_id=self.schema_id,
                          columns=options.columns, table_partitions=options.table_partitions) as reader:
            # checks the read options now
            self.consistency = reader.consistency

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's names)
        # With a consumer-id: where that consumer stopped (or scan.mode for a new one),
        # registered now so that expiry keeps what the query reads.
        with self.table.reader(options=self.options.read_options, consumer_id=self.options.consumer_id,
                               schema_id=self.schema_id) as reader:
            return offsets.to_offset(reader.position)

    def _available(self) -> ReaderPosition:
        if self._target is not None:
            return self._target
        table = self.table
        latest = internals(table).files.latest_snapshot()
        snapshot = latest.id if latest else 0
        if self.consistency is Consistency.TRANSACTIONAL:
            return ReaderPosition(self.consistency, snapshot)
        partitions = list(range(table.log_partitions))
        with internals(table).open_log() as log:
            ends = log.end_positions(partitions)
        return ReaderPosition(self.consistency, snapshot, offsets={p: ends.get(p, 0) for p in partitions})

    def _offset(self, value: dict[str, Any]) -> ReaderPosition:
        return offsets.checked(self.table, offsets.parse_offset(value))

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:  # noqa: N802
        begin = self._offset(start)
        if begin.full_pending:  # the first batch: the full scan alone
            return offsets.to_offset(attrs.evolve(begin, full_pending=False))
        available = self._available()
        if begin.consistency is Consistency.TRANSACTIONAL:
            # A batch ends before the snapshot at which the table's log moved (log_eras).
            end = self._eras.last_before_change(begin, max(begin.snapshot, available.snapshot))
            return offsets.to_offset(attrs.evolve(begin, snapshot=end))
        if available.offsets == {p: begin.offsets.get(p, 0) for p in available.offsets}:
            self._eras.check_eventual(begin)  # nothing new: has the table's log moved away?
        check_not_past_ends(internals(self.table), begin.offsets, available.offsets, offsets.WHAT)
        ends = {p: max(pos, begin.offsets.get(p, 0)) for p, pos in available.offsets.items()}
        # The snapshots too: other writers' changes of those in between come from the files.
        return offsets.to_offset(attrs.evolve(
            begin, snapshot=max(begin.snapshot, available.snapshot), offsets={**begin.offsets, **ends}))

    @property
    def _eras(self) -> LogEras:
        if self._log_eras is None:
            self._log_eras = LogEras(internals(self.table))
        return self._log_eras

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._available()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, stop = self._offset(start), self._offset(end)
        result: list[InputPartition] = []
        table = self.table
        if begin.full_pending and not stop.full_pending:
            result += full_scan(table, begin.snapshot)
        if begin.consistency is Consistency.TRANSACTIONAL:
            # Snapshots that are gone already are left for the reader to report: every
            # partition gets a task.
            expired = (internals(table).files.earliest_snapshot_id() or 1) > begin.snapshot + 1
            touched: set[int] = set(range(table.log_partitions)) if expired else set()
            log = internals(table).log_name
            for snapshot, record in snapshot_commits(internals(table).files, after=begin.snapshot, upto=stop.snapshot):
                if record is not None and record.is_of(*log):
                    touched.update(record.ranges_by_partition())
                elif record is not None or is_foreign(snapshot.properties, snapshot.commit_kind):
                    touched.update(range(table.log_partitions))  # read from the files, any partition
            result += [CommittedChanges(p, begin.snapshot, stop.snapshot) for p in sorted(touched)]
        else:
            foreign = stop.snapshot > begin.snapshot and any(
                record is None and is_foreign(snapshot.properties, snapshot.commit_kind)
                for snapshot, record in snapshot_commits(internals(table).files, after=begin.snapshot,
                                                         upto=stop.snapshot)
            )
            log_name_now = log_name(internals(table))
            for p, pos in sorted(stop.offsets.items()):
                if pos > begin.offsets.get(p, 0) or foreign:
                    result.append(LogRecords(p, begin.offsets.get(p, 0), pos,
                                             (begin.snapshot, stop.snapshot) if foreign else None, log_name_now))
        return result

    def read(self, partition: SourcePartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        return read_partition(self.options, partition, self.schema_id)

    def commit(self, end: dict[str, Any]) -> None:
        # Spark has committed the batch up to ``end``: the consumer moves there.
        if self.options.consumer_id is not None:
            position = offsets.parse_offset(end)
            with self.table.reader(position, options=self.options.read_options, consumer_id=self.options.consumer_id):
                pass  # closing the reader records the consumer's next snapshot

    def stop(self) -> None:
        self._table = None


class TablelogBatchReader(_TableHolder, DataSourceReader):
    """The rows of the latest snapshot (taken when the query is planned)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.schema_id = self.table.schema_id
        if options.table_partitions is not None:  # a wrong column or value fails now, on the driver
            files = internals(self.table).files
            table_partitions(self.table.identifier, files.partition_keys, files.schema, options.table_partitions)

    def partitions(self) -> list[InputPartition]:
        latest = internals(self.table).files.latest_snapshot()
        if latest is None:
            return [NoRows()]
        return full_scan(self.table, latest.id)

    def read(self, partition: SourcePartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        return read_partition(self.options, partition, self.schema_id)
