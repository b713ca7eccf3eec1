"""What each task of a ``tablelog`` read does: the Spark partitions of a read (small
frozen classes, pickled to the executors) and how a task reads one: a split of a full scan
of a snapshot (:class:`FullScanSplit`, part of a bucket), a log partition's committed changes
(:class:`CommittedChanges`) or records (:class:`LogRecords`), or nothing (:class:`NoRows`,
the batch read of a table without a snapshot). The planning is :mod:`tablelog.spark.source`'s."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from tablelog.errors import TablelogError
from tablelog.formats.codec import KIND_COLUMN
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition
from tablelog.reading.reader import selected_columns
from tablelog.reading.table_partitions import table_partitions
from tablelog.records import RowKind
from tablelog.spark.options import SourceOptions
from tablelog.store import ScanSplit
from tablelog.table import Table, internals
from tablelog.tables import open_table

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
    table: Table, split: ScanSplit, schema_id: int, columns: Sequence[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``split`` (of a full scan: :func:`full_scan`), as ``+I``, batch by batch."""
    schema = output_arrow_schema(table, schema_id, columns)
    for rows in internals(table).files.read_split(split, schema_id):
        if columns is not None:
            rows = rows.select([name for name in rows.column_names if name in columns])
        kinds = pa.array([RowKind.INSERT.value] * rows.num_rows, pa.string())
        yield from _batches(rows.add_column(0, KIND_COLUMN, kinds), schema)


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
class FullScanSplit(InputPartition):
    """One split of a full scan (part of a bucket's rows at a snapshot), as ``+I``."""

    split: ScanSplit

    def read(self, table: Table, schema_id: int, columns: Sequence[str] | None = None,
             only: Sequence[Mapping[str, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        return read_full(table, self.split, schema_id, columns)  # planned in the partitions ``only``


def full_scan(table: Table, snapshot: int, only: Sequence[Mapping[str, Any]] | None = None) -> list[InputPartition]:
    """A full scan of ``snapshot`` (of the table partitions ``only``; None: all): a task per
    split of each bucket, of about ``source.split.target-size`` bytes of data files each
    (:meth:`~tablelog.store.TableFiles.scan_splits`). A full scan returns ``+I`` rows alone,
    in no order a reader relies on (it is its micro-batch's only part), so its tasks
    follow the files, not the log partitions."""
    files = internals(table).files
    typed = None if only is None else table_partitions(table.identifier, files.partition_keys, files.schema, only)
    splits = files.scan_splits(snapshot, table.options.source_split_target_size, typed)
    return [FullScanSplit(split) for split in splits] or [NoRows()]


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


SourcePartition = FullScanSplit | CommittedChanges | LogRecords | NoRows


def read_partition(options: SourceOptions, partition: SourcePartition, schema_id: int) -> Iterator[pa.RecordBatch]:
    """A partition's rows in schema ``schema_id``: the columns the query was planned with."""
    table = open_table(options.warehouse, options.table, options.runtime)
    columns = selected_columns(internals(table), options.columns, of_some_partitions=options.table_partitions is not None)
    yield from partition.read(table, schema_id, columns, options.table_partitions)
