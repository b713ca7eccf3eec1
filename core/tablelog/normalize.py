"""Normalize: turn an at-least-once changelog (eventual reads) into a correct one.

Keeps the last row per primary key. A change that repeats what the state already
says is a duplicate and is dropped; an upsert of a known key becomes a ``-U``
(old row) / ``+U`` (new row) pair; a delete becomes ``-D`` with the full old
row. The state holds one row per live key, which is why it is only added where
needed (eventual consistency).

A table with a merge engine (or ``changelog-producer = lookup``) needs no merge here: its
log rows are whole merged rows (the writers and the committer ran the merge, and changes
read from the table files are the diff of its merged rows), so the last one of a key is
the table's row. Its output is a normalized changelog: an ``-U``/``+U`` pair of an
unchanged row, which the table's log carries without
``changelog-producer.row-deduplicate``, is dropped as a duplicate here.

A reader's schema can move while the normalizer runs (the table was altered): given the
reader (``Normalizer(key, reader=reader)``), the kept rows move with it, mapped by
Paimon field id as the reader maps its own (a renamed column keeps its values). Without
it, a kept row of other columns than a new change's is compared and emitted in the new
change's columns (a column it lacks is null; a renamed column reads as a new one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tablelog.reading import Change
from tablelog.records import RowKind
from tablelog.row_equality import row_key, rows_equal

if TYPE_CHECKING:
    from tablelog.reading import ChangelogReader


class Normalizer:
    def __init__(self, primary_key: Iterable[str], reader: ChangelogReader | None = None) -> None:
        self.primary_key = tuple(primary_key)
        if not self.primary_key:
            raise ValueError("normalize needs a primary key: without one, duplicates cannot be told apart")
        self.state: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        self._reader = reader
        self._schema_id = None if reader is None else reader.schema_id

    def _follow_reader_schema(self) -> None:
        """Map the kept rows into the reader's schema, if it moved since the last changes."""
        assert self._reader is not None
        schema_id = self._reader.schema_id
        if schema_id != self._schema_id:
            full_row = self._reader.schema_mapping(self._schema_id or 0).full_row
            self.state = {key: full_row(row) for key, row in self.state.items()}
            self._schema_id = schema_id

    def key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return row_key(row, self.primary_key)

    def apply(self, changes: Iterable[Change]) -> list[Change]:
        """Feed changes in log order; returns the normalized changes they cause."""
        out: list[Change] = []
        if self._reader is not None:
            self._follow_reader_schema()
        state = self.state
        for change in changes:
            key = self.key(change.row)
            old = state.get(key)
            if old is not None and old.keys() != change.row.keys():
                old = {name: old.get(name) for name in change.row}  # kept before the schema moved
            if change.kind is RowKind.UPDATE_BEFORE:
                continue  # the +U that follows carries the new row; -U adds nothing
            if change.kind is RowKind.DELETE:
                if old is not None:
                    del state[key]
                    out.append(Change(RowKind.DELETE, dict(old), change.snapshot_id, change.partition, change.position))
                continue
            if old is None:
                state[key] = change.row
                out.append(Change(RowKind.INSERT, change.row, change.snapshot_id, change.partition, change.position))
            elif not rows_equal(old, change.row):
                state[key] = change.row
                out.append(Change(RowKind.UPDATE_BEFORE, dict(old), change.snapshot_id, change.partition, change.position))
                out.append(Change(RowKind.UPDATE_AFTER, change.row, change.snapshot_id, change.partition, change.position))
        return out

    def rows(self) -> list[Mapping[str, Any]]:
        """The current rows (what the table holds, once the log is read up to it)."""
        return list(self.state.values())
