"""What every part of one reader shares: its table and options, the log partitions it
reads, its log connection and decoder, and fetching records a snapshot committed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.errors import LogDataLostError, PositionOutOfRangeError, TopicError
from tablelog.reading.decode import Change, Decoder
from tablelog.reading.gc_pause import batch_guard
from tablelog.records import FetchResult, ValuesResult

if TYPE_CHECKING:
    from tablelog.options import TableOptions
    from tablelog.registry import LogClient
    from tablelog.table_view import TableView as Table


class ReadContext:
    """One reader's table, options, partitions, log connection and decoder."""

    def __init__(
        self, table: Table, options: TableOptions, partitions: frozenset[int] | None, changes_from_table: bool = True,
    ) -> None:
        self.table = table
        #: Whether committed changes the log lost are read from the table files instead.
        self.changes_from_table = changes_from_table
        self.options = options
        #: The log partitions read (None: all of them).
        self.partitions = partitions
        self.decoder = Decoder(table, options)
        #: What the building of each batch is wrapped in (``log.reader.pause-gc``).
        self.building_batch = batch_guard(options.log_reader_pause_gc)
        self._log: LogClient | None = None

    @property
    def log(self) -> LogClient:
        if self._log is None:
            self._log = self.table.open_log()
        return self._log

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def reads(self, partition: int) -> bool:
        return self.partitions is None or partition in self.partitions

    def to_arrow(self, changes: list[Change]) -> pa.Table:
        """Changes as an Arrow table: a ``_kind`` column, then the table's columns."""
        return self.table.codec.rows_to_arrow([c.kind for c in changes], [c.row for c in changes])

    def fetch_committed(
        self, partition: int, pos: int, hi: int, max_records: int, values: bool
    ) -> FetchResult | ValuesResult:
        """Records (or only values) at ``pos`` or later of committed records up to ``hi``;
        waits for them and reports them lost if they never come."""
        waited_until = time.monotonic() + self.options.log_fetch_timeout_ms / 1000
        while True:
            try:
                result: FetchResult | ValuesResult
                if values:
                    result = self.log.fetch_values(partition, pos, max_records, 0.2)
                    if result.values:
                        return result
                else:
                    result = self.log.fetch(partition, pos, max_records, 0.2)
                    if result.records:
                        return result
                end = self.log.end_positions([partition]).get(partition, 0)
            except PositionOutOfRangeError as err:
                raise self.lost(partition, pos, hi, f"the log no longer holds them ({err})") from err
            except TopicError as err:
                # The topic or partition is gone (deleted, or a broker that lost its storage).
                raise self.lost(partition, pos, hi, f"the log no longer has them ({err})") from err
            if end <= pos:
                raise self.lost(partition, pos, hi, f"the log ends at position {end}")
            if time.monotonic() >= waited_until:
                raise self.lost(
                    partition, pos, hi,
                    f"the log did not return them within log.fetch-timeout-ms={self.options.log_fetch_timeout_ms}",
                )

    def lost(self, partition: int, first: int, last: int, detail: str) -> LogDataLostError:
        return LogDataLostError(
            table=self.table.identifier, topic=self.table.topic, partition=partition,
            first=first, last=last, detail=detail,
        )

