""":class:`ChangelogReader`: a table's changelog, read with the consistency the table
(or the reader) asks for; see :mod:`tablelog.reading` for the semantics.

The reader holds the options, the position and the log connection, and hands each
poll to the part that reads: the full scan of a hybrid read first, then the
transactional or the eventual read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError
from tablelog.formats.codec import KIND_COLUMN
from tablelog.options import Consistency, ScanMode, TableOptions
from tablelog.positions import ReaderPosition
from tablelog.reading.consumer import ConsumerProgress
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.reading.eventual import EventualRead
from tablelog.reading.full_scan import FullScan
from tablelog.reading.start import check_ends, check_given_position, initial_position
from tablelog.reading.table_partitions import (
    PartitionFilter,
    check_log_partitions,
    partition_arguments,
)
from tablelog.reading.transactional import TransactionalRead

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.store import SchemaMapping
    from tablelog.table_view import TableView


class ChangelogReader:
    """Reads a table's changelog; see :mod:`tablelog.reading` for the semantics."""

    def __init__(
        self,
        table: TableView,
        position: ReaderPosition | str | Mapping[str, Any] | None = None,
        *,
        consistency: str | Consistency | None = None,
        scan_mode: str | ScanMode | None = None,
        timestamp_millis: int | None = None,
        consumer_id: str | None = None,
        columns: Sequence[str] | None = None,
        partitions: Iterable[int] | Iterable[Mapping[str, Any]] | None = None,
        table_partitions: Iterable[Mapping[str, Any]] | None = None,
        options: Mapping[str, Any] | None = None,
        until_snapshot: int | None = None,
        until_positions: Mapping[int, int] | None = None,
        schema_id: int | None = None,
        changes_from_table: bool = True,
        split_partitions: bool = False,
    ) -> None:
        """The keywords are :meth:`tablelog.Table.reader`'s, which documents them.

        ``split_partitions``: by default a transactional poll finishes a begun partition
        past ``max_records`` where the table files could not give exactly its rest should
        the log lose it (a primary-key table, several writes in the partition, an ``arrow``
        log), so that a position is never inside one; with True such a position's
        partition is read at least once if the log loses its rest."""
        self.table = table
        self.options = _read_options(table, options, consistency, scan_mode, timestamp_millis, consumer_id)
        only, self._table_partitions = partition_arguments(table, partitions, table_partitions)
        check_log_partitions(table, only)
        self._columns = selected_columns(table, columns, of_some_partitions=self._table_partitions is not None)
        self._context = ReadContext(
            table, self.options, only, changes_from_table, schema_id,
            None if self._columns is None else frozenset(self._columns), self._table_partitions,
        )
        self._position: ReaderPosition | None = None
        # A saved position (its JSON, or a dict) is checked against the log's ends when
        # the log is first used; a ReaderPosition object is trusted there (the Spark
        # source builds them from offsets it checked on the driver).
        self._ends_checked = position is None or isinstance(position, ReaderPosition)
        if position is not None:
            self._position = ReaderPosition.parse(position)
            if consistency is not None and self._position.consistency is not self.options.log_consistency:
                raise OptionError(
                    f"the saved position is {self._position.consistency.value}, "
                    f"the reader asks for {self.options.log_consistency.value}"
                )
            check_given_position(self._context, self._position)
        self._consumer: ConsumerProgress | None = None
        if self.options.consumer_id is not None:
            self._consumer = ConsumerProgress(table, self.options, self.consistency)
            if self._position is None:
                self._position = self._consumer.resume_position()
                if self._position is not None:
                    check_given_position(self._context, self._position)
        self._full_scan = FullScan(self._context)
        self._read: TransactionalRead | EventualRead
        if self.consistency is Consistency.TRANSACTIONAL:
            # A saved position inside a snapshot: that snapshot's records cannot be counted.
            counted_from_start = self._position is None or not self._position.offsets
            self._read = TransactionalRead(self._context, until_snapshot, counted_from_start, split_partitions)
        else:
            self._read = EventualRead(self._context, until_positions, until_snapshot)

    @property
    def consistency(self) -> Consistency:
        return self._position.consistency if self._position else self.options.log_consistency

    @property
    def position(self) -> ReaderPosition:
        """Where the reader is now (changes returned so far are before it)."""
        position = self._ensure_position()
        return attrs.evolve(position, offsets=dict(position.offsets), horizon=dict(position.horizon))

    @property
    def schema_id(self) -> int:
        """The id of the schema the reader returns changes in (it moves to a newer one when
        it meets it: see :mod:`tablelog.reading.context`)."""
        return self._context.schema_id

    @property
    def schema(self) -> pa.Schema:
        """The columns of the changes the reader returns now (after ``_kind``)."""
        return pa.schema(list(self._context.layout)[1:])

    def schema_mapping(self, source_id: int) -> SchemaMapping:
        """From rows of the table's schema ``source_id`` to the reader's schema."""
        return self._context.mapping(source_id)

    @property
    def log(self) -> LogClient:
        return self._context.log

    @property
    def foreign_skipped(self) -> int:
        """Foreign records skipped so far (``log.foreign-records=skip``)."""
        return self._context.decoder.foreign_skipped

    @property
    def other_tables_skipped(self) -> int:
        """Records of other tables that share this table's topic, left out (eventual reads)."""
        return self._read.other_tables_skipped if isinstance(self._read, EventualRead) else 0

    # -- public reading ----------------------------------------------------------

    def poll(self, max_records: int = 10_000, timeout_s: float = 0.0) -> list[Change]:
        """Return the changes available now (up to about ``max_records``), waiting at
        most ``timeout_s`` for the first one. An empty list means: nothing new yet."""
        position = self._ready_position()
        if self._consumer is not None:
            self._consumer.record(position)
        with self._undone_on_failure(position):
            if position.full_pending:
                changes = self._full_scan.poll(position, max_records)
            elif not self.table.options.log_enabled:
                return []  # its rows were all there is (see __init__)
            else:
                changes = self._read.poll(position, max_records, timeout_s)
                if self._table_partitions is not None:
                    changes = self._in_table_partitions(self._table_partitions, position, changes, max_records)
        if self._columns is None:
            return changes
        names = [f.name for f in self.schema]
        return [c._replace(row={name: c.row.get(name) for name in names}) for c in changes]

    def poll_arrow(self, max_records: int = 10_000, timeout_s: float = 0.0) -> pa.Table:
        """:meth:`poll`, as one Arrow table in the layout of :meth:`to_arrow`.

        The fast way to read: a transactional reader decodes the values of dense
        committed ranges (every position between a write's first and last record is
        one of its records; the common case) all at once in native code, where
        :meth:`poll` builds a Python row and a :class:`Change` per record."""
        position = self._ready_position()
        if self._consumer is not None:
            self._consumer.record(position)
        with self._undone_on_failure(position):
            if position.full_pending:
                return self.to_arrow(self._full_scan.poll(position, max_records))
            if not self.table.options.log_enabled:
                return self.to_arrow([])
            result = self._read.poll_arrow(position, max_records, timeout_s)
            only = self._table_partitions
            if only is not None:
                kept = result.filter(only.mask(result)) if result.num_rows else result
                while result.num_rows and not kept.num_rows:  # see _in_table_partitions
                    result = self._read.poll_arrow(position, max_records, 0.0)
                    kept = result.filter(only.mask(result)) if result.num_rows else result
                result = kept
            return self._selected(result)

    def _in_table_partitions(
        self, only: PartitionFilter, position: ReaderPosition, changes: list[Change], max_records: int
    ) -> list[Change]:
        """The ``changes`` of the table partitions read. A poll returning nothing means
        "nothing new", so while the log had only other partitions' changes it reads on."""
        kept = [c for c in changes if only.matches(c.row)]
        while changes and not kept:
            changes = self._read.poll(position, max_records, 0.0)
            kept = [c for c in changes if only.matches(c.row)]
        return kept

    @contextlib.contextmanager
    def _undone_on_failure(self, position: ReaderPosition) -> Iterator[None]:
        """A poll that raises returns nothing, so the position goes back to where the poll
        began: what the poll had taken before it failed (earlier snapshots or partitions)
        is read again by the next poll, never skipped."""
        saved = attrs.evolve(position, offsets=dict(position.offsets), horizon=dict(position.horizon))
        try:
            with self._context.topic_checked():
                yield
        except BaseException:
            for field in attrs.fields(ReaderPosition):
                setattr(position, field.name, getattr(saved, field.name))
            self._read.restart(position)
            raise

    def changes(self, follow: bool = False, idle_timeout_s: float = 1.0) -> Iterator[Change]:
        """Iterate changes. Without ``follow``, stop once nothing new arrived for
        ``idle_timeout_s``; with it, wait for new changes forever (a table without a log
        has none to wait for: following it is an error)."""
        if follow and not self.table.options.log_enabled:
            raise OptionError(
                f"table {self.table.identifier!r} has log.system=none: it keeps no changelog to "
                "follow; its current rows are read without follow=True, and a table created with a "
                "log.system can be followed"
            )
        while True:
            batch = self.poll(timeout_s=idle_timeout_s)
            if not batch and not follow:
                return
            yield from batch

    def read_all(self, idle_timeout_s: float = 0.5) -> list[Change]:
        """Every change available now (until the reader is idle for ``idle_timeout_s``)."""
        return list(self.changes(follow=False, idle_timeout_s=idle_timeout_s))

    def to_arrow(self, changes: list[Change]) -> pa.Table:
        """Changes as an Arrow table: a ``_kind`` column, then the reader's columns."""
        return self._selected(self._context.to_arrow(changes))

    def _selected(self, table: pa.Table) -> pa.Table:
        if self._columns is None:
            return table
        return table.select([KIND_COLUMN, *(f.name for f in self.schema)])

    def close(self) -> None:
        """Close the log connection; a reader with a ``consumer-id`` records its position
        (see :mod:`tablelog.reading.consumer`)."""
        try:
            if self._consumer is not None and self._position is not None:
                self._consumer.record(self._position)
        finally:
            self._context.close()

    def __enter__(self) -> ChangelogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- position ------------------------------------------------------------------

    def _ensure_position(self) -> ReaderPosition:
        if self._position is None:
            with self._context.topic_checked():
                self._position = initial_position(self._context)
        return self._position

    def _ready_position(self) -> ReaderPosition:
        """The position, a saved one checked against the log's ends (once, when the log
        is first read: the check costs a look-up of the ends)."""
        position = self._ensure_position()
        if not self._ends_checked:
            self._ends_checked = True
            with self._context.topic_checked():
                check_ends(self._context, position)
        return position


