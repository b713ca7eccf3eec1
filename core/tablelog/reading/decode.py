"""Log values into :class:`Change` objects, with the table's foreign-record policy.

Every way a reader returns changes one by one ends in :meth:`Decoder.decode_all`:
the transactional reader's committed records (dense ranges and sparse ones), the
eventual reader's records and the late writes of a hybrid read. A value that is not
one of this table's rows is a *foreign record*: it fails the read
(``log.foreign-records=fail``, naming the partition and position) or is skipped and
counted (``skip``). A value written under another schema than the reader's is mapped
into the reader's (a newer one first moves the reader to it: see
:mod:`tablelog.reading.context`). How a value decodes is its table's log format's
(:class:`~tablelog.formats.codec.RecordCodec`): the decoder is the reader's side of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import pyarrow as pa

from tablelog.errors import ForeignRecordError
from tablelog.options import ForeignRecords
from tablelog.records import RowKind

if TYPE_CHECKING:
    from tablelog.formats.codec import RecordCodec
    from tablelog.options import TableOptions
    from tablelog.store import SchemaMapping
    from tablelog.table_view import TableView


class Change(NamedTuple):
    """One change of the changelog.

    A named tuple, not a class with an ``__init__``: readers build one per record,
    and this is the cheapest object that still has named fields.
    """

    kind: RowKind
    row: dict[str, Any]
    snapshot_id: int | None = None  # the snapshot that committed it (transactional)
    partition: int | None = None
    position: int | None = None  # where it is in the log (None for rows of the full scan)


class ReaderSchema(Protocol):
    """The part of a reader's context that holds its schema (:mod:`tablelog.reading.context`)."""

    table: TableView
    codec: RecordCodec
    schema_id: int
    columns: frozenset[str] | None
    rows_per_record: int
    projecting: bool

    @property
    def layout(self) -> pa.Schema: ...

    def upgrade(self, schema_id: int) -> bool: ...

    def mapping(self, source_id: int) -> SchemaMapping: ...


class Decoder:
    """Decodes one reader's values and applies its foreign-record policy: the reader side
    of its table's log format (:class:`~tablelog.formats.codec.RecordReader`), which does
    the decoding."""

    change_type = Change

    def __init__(self, table: TableView, options: TableOptions, context: ReaderSchema) -> None:
        """``options``: the reader's (its ``log.foreign-records``); ``context``: whose schema
        the changes are returned in."""
        self._table = table
        self._context = context
        self._skip_foreign = options.log_foreign_records is ForeignRecords.SKIP
        #: Foreign records skipped so far (``log.foreign-records=skip``).
        self.foreign_skipped = 0

    def decode_all(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Change],
    ) -> list[int]:
        """Append the changes the values decode to, in order; report each value that
        does not decode (see :meth:`foreign`). Returns the positions of those, which
        were left out (usually none)."""
        return self._context.codec.decode_changes(values, positions, partition, snapshot_id, out, self)

    # -- what the log format's decoding asks of the reader ------------------------

    @property
    def codec(self) -> RecordCodec:
        return self._context.codec

    @property
    def schema_id(self) -> int:
        return self._context.schema_id

    @property
    def columns(self) -> frozenset[str] | None:
        return self._context.columns

    @property
    def projecting(self) -> bool:
        return self._context.projecting

    @property
    def layout(self) -> pa.Schema:
        return self._context.layout

    def upgrade(self, schema_id: int) -> bool:
        return self._context.upgrade(schema_id)

    def mapping(self, source_id: int) -> SchemaMapping:
        return self._context.mapping(source_id)

    def schema_of(self, schema_id: int) -> pa.Schema:
        return self._context.table.files.schema_version(schema_id).schema

    def remap(self, changes: list[Change], before: int) -> None:
        remap_changes(changes, self._context.table.files.mapping(before, self._context.schema_id))

    def held_rows(self, rows: int) -> None:
        context = self._context
        if rows > context.rows_per_record:
            context.rows_per_record = rows

    def foreign(self, partition: int, position: int, reason: str) -> None:
        """A record that is not this table's: count it under ``skip``, else fail the read."""
        if self._skip_foreign:
            self.foreign_skipped += 1
            return
        raise ForeignRecordError(topic=self._table.topic, partition=partition, position=position, reason=reason)



def remap_changes(changes: list[Change], mapping: SchemaMapping) -> None:
    """Changes of the mapping's source schema, in place, into its target schema."""
    full_row = mapping.full_row
    for i, change in enumerate(changes):
        changes[i] = change._replace(row=full_row(change.row))
