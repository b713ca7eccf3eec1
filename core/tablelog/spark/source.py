"""The source: ``spark.readStream.format("tablelog")`` and ``spark.read.format("tablelog")``.

Rows come out as ``_kind`` (``+I``, ``-U``, ``+U``, ``-D``) followed by the table's
columns. Offsets are JSON (:class:`Offset`):

- **transactional** (default): offsets are snapshot ids. A micro-batch ``(start, end]``
  returns the committed changes of snapshots ``start+1 .. end``, each once, one Spark
  partition per log partition (so per-key order is kept inside a partition). Records of
  failed or replayed attempts are never returned.
- **eventual**: offsets are log positions per partition; a micro-batch returns every
  record between them (at least once: add :func:`tablelog.spark.normalize`).
- ``scan.mode = latest-full`` (default): the first micro-batch holds the rows of the
  latest snapshot as ``+I`` (one Spark partition per bucket); later micro-batches the
  changes after it (transactional: from the next snapshot; eventual: from that
  snapshot's log end positions). No gap, no overlap.

Batch reads return the rows of the latest snapshot (``_kind = '+I'``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from tablelog.errors import OptionError, TablelogError
from tablelog.formats import KIND_COLUMN
from tablelog.options import Consistency
from tablelog.positions import (
    ReaderPosition,
    check_identity,
    check_not_past_ends,
    check_partitions,
    check_snapshot,
    log_name,
)
from tablelog.protocol import LogCommitRecord
from tablelog.records import RowKind
from tablelog.spark.options import SourceOptions
from tablelog.table import Table, open_table

_BATCH_ROWS = 10_000


@attrs.frozen
class Offset:
    """A source offset: ``{"v": 1, "table": ID, "topic": ..., "consistency": ..., "snapshot": N,
    "full": bool, "positions": {...}}``.

    ``snapshot``: transactional: every change committed up to it is before this offset;
    with ``full`` the rows of that snapshot are still to come (the hybrid read's first
    batch). ``positions``: eventual: the next log position per partition (strings, as
    positions may exceed 64 bits). ``table`` and ``topic`` name whose offset it is
    (see :mod:`tablelog.positions`): a checkpoint of one table is refused by another.
    Offsets checkpointed before they named their table (``None``) are accepted.
    """

    consistency: Consistency
    snapshot: int
    full: bool = False
    positions: Mapping[int, int] = attrs.field(factory=dict)
    table: str | None = None
    topic: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": 1,
            **({"table": self.table} if self.table is not None else {}),
            **({"topic": self.topic} if self.topic is not None else {}),
            "consistency": self.consistency.value,
            "snapshot": self.snapshot,
            "full": self.full,
            "positions": {str(p): str(pos) for p, pos in sorted(self.positions.items())},
        }

    @classmethod
    def parse(cls, value: Mapping[str, Any]) -> Offset:
        try:
            return cls(
                Consistency(value["consistency"]),
                int(value["snapshot"]),
                bool(value.get("full", False)),
                {int(p): int(pos) for p, pos in dict(value.get("positions", {})).items()},
                None if value.get("table") is None else str(value["table"]),
                None if value.get("topic") is None else str(value["topic"]),
            )
        except (KeyError, ValueError, TypeError) as err:
            raise OptionError(f"invalid tablelog source offset {dict(value)!r}: {err}") from None

    def checked(self, table: Table) -> Offset:
        """This offset, refused when it belongs to another table or topic or is ahead of the
        table (see :mod:`tablelog.positions`); it names the table from then on."""
        what = "Spark checkpoint offset"
        check_identity(table, self.table, self.topic, what)
        check_snapshot(table, self.snapshot, what)
        check_partitions(table, self.positions, what)
        return attrs.evolve(self, table=table.table_id, topic=log_name(table))


def output_arrow_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(KIND_COLUMN, pa.string(), nullable=False), *table.schema])


def _batches(data: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    shaped = pa.Table.from_arrays(data.columns, schema=schema)
    yield from shaped.to_batches(max_chunksize=_BATCH_ROWS)


def read_full(table: Table, snapshot: int, bucket: int) -> Iterator[pa.RecordBatch]:
    """The rows of ``snapshot`` in ``bucket``, as ``+I``."""
    rows = table.rows(snapshot, [bucket])
    kinds = pa.array([RowKind.INSERT.value] * rows.num_rows, pa.string())
    yield from _batches(rows.add_column(0, KIND_COLUMN, kinds), output_arrow_schema(table))


def read_committed(table: Table, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """The committed changes of snapshots ``start+1 .. end`` in log partition ``partition``."""
    position = ReaderPosition(Consistency.TRANSACTIONAL, snapshot=start)
    schema = output_arrow_schema(table)
    with table.reader(position=position, partitions=[partition], until_snapshot=end) as reader:
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


def read_log(table: Table, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """Every record of log partition ``partition`` in ``[start, end)`` (eventual: at least once)."""
    position = ReaderPosition(Consistency.EVENTUAL, offsets={partition: start})
    schema = output_arrow_schema(table)
    with table.reader(position=position, partitions=[partition]) as reader:
        stalled_since = time.monotonic()
        while reader.position.offsets.get(partition, start) < end:
            changes = reader.poll(max_records=_BATCH_ROWS, timeout_s=0.5)
            inside = [c for c in changes if c.position is not None and c.position < end]
            if inside:
                yield from _batches(reader.to_arrow(inside), schema)
            if len(inside) < len(changes):
                return
            if changes:
                stalled_since = time.monotonic()
            elif time.monotonic() - stalled_since > reader.options.log_fetch_timeout_ms / 1000:
                raise TablelogError(
                    f"table {table.identifier!r}: log partition {partition} returned nothing between "
                    f"positions {reader.position.offsets.get(partition)} and {end} within "
                    f"log.fetch-timeout-ms={reader.options.log_fetch_timeout_ms}"
                )


def read_partition(options: SourceOptions, value: tuple[Any, ...]) -> Iterator[pa.RecordBatch]:
    table = open_table(options.warehouse, options.table, options.runtime_options)
    kind = value[0]
    if kind == "full":
        yield from read_full(table, value[1], value[2])
    elif kind == "committed":
        yield from read_committed(table, value[1], value[2], value[3])
    elif kind == "log":
        yield from read_log(table, value[1], value[2], value[3])


class _TableHolder:
    """Opens the table on the driver once; never pickled to the executors."""

    options: SourceOptions
    _table: Table | None = None

    @property
    def table(self) -> Table:
        if self._table is None:
            self._table = open_table(self.options.warehouse, self.options.table, self.options.runtime_options)
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_table"}


class TablelogStreamReader(_TableHolder, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: Offset | None = None
        table = self.table
        if not table.options.log_enabled:
            raise OptionError(
                f"table {table.identifier!r} has log.system=none: streaming reads follow the log; "
                "create the table with a log.system, or read it with spark.read"
            )
        with table.reader(**options.read_options) as reader:  # checks the read options now
            self.consistency = reader.consistency

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's names)
        with self.table.reader(**self.options.read_options) as reader:
            position = reader.position
        return Offset(
            position.consistency, position.snapshot, position.full_pending, position.offsets,
            position.table, position.topic,
        ).to_dict()

    def _available(self) -> Offset:
        if self._target is not None:
            return self._target
        table = self.table
        latest = table.store.latest_snapshot()
        snapshot = latest.id if latest else 0
        if self.consistency is Consistency.TRANSACTIONAL:
            return Offset(self.consistency, snapshot)
        partitions = list(range(table.log_partitions))
        with table.open_log() as log:
            ends = log.end_positions(partitions)
        return Offset(self.consistency, snapshot, positions={p: ends.get(p, 0) for p in partitions})

    def _offset(self, value: dict[str, Any]) -> Offset:
        return Offset.parse(value).checked(self.table)

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:  # noqa: N802
        begin = self._offset(start)
        if begin.full:
            return attrs.evolve(begin, full=False).to_dict()  # the first batch: the full scan alone
        available = self._available()
        if begin.consistency is Consistency.TRANSACTIONAL:
            return attrs.evolve(begin, snapshot=max(begin.snapshot, available.snapshot)).to_dict()
        check_not_past_ends(self.table, begin.positions, available.positions, "Spark checkpoint offset")
        positions = {p: max(pos, begin.positions.get(p, 0)) for p, pos in available.positions.items()}
        return attrs.evolve(begin, positions={**begin.positions, **positions}).to_dict()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._available()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, stop = self._offset(start), self._offset(end)
        result: list[InputPartition] = []
        table = self.table
        if begin.full and not stop.full:
            result += [InputPartition(("full", begin.snapshot, b)) for b in range(table.store.bucket)]
        if begin.consistency is Consistency.TRANSACTIONAL:
            touched: set[int] = set()
            for snapshot_id in range(begin.snapshot + 1, stop.snapshot + 1):
                snapshot = table.store.snapshot(snapshot_id)
                record = LogCommitRecord.from_properties(snapshot.properties) if snapshot else None
                if snapshot is None or record is not None:
                    # a snapshot we cannot see here is left for the reader to report
                    touched.update(range(table.log_partitions) if record is None else record.ranges_by_partition())
            result += [InputPartition(("committed", p, begin.snapshot, stop.snapshot)) for p in sorted(touched)]
        else:
            for p, pos in sorted(stop.positions.items()):
                if pos > begin.positions.get(p, 0):
                    result.append(InputPartition(("log", p, begin.positions.get(p, 0), pos)))
        return result

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition.value)

    def commit(self, end: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        self._table = None


class TablelogBatchReader(_TableHolder, DataSourceReader):
    """The rows of the latest snapshot (taken when the query is planned)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        latest = self.table.store.latest_snapshot()
        if latest is None:
            return [InputPartition(("empty",))]
        return [InputPartition(("full", latest.id, b)) for b in range(self.table.store.bucket)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition.value)
