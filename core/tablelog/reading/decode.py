"""Log values into :class:`Change` objects, with the table's foreign-record policy.

Every way a reader returns changes one by one ends in :meth:`Decoder.decode_all`:
the transactional reader's committed records (dense ranges and sparse ones), the
eventual reader's records and the late writes of a hybrid read. A value that is not
one of this table's rows is a *foreign record*: it fails the read
(``log.foreign-records=fail``, naming the partition and position) or is skipped and
counted (``skip``). A value written under another schema than the reader's is mapped
into the reader's (a newer one first moves the reader to it: see
:mod:`tablelog.reading.context`). A value of the ``arrow`` format holds a batch of rows:
every change it decodes to has its position (:mod:`tablelog.formats.arrow`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import pyarrow as pa

from tablelog.errors import ForeignRecordError
from tablelog.formats import arrow as arrow_records
from tablelog.formats.codec import OtherSchema
from tablelog.formats.codec import schema_id as checked_schema_id
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
    """Decodes one reader's values and applies its foreign-record policy."""

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
        were left out (usually none). One tight loop: it runs for every record a reader
        returns one by one."""
        if self._context.codec.batched:
            return self._decode_batches(values, positions, partition, snapshot_id, out)
        decode = self._context.codec.change_decoder
        new = tuple.__new__  # what Change(...) does, without its Python-level __new__
        append = out.append
        left_out: list[int] = []
        for value, pos in zip(values, positions, strict=True):
            if value is None:
                self.foreign(partition, pos, "it has no value")
                left_out.append(pos)
                continue
            try:
                try:
                    kind, row = decode(value)
                except OtherSchema as other:  # written under another schema: mapped into the reader's
                    kind = other.kind
                    row = self._in_reader_schema(other.row, other.schema_id, out)
                    decode = self._context.codec.change_decoder  # the reader may have moved to it
                change = new(Change, (kind, row, snapshot_id, partition, pos))
            except (ValueError, KeyError, TypeError) as err:
                fmt = self._table.options.log_format.value
                self.foreign(partition, pos, f"its value does not decode as {fmt} ({err})")
                left_out.append(pos)
                continue
            append(change)
        return left_out

    def _decode_batches(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Change],
    ) -> list[int]:
        """:meth:`decode_all` for records that hold a batch of rows each."""
        new = tuple.__new__
        append = out.append
        left_out: list[int] = []

        def moved(before: int) -> None:
            remap_changes(out, self._context.table.files.mapping(before, self._context.schema_id))

        for value, pos in zip(values, positions, strict=True):
            rows = self.record_rows(value, partition, pos, moved)
            if rows is None:
                left_out.append(pos)
                continue
            kinds, python_rows = arrow_records.changes_of(rows)
            for kind, row in zip(kinds, python_rows, strict=True):
                append(new(Change, (kind, row, snapshot_id, partition, pos)))
        return left_out

    def record_rows(
        self, value: bytes | None, partition: int, position: int, moved: Callable[[int], None]
    ) -> pa.Table | None:
        """The rows of one ``arrow`` record in the reader's schema (``_kind`` first; only the
        reader's columns when it has some), or None for a foreign record that is skipped. ``moved(before)`` is called when the record
        moves the reader to a newer schema (from ``before``), for the caller to map what
        it collected."""
        if value is None:
            self.foreign(partition, position, "it has no value")
            return None
        try:
            rows = self._record_rows(value, moved)
        except (ValueError, KeyError, TypeError, pa.ArrowException) as err:
            self.foreign(partition, position, f"its value does not decode as arrow ({err})")
            return None
        context = self._context
        if rows.num_rows > context.rows_per_record:
            context.rows_per_record = rows.num_rows
        return rows

    def _record_rows(self, value: bytes, moved: Callable[[int], None]) -> pa.Table:
        context = self._context
        columns = context.columns
        rows, written = arrow_records.decode_record(value, columns)
        if written != context.schema_id:
            before = context.schema_id
            try:
                if context.upgrade(written):
                    moved(before)
                if written != context.schema_id:  # an older schema (or the reader is pinned)
                    if columns is not None:  # mapped by field id: names may have changed since
                        rows, _ = arrow_records.decode_record(value)
                    source = context.table.files.schema_version(written).schema
                    # A projection stream's record holds some columns: the others map to nulls,
                    # which the reader, asking for none of them, leaves out.
                    held = rows.column_names[1:] if context.projecting else None
                    rows = arrow_records.conform(rows, arrow_records.layout(source, held))
                    mapped = context.mapping(written).arrow(rows.drop_columns([arrow_records.KIND_COLUMN]))
                    mapped = mapped.add_column(0, arrow_records.KIND_COLUMN, rows.column(0))
                    return mapped if columns is None else mapped.select(context.layout.names)
            except LookupError as err:  # no such schema: not a record of this table
                raise ValueError(str(err)) from None
        return arrow_records.conform(rows, context.layout)

    def _in_reader_schema(self, row: dict[str, Any], written: Any, out: list[Change]) -> dict[str, Any]:
        """A row of schema ``written`` in the reader's schema (Python values). A newer
        schema moves the reader to it first, and the changes of this poll already in
        ``out`` with it."""
        context = self._context
        before = context.schema_id
        schema_id = checked_schema_id(written)
        if schema_id == before:
            return context.codec.python_row(row)
        try:
            if context.upgrade(schema_id):
                remap_changes(out, context.table.files.mapping(before, schema_id))
            return context.codec.python_row(context.mapping(schema_id).row(row))
        except LookupError as err:  # no such schema: not a row of this table
            raise ValueError(str(err)) from None

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