def selected_columns(
    table: TableView, columns: Sequence[str] | None, *, of_some_partitions: bool = False
) -> tuple[str, ...] | None:
    """The columns a reader asked for, with the primary key's, in the table's order;
    None for all. An unknown name is an error naming it and the table's columns.
    ``of_some_partitions``: the reader reads some table partitions, told apart by their
    partition columns: those are decoded, and returned, too."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    names = table.schema.names
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise OptionError(
            f"columns={list(columns)}: table {table.identifier!r} has no column "
            f"{', '.join(map(repr, unknown))}; its columns: {', '.join(names)}"
        )
    wanted = {*columns, *table.primary_key, *(table.files.partition_keys if of_some_partitions else ())}
    return tuple(name for name in names if name in wanted)


def _read_options(
    table: TableView, options: Mapping[str, Any] | None, consistency: str | Consistency | None,
    scan_mode: str | ScanMode | None, timestamp_millis: int | None, consumer_id: str | None,
) -> TableOptions:
    """The table's options with the reader's own: its keywords win over ``options``."""
    overrides = dict(options or {})
    for key, value in (("log.consistency", consistency), ("scan.mode", scan_mode),
                       ("scan.timestamp-millis", timestamp_millis), ("consumer-id", consumer_id)):
        if value is not None:
            overrides[key] = getattr(value, "value", value)
    result = table.options.with_overrides(overrides)
    if result.scan_mode is ScanMode.FROM_TIMESTAMP and result.scan_timestamp_millis is None:
        raise OptionError("scan.mode='from-timestamp' needs option 'scan.timestamp-millis'")
    if not table.options.log_enabled and result.scan_mode is not ScanMode.LATEST_FULL:
        raise OptionError(
            f"table {table.identifier!r} has log.system=none: it keeps no changelog, so "
            f"scan.mode={result.scan_mode.value!r} has nothing to read; read its current rows "
            "with scan.mode='latest-full' (the default) or table.rows(), or create the table with a "
            "log.system to keep its changes"
        )
    return result
