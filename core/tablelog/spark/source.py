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
  latest snapshot as ``+I`` (one Spark partition per split of a bucket, of about
  ``source.split.target-size`` bytes of files); later micro-batches the
  changes after it (transactional: from the next snapshot; eventual: from that
  snapshot's log end positions). No gap, no overlap.

Batch reads return the rows of the latest snapshot (``_kind = '+I'``).

Each Spark partition is one of the small frozen classes of
:mod:`tablelog.spark.source_tasks` (pickled to the executors), which also reads them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from tablelog.commit.history import snapshot_commits
from tablelog.commit.log_commit import is_foreign
from tablelog.errors import OptionError
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition, check_not_past_ends, log_name
from tablelog.reading.log_eras import LogEras
from tablelog.reading.table_partitions import table_partitions
from tablelog.spark import offsets
from tablelog.spark.options import SourceOptions
from tablelog.spark.pushdown import partition_specs
from tablelog.spark.source_tasks import (
    CommittedChanges,
    LogRecords,
    NoRows,
    SourcePartition,
    full_scan,
    read_partition,
)
from tablelog.table import Table, internals
from tablelog.tables import open_table


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
            result += full_scan(table, begin.snapshot, self.options.table_partitions)
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

    def pushFilters(self, filters: list[Any]) -> list[Any]:  # noqa: N802 (Spark's name)
        """Equality filters on partition columns limit the read to those table partitions
        (:mod:`tablelog.spark.pushdown`); Spark evaluates the others, which are returned.
        With the ``partitions`` option given, Spark evaluates every filter."""
        keys = internals(self.table).files.partition_keys
        if not keys or self.options.table_partitions is not None:
            return list(filters)
        specs, rest = partition_specs(filters, keys)
        if specs is not None:
            self.options = attrs.evolve(self.options, table_partitions=tuple(specs))
        return rest

    def partitions(self) -> list[InputPartition]:
        latest = internals(self.table).files.latest_snapshot()
        if latest is None:
            return [NoRows()]
        return full_scan(self.table, latest.id, self.options.table_partitions)

    def read(self, partition: SourcePartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        return read_partition(self.options, partition, self.schema_id)
