"""The first part of a hybrid read (``scan.mode = latest-full``): the rows of the
snapshot the reader started at, as ``+I`` changes, a page per poll."""

from __future__ import annotations

from typing import Any

from tablelog.positions import ReaderPosition
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.records import RowKind


class FullScan:
    """Pages through the rows of ``position.snapshot`` from ``position.full_offset``."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context
        self._rows: list[dict[str, Any]] | None = None

    def poll(self, position: ReaderPosition, max_records: int) -> list[Change]:
        if self._rows is None:
            self._rows = self._context.rows(position.snapshot, self._context.partitions).to_pylist()
        start = position.full_offset
        chunk = self._rows[start : start + max_records]
        position.full_offset = start + len(chunk)
        if position.full_offset >= len(self._rows):
            position.full_pending = False
            position.full_offset = 0
            self._rows = None
        return [Change(RowKind.INSERT, row, position.snapshot) for row in chunk]
