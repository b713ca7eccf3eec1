"""The batched log format, ``arrow``: a record is a batch of rows of one partition.

The records themselves are :mod:`tablelog.formats.arrow`. A record is committed, read
and positioned as a whole: every change it decodes to has the record's position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs
import pyarrow as pa

from tablelog.formats import arrow as arrow_records
from tablelog.formats.codec import ArrowParts, PartitionRecords, RecordCodec, RecordReader
from tablelog.options import ArrowCompression
from tablelog.records import RowKind


@attrs.define
class ArrowCodec(RecordCodec):
    """``arrow``: records of a batch of rows each, of at most ``log.max-record-bytes``."""

    compression: ArrowCompression = ArrowCompression.LZ4  # of the records written

    rows_per_record_vary: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return "arrow"

    # -- writing ---------------------------------------------------------------

    def encode_partitions(
        self, data: pa.Table, kinds: Sequence[RowKind], groups: Sequence[tuple[int, int, int]], timestamp_ms: int,
        limit: int, input_row: Callable[[int], int],
    ) -> list[PartitionRecords]:
        """Each partition's rows as records holding a batch of rows each: sequence numbers
        count records, each committed or not as a whole. Records have no key. A row too
        large is named by its key (or its row in the partition), not by ``input_row``."""
        encoded: list[PartitionRecords] = []
        for partition, start, stop in groups:
            values = self.encode_batches(data.slice(start, stop - start), kinds[start:stop], limit)
            encoded.append((partition, [None] * len(values), values))
        return encoded

    def encode_batches(self, data: pa.Table, kinds: Sequence[RowKind], limit: int) -> list[bytes]:
        """The rows of ``data`` (one partition's, in the table schema) as ``arrow``
        records of at most ``limit`` bytes each (see :mod:`tablelog.formats.arrow`)."""
        return arrow_records.encode_records(
            data, kinds, schema_id=self.schema_id, compression=self.compression, limit=limit,
            primary_key=self.primary_key, table=self.table,
        )

    # -- reading ---------------------------------------------------------------

    def decode_changes(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Any], reader: RecordReader,
    ) -> list[int]:
        new, change = tuple.__new__, reader.change_type
        append = out.append
        left_out: list[int] = []

        def moved(before: int) -> None:
            reader.remap(out, before)

        for value, pos in zip(values, positions, strict=True):
            rows = self.record_rows(value, partition, pos, moved, reader)
            if rows is None:
                left_out.append(pos)
                continue
            kinds, python_rows = arrow_records.changes_of(rows)
            for kind, row in zip(kinds, python_rows, strict=True):
                append(new(change, (kind, row, snapshot_id, partition, pos)))
        return left_out

    def decode_arrow(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: ArrowParts, reader: RecordReader, moved: Callable[[], None], *, at_once: bool = False,
    ) -> list[int]:
        """Each record's rows as they are (no Python object per change)."""
        left_out = []

        def follow(_before: int) -> None:
            moved()

        for value, position in zip(values, positions, strict=True):
            rows = self.record_rows(value, partition, position, follow, reader)
            if rows is None:
                left_out.append(position)
            else:
                out.add(rows, reader.schema_id)
        return left_out

    def record_rows(
        self, value: bytes | None, partition: int, position: int, moved: Callable[[int], None], reader: RecordReader,
    ) -> pa.Table | None:
        """The rows of one record in the reader's schema (``_kind`` first; only the reader's
        columns when it has some), or None for a foreign record that is skipped.
        ``moved(before)`` is called when the record moves the reader to a newer schema
        (from ``before``), for the caller to map what it collected."""
        if value is None:
            reader.foreign(partition, position, "it has no value")
            return None
        try:
            rows = _in_reader_schema(value, moved, reader)
        except (ValueError, KeyError, TypeError, pa.ArrowException) as err:
            reader.foreign(partition, position, f"its value does not decode as arrow ({err})")
            return None
        reader.held_rows(rows.num_rows)
        return rows


def _in_reader_schema(value: bytes, moved: Callable[[int], None], reader: RecordReader) -> pa.Table:
    columns = reader.columns
    rows, written = arrow_records.decode_record(value, columns)
    if written != reader.schema_id:
        before = reader.schema_id
        try:
            if reader.upgrade(written):
                moved(before)
            if written != reader.schema_id:  # an older schema (or the reader is pinned)
                if columns is not None:  # mapped by field id: names may have changed since
                    rows, _ = arrow_records.decode_record(value)
                source = reader.schema_of(written)
                # A projection stream's record holds some columns: the others map to nulls,
                # which the reader, asking for none of them, leaves out.
                held = rows.column_names[1:] if reader.projecting else None
                rows = arrow_records.conform(rows, arrow_records.layout(source, held))
                mapped = reader.mapping(written).arrow(rows.drop_columns([arrow_records.KIND_COLUMN]))
                mapped = mapped.add_column(0, arrow_records.KIND_COLUMN, rows.column(0))
                return mapped if columns is None else mapped.select(reader.layout.names)
        except LookupError as err:  # no such schema: not a record of this table
            raise ValueError(str(err)) from None
    return arrow_records.conform(rows, reader.layout)
