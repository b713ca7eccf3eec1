"""Normalize: turn an at-least-once changelog (eventual reads) into a correct one.

Keeps the last row per primary key. A change that repeats what the state already
says is a duplicate and is dropped; an upsert of a known key becomes a ``-U``
(old row) / ``+U`` (new row) pair; a delete becomes ``-D`` with the full old
row. The state holds one row per live key, which is why it is only added where
needed (eventual consistency).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tablelog.reading import Change
from tablelog.records import RowKind
from tablelog.row_equality import row_key, rows_equal


class Normalizer:
    def __init__(self, primary_key: Iterable[str]) -> None:
        self.primary_key = tuple(primary_key)
        if not self.primary_key:
            raise ValueError("normalize needs a primary key: without one, duplicates cannot be told apart")
        self.state: dict[tuple[Any, ...], Mapping[str, Any]] = {}

    def key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return row_key(row, self.primary_key)

    def apply(self, changes: Iterable[Change]) -> list[Change]:
        """Feed changes in log order; returns the normalized changes they cause."""
        out: list[Change] = []
        state = self.state
        for change in changes:
            key = self.key(change.row)
            old = state.get(key)
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
