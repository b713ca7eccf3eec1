"""What one transactional poll collects, and how much each fetch of it may take."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.formats.codec import KIND_COLUMN
from tablelog.reading.decode import Change, remap_changes

if TYPE_CHECKING:
    from tablelog.reading.context import ReadContext


def _same(rows: int) -> int:
    return rows


class Batch:
    """What one transactional poll collects, in order: lists of :class:`Change`, and
    Arrow tables (``poll_arrow`` decodes the values of dense committed ranges into
    Arrow directly: no Python object per change). Each part is in the reader's schema
    of when it was made; :meth:`in_schema` brings them all into the reader's last."""

    def __init__(self, arrow: bool) -> None:
        self.arrow = arrow
        self.parts: list[list[Change] | pa.Table] = []
        self.schema_ids: list[int] = []  # the schema of each part
        self.size = 0  # changes in every part but a trailing list of changes

    def __len__(self) -> int:
        tail = self.parts[-1] if self.parts else None
        return self.size + len(tail) if isinstance(tail, list) else self.size

    def changes(self, schema_id: int) -> list[Change]:
        """The list to append changes of schema ``schema_id`` to (after every part so far).
        The decoder maps a list in place when it moves the reader to a newer schema."""
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            self.schema_ids[-1] = schema_id
            return tail
        fresh: list[Change] = []
        self.parts.append(fresh)
        self.schema_ids.append(schema_id)
        return fresh

    def add(self, table: pa.Table, schema_id: int) -> None:
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            self.size += len(tail)
        self.parts.append(table)
        self.schema_ids.append(schema_id)
        self.size += table.num_rows

    def in_schema(self, context: ReadContext) -> Batch:
        """Every part in the reader's schema (parts made before it moved, mapped)."""
        store, target = context.table.files, context.schema_id
        for i, (part, schema_id) in enumerate(zip(self.parts, self.schema_ids, strict=True)):
            if schema_id == target:
                continue
            mapping = store.mapping(schema_id, target)
            if isinstance(part, list):
                remap_changes(part, mapping)
            else:
                self.parts[i] = mapping.arrow(part.drop_columns([KIND_COLUMN])).add_column(
                    0, KIND_COLUMN, part.column(KIND_COLUMN)
                )
            self.schema_ids[i] = target
        return self

    def mark(self) -> tuple[int, int]:
        """Where the batch ends now, for :meth:`truncate`."""
        tail = self.parts[-1] if self.parts else None
        return len(self.parts), len(tail) if isinstance(tail, list) else -1

    def truncate(self, mark: tuple[int, int]) -> None:
        """Drop everything added since ``mark`` (a partition whose records turned out lost
        is read again from the table files)."""
        parts, tail_length = mark
        del self.parts[parts:]
        del self.schema_ids[parts:]
        if tail_length >= 0:
            tail = self.parts[-1]
            assert isinstance(tail, list)
            del tail[tail_length:]
        sealed = self.parts[:-1] if self.parts and isinstance(self.parts[-1], list) else self.parts
        self.size = sum(len(p) if isinstance(p, list) else p.num_rows for p in sealed)

    def take_records(
        self, context: ReadContext, values: Sequence[bytes | None], positions: Sequence[int], partition: int,
        snapshot_id: int | None, *, at_once: bool = False,
    ) -> list[int]:
        """Append what the values decode to: as Arrow where the log format decodes straight
        to it when the batch is Arrow (no Python object per change), else changes. Returns
        the positions of the values left out as foreign (see :meth:`Decoder.decode_all`).
        ``at_once``: the values are a chunk of a dense committed range
        (:meth:`~tablelog.formats.codec.RecordCodec.decode_arrow`)."""
        if self.arrow:
            def moved() -> None:
                self.in_schema(context)  # what was taken so far, into the schema the reader moved to

            return context.codec.decode_arrow(
                values, positions, partition, snapshot_id, self, context.decoder, moved, at_once=at_once
            )
        left_out = context.decoder.decode_all(values, positions, partition, snapshot_id, self.changes(context.schema_id))
        self.changes(context.schema_id)  # the decoder maps the list when the reader's schema moves
        return left_out

    def to_arrow(self, context: ReadContext) -> pa.Table:
        """Every part as one Arrow table (call :meth:`in_schema` first). A reader given
        columns gets only those: records decode to them alone, other parts are cut to them."""
        tables = [part if not isinstance(part, list) else context.to_arrow(part) for part in self.parts]
        if not tables:
            return context.to_arrow([])
        if context.columns is not None:
            names = context.layout.names
            tables = [t if t.column_names == names else t.select(names) for t in tables]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def to_changes(self) -> list[Change]:
        out: list[Change] = []
        for part in self.parts:
            assert isinstance(part, list)
            out.extend(part)
        return out

    def fetch_size(self, budget: int, pos: int, hi: int, records_for: Callable[[int], int] = _same) -> int:
        """How many records the next fetch of positions ``pos..hi`` may ask for.

        Never more than the positions left up to ``hi``: a fetch that stops at the last
        committed record leaves the client standing where the next snapshot starts.
        Never more than the budget left: a poll returns at most ``max_records`` changes,
        so that its position is right after the last one a caller (``tail --limit``) prints.
        ``records_for``: how many records hold the rows left (records of many rows:
        :meth:`ReadContext.records_for`).
        """
        return max(1, min(records_for(budget - len(self)), hi - pos + 1))

