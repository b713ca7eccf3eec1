"""The log format of a table as one interface: what the writer and the readers know of it.

A :class:`RecordCodec` encodes one table's rows (of one of its schemas) into log
records and decodes records back, into :class:`~tablelog.reading.Change` objects or
Arrow columns. :func:`tablelog.formats.record_codec` picks the implementation once,
from the table's ``log.format``:

* :class:`~tablelog.formats.json_codec.JsonCodec` (``debezium-json``, ``json``): a
  record is one row.
* :class:`~tablelog.formats.arrow_codec.ArrowCodec` (``arrow``): a record is a batch
  of rows of one partition.

Nothing outside this package asks which one it has. Where a reader's algorithm depends
on what a record is, it asks the format that question (:attr:`RecordCodec.rows_per_record_vary`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import attrs
import pyarrow as pa

from tablelog.errors import SchemaMismatchError
from tablelog.formats import arrow as arrow_records
from tablelog.formats.json_values import json_type, unloggable_value
from tablelog.records import RowKind

if TYPE_CHECKING:
    from tablelog.store import SchemaMapping

KIND_COLUMN = "_kind"
#: The field of a log value that holds the id of the schema its row was written with.
SCHEMA_FIELD = "_schema"

#: What a writer sends to one log partition: its partition, then the records' keys and values.
PartitionRecords = tuple[int, Sequence[bytes | None], Sequence[bytes]]


def check_loggable(schema: pa.Schema) -> None:
    """Raise a clear error now for a column the table and its log cannot carry."""
    for field in schema:
        try:
            json_type(field.type)
        except SchemaMismatchError as err:
            raise SchemaMismatchError(f"column {field.name!r}: {err}") from None


class RecordReader(Protocol):
    """What decoding needs of the reader it decodes for (:class:`tablelog.reading.decode.Decoder`):
    its schema, which moves to the newest a record names (unless the reader is pinned),
    and its foreign-record policy."""

    @property
    def change_type(self) -> type[tuple[Any, ...]]:
        """The type of the changes decoded (:class:`tablelog.reading.Change`)."""

    @property
    def codec(self) -> RecordCodec:
        """The codec of the reader's schema now."""

    @property
    def schema_id(self) -> int: ...

    @property
    def columns(self) -> frozenset[str] | None:
        """The only columns the reader returns (None: all)."""

    @property
    def projecting(self) -> bool:
        """Whether the records come from the projection stream (:mod:`tablelog.formats.projection`)."""

    @property
    def layout(self) -> pa.Schema:
        """What the reader returns: ``_kind``, then its columns (:meth:`RecordCodec.layout`)."""

    def upgrade(self, schema_id: int) -> bool:
        """Move the reader to schema ``schema_id`` if it is newer than its own; True if it moved."""

    def mapping(self, source_id: int) -> SchemaMapping:
        """From rows of schema ``source_id`` to the reader's schema."""

    def schema_of(self, schema_id: int) -> pa.Schema:
        """The table schema of id ``schema_id``; LookupError when the table has none."""

    def remap(self, changes: list[Any], before: int) -> None:
        """Changes of schema ``before``, in place, into the reader's (it just moved)."""

    def held_rows(self, rows: int) -> None:
        """A record held ``rows`` rows (the reader sizes its fetches by the most seen)."""

    def foreign(self, partition: int, position: int, reason: str) -> None:
        """A record that is not the table's: skipped (and counted), or the read fails."""


class ArrowParts(Protocol):
    """Where :meth:`RecordCodec.decode_arrow` puts what it decodes (:class:`tablelog.reading.batch.Batch`)."""

    def add(self, table: pa.Table, schema_id: int) -> None:
        """Rows (``_kind`` first) of schema ``schema_id``, after everything added so far."""

    def changes(self, schema_id: int) -> list[Any]:
        """The list to append changes of schema ``schema_id`` to (after everything so far)."""


@attrs.define
class RecordCodec(abc.ABC):
    """Encodes and decodes one table's rows for its log: the table's log format."""

    schema: pa.Schema  # the user-visible table schema
    primary_key: tuple[str, ...]
    table: str = ""
    schema_id: int = 0  # the id of ``schema`` among the table's schemas, written into every record

    #: Whether the number of rows a record holds varies (a batch of rows a record) rather
    #: than being one. Sequence numbers, committed counts and positions count records: they
    #: count rows only when this is False.
    rows_per_record_vary: ClassVar[bool]

    def __attrs_post_init__(self) -> None:
        check_loggable(self.schema)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The ``log.format`` value."""

    # -- writing ---------------------------------------------------------------

    def check_values(self, data: pa.Table) -> None:
        """Raise :class:`SchemaMismatchError` naming the first value of ``data`` (in the
        table schema) that the log cannot carry exactly."""
        found = unloggable_value(data)
        if found is not None:
            column, row, value = found
            where = f"table {self.table!r}: " if self.table else ""
            raise SchemaMismatchError(
                f"{where}column {column!r} row {row}: {value!r} has a sub-microsecond part; the log "
                "carries times and timestamps to the microsecond. Round the values to microseconds; "
                "nothing was written"
            )

    @abc.abstractmethod
    def encode_partitions(
        self, data: pa.Table, kinds: Sequence[RowKind], groups: Sequence[tuple[int, int, int]], timestamp_ms: int,
        limit: int, input_row: Callable[[int], int],
    ) -> list[PartitionRecords]:
        """The records of ``data`` (already cast to the table schema, with some or all of
        its columns) for each of ``groups`` (partition, first row, end row): records of at
        most ``limit`` bytes each, in row order. A row too large for one is a
        :class:`SchemaMismatchError` (``input_row`` maps a row of ``data`` to the caller's
        row, for it); nothing is returned then."""

    # -- reading ---------------------------------------------------------------

    @abc.abstractmethod
    def decode_changes(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Any], reader: RecordReader,
    ) -> list[int]:
        """Append the changes the values decode to (in the reader's schema) to ``out``, in
        order; report each value that does not decode to ``reader.foreign``. Returns the
        positions of those, which were left out (usually none)."""

    @abc.abstractmethod
    def decode_arrow(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: ArrowParts, reader: RecordReader, moved: Callable[[], None], *, at_once: bool = False,
    ) -> list[int]:
        """:meth:`decode_changes` for a reader that returns Arrow: into ``out``, as Arrow
        where the format decodes straight to it. ``moved``: called when a record moves
        the reader to a newer schema, for ``out`` to follow. ``at_once``: the values
        are many consecutive committed ones (a chunk of a dense range), which a format
        may decode all at once."""

    def rows_to_arrow(self, kinds: list[RowKind], rows: list[dict[str, Any]]) -> pa.Table:
        """Rows in the table's Python types (what a reader's changes hold) as an Arrow
        table with a leading ``_kind`` column: the one way from decoded rows to Arrow."""
        return pa.Table.from_pylist(rows, schema=self.schema).add_column(0, KIND_COLUMN, pa.array(kinds, pa.string()))

    def layout(self, columns: Collection[str] | None) -> pa.Schema:
        """What a reader of ``columns`` (None: all) returns as Arrow: ``_kind``, then those
        columns of the schema, in its order."""
        return arrow_records.layout(self.schema, columns)
