"""What every part of one reader shares: its table and options, the log partitions it
reads, its schema, its log connection and decoder, and fetching records a snapshot committed.

**The reader's schema.** A reader returns every change in one schema, its own: the
table's latest when it starts, and after that the newest it meets, in a snapshot
(transactional) or in a record (each record says the schema it was written with).
Rows of older schemas are mapped into it by Paimon field id
(:class:`~tablelog.store.SchemaMapping`); a reader ``pinned`` to a schema (the Spark
source, whose columns are fixed when the query starts) never changes it and maps
newer rows into it as well.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.errors import (
    LogDataLostError,
    LogSystemError,
    MissingTopicError,
    PositionOutOfRangeError,
    TopicError,
)
from tablelog.formats import record_codec
from tablelog.formats.codec import RecordCodec
from tablelog.reading.decode import Change, Decoder
from tablelog.reading.gc_pause import batch_guard
from tablelog.reading.missing_topic import missing_topic_error, topic_is_missing
from tablelog.records import FetchResult, ValuesResult

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.options import TableOptions
    from tablelog.reading.table_partitions import PartitionFilter
    from tablelog.store import SchemaMapping
    from tablelog.table_view import TableView


class ReadContext:
    """One reader's table, options, partitions, log connection and decoder."""

    def __init__(
        self, table: TableView, options: TableOptions, partitions: frozenset[int] | None,
        changes_from_table: bool = True, schema_id: int | None = None, columns: frozenset[str] | None = None,
        table_partitions: PartitionFilter | None = None,
    ) -> None:
        """``schema_id``: pin the reader to this schema (default: the table's latest, then
        the newest the reader meets). ``columns``: the only columns a reader returns (its
        key columns among them), by name in the reader's schema; None: all."""
        self.table = table
        #: Whether committed changes the log lost are read from the table files instead.
        self.changes_from_table = changes_from_table
        #: Whether it did so (it is logged once).
        self.read_from_table = False
        self.options = options
        self.pinned = schema_id is not None
        self.columns = columns
        #: The most rows one record held so far (0: none read yet) where that varies, for
        #: :meth:`records_for`; else 1.
        self.rows_per_record = 0 if table.codec.rows_per_record_vary else 1
        #: The id of the reader's schema; :attr:`codec` decodes into it.
        self.schema_id = table.schema_id if schema_id is None else schema_id
        self.codec = table.codec
        self._mappings: dict[int, SchemaMapping] = {}  # by source schema id, into the reader's
        if schema_id is None:
            self.upgrade(table.files.latest_schema_id())
        elif schema_id != table.schema_id:
            self.codec = self._codec_of(schema_id)
        self.decoder = Decoder(table, options, self)
        #: The log partitions read (None: all of them).
        self.partitions = partitions
        #: The table partitions read (None: all of them).
        self.table_partitions = table_partitions
        #: What the building of each batch is wrapped in (``log.reader.pause-gc``).
        self.building_batch = batch_guard(options.log_reader_pause_gc)
        self._log: LogClient | None = None
        #: Whether the snapshot being read comes from the log's projection stream
        #: (:mod:`tablelog.formats.projection`); set by the transactional read.
        self.projecting = False
        self._projection_log: LogClient | None = None
        self._layout: tuple[RecordCodec, pa.Schema] | None = None

    @property
    def layout(self) -> pa.Schema:
        """What the reader returns now: ``_kind``, then the columns of its schema (only
        :attr:`columns`, when given). Made again only when the reader's schema moves:
        building it costs more than checking a record against it."""
        if self._layout is None or self._layout[0] is not self.codec:
            self._layout = (self.codec, self.codec.layout(self.columns))
        return self._layout[1]

    def _codec_of(self, schema_id: int) -> RecordCodec:
        table = self.table
        schema = table.files.schema_version(schema_id).schema
        return record_codec(schema, table.primary_key, table.options.log_format, table.identifier, schema_id)

    def upgrade(self, schema_id: int) -> bool:
        """Move the reader to schema ``schema_id`` if it is newer than its own (and the
        reader is not pinned); True if it moved."""
        if schema_id <= self.schema_id or self.pinned:
            return False
        self.codec = self.table.codec if schema_id == self.table.schema_id else self._codec_of(schema_id)
        self.schema_id = schema_id
        self._mappings = {}
        return True

    def mapping(self, source_id: int) -> SchemaMapping:
        """From rows of schema ``source_id`` to the reader's schema."""
        found = self._mappings.get(source_id)
        if found is None:
            found = self._mappings[source_id] = self.table.files.mapping(source_id, self.schema_id)
        return found

    def rows(self, snapshot_id: int, partitions: Collection[int] | None) -> pa.Table:
        """The table's rows at ``snapshot_id`` in log ``partitions`` (None: all), in the
        reader's schema (moved first to the snapshot's, when that is newer)."""
        snapshot = self.table.files.snapshot(snapshot_id)
        if snapshot is not None:
            self.upgrade(snapshot.schema_id)
        specs = None if self.table_partitions is None else self.table_partitions.specs
        return self.table.log_partition_rows(snapshot_id, partitions, self.schema_id, table_partitions=specs)

    @property
    def log(self) -> LogClient:
        if self._log is None:
            self._log = self.table.open_log()
        return self._log

    @property
    def committed_log(self) -> LogClient:
        """Where the snapshot being read is read from: the table topic, or the projection stream."""
        if not self.projecting:
            return self.log
        if self._projection_log is None:
            self._projection_log = self.table.open_projection_log()
        return self._projection_log

    def close(self) -> None:
        try:
            if self._log is not None:
                self._log.close()
                self._log = None
        finally:
            if self._projection_log is not None:
                self._projection_log.close()
                self._projection_log = None

    def records_for(self, rows: int) -> int:
        """How many records a fetch may ask for when ``rows`` more rows are wanted. Where
        a record holds many (``arrow``) it is returned whole: one at first, then as many as
        the rows wanted fill at the most rows a record held so far, so that a poll exceeds
        its ``max_records`` by less than one record's rows (while no record is larger)."""
        return max(1, rows // self.rows_per_record) if self.rows_per_record else 1

    def reads(self, partition: int) -> bool:
        return self.partitions is None or partition in self.partitions

    def to_arrow(self, changes: list[Change]) -> pa.Table:
        """Changes as an Arrow table: a ``_kind`` column, then the table's columns."""
        return self.codec.rows_to_arrow([c.kind for c in changes], [c.row for c in changes])

    def fetch_committed(
        self, partition: int, pos: int, hi: int, max_records: int, values: bool
    ) -> FetchResult | ValuesResult:
        """Records (or only values) at ``pos`` or later of committed records up to ``hi``;
        waits for them and reports them lost if they never come."""
        waited_until = time.monotonic() + self.options.log_fetch_timeout_ms / 1000
        while True:
            try:
                result: FetchResult | ValuesResult
                log = self.committed_log
                if values:
                    result = log.fetch_values(partition, pos, max_records, 0.2)
                    if result.values:
                        return result
                else:
                    result = log.fetch(partition, pos, max_records, 0.2)
                    if result.records:
                        return result
                end = log.end_positions([partition]).get(partition, 0)
            except PositionOutOfRangeError as err:
                self.check_topic_exists(err)
                raise self.lost(partition, pos, hi, f"the log no longer holds them ({err})") from err
            except TopicError as err:
                self.check_topic_exists(err)
                # The table topic is there: a partition of it, or the projection stream, is gone
                # (deleted, or a broker that lost its storage).
                raise self.lost(partition, pos, hi, f"the log no longer has them ({err})") from err
            if end <= pos:
                raise self.lost(partition, pos, hi, f"the log ends at position {end}")
            if time.monotonic() >= waited_until:
                raise self.lost(
                    partition, pos, hi,
                    f"the log did not return them within log.fetch-timeout-ms={self.options.log_fetch_timeout_ms}",
                )

    def check_topic_exists(self, err: LogSystemError) -> None:
        """Raise :class:`~tablelog.errors.MissingTopicError` when ``err`` (a missing topic or
        partition, a position the log does not have) came from reading a table whose topic
        does not exist (:mod:`tablelog.reading.missing_topic`): before a reader takes
        what the log lost from the table files, and before such an error leaves it."""
        if isinstance(err, MissingTopicError):
            raise err
        if topic_is_missing(self.log):
            raise missing_topic_error(self.table, err) from err

    @contextlib.contextmanager
    def topic_checked(self) -> Iterator[None]:
        """A ``TopicError`` or ``PositionOutOfRangeError`` raised inside becomes a
        ``MissingTopicError`` when the table topic does not exist."""
        try:
            yield
        except (TopicError, PositionOutOfRangeError) as err:
            self.check_topic_exists(err)
            raise

    def lost(self, partition: int, first: int, last: int, detail: str) -> LogDataLostError:
        topic = self.table.projection_log_config().topic if self.projecting else self.table.topic
        return LogDataLostError(
            table=self.table.identifier, topic=topic, partition=partition,
            first=first, last=last, detail=detail,
        )

