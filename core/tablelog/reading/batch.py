"""What one transactional poll collects, and how much each fetch of it may take."""

from __future__ import annotations

import pyarrow as pa

from tablelog.reading.decode import Change


class Batch:
    """What one transactional poll collects, in order: lists of :class:`Change`, and
    Arrow tables (``poll_arrow`` decodes the values of dense committed ranges into
    Arrow directly: no Python object per change)."""

    def __init__(self, arrow: bool) -> None:
        self.arrow = arrow
        self.parts: list[list[Change] | pa.Table] = []
        self.size = 0  # changes in every part but a trailing list of changes

    def __len__(self) -> int:
        tail = self.parts[-1] if self.parts else None
        return self.size + len(tail) if isinstance(tail, list) else self.size

    def changes(self) -> list[Change]:
        """The list to append changes to (after every part so far)."""
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            return tail
        fresh: list[Change] = []
        self.parts.append(fresh)
        return fresh

    def add(self, table: pa.Table) -> None:
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            self.size += len(tail)
        self.parts.append(table)
        self.size += table.num_rows

    def mark(self) -> tuple[int, int]:
        """Where the batch ends now, for :meth:`truncate`."""
        tail = self.parts[-1] if self.parts else None
        return len(self.parts), len(tail) if isinstance(tail, list) else -1

    def truncate(self, mark: tuple[int, int]) -> None:
        """Drop everything added since ``mark`` (a partition whose records turned out lost
        is read again from the table files)."""
        parts, tail_length = mark
        del self.parts[parts:]
        if tail_length >= 0:
            tail = self.parts[-1]
            assert isinstance(tail, list)
            del tail[tail_length:]
        sealed = self.parts[:-1] if self.parts and isinstance(self.parts[-1], list) else self.parts
        self.size = sum(len(p) if isinstance(p, list) else p.num_rows for p in sealed)

    def to_changes(self) -> list[Change]:
        out: list[Change] = []
        for part in self.parts:
            assert isinstance(part, list)
            out.extend(part)
        return out

    def fetch_size(self, budget: int, pos: int, hi: int) -> int:
        """How many records the next fetch of positions ``pos..hi`` may ask for.

        Never more than the positions left up to ``hi``: a fetch that stops at the last
        committed record leaves the client standing where the next snapshot starts.
        Never more than the budget left: a poll returns at most ``max_records`` changes,
        so that its position is right after the last one a caller (``tail --limit``) prints.
        """
        return max(1, min(budget - len(self), hi - pos + 1))
