"""Finding the rows of some integer keys in data files, without a Python object per row.

A lookup of a one-integer-key table scans every candidate file's key column: the
wanted keys are marked once in a table spanning their range (one byte per value in the
range), so each row is tested by indexing that table. Keys too sparse for such a table
are searched for: a data file is sorted by key, so each wanted key within its range is
found by binary search; a column that is not sorted is tested by numpy's sort-based
``isin``.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

#: The largest table of marked keys made whatever the number of wanted keys (bytes).
_TABLE_BYTES = 16 * 2**20
#: A table of marked keys may also span this many values per wanted key: it then holds
#: no more than this many bytes per key the lookup already holds.
_TABLE_BYTES_PER_KEY = 32
_INT64_MIN = int(np.iinfo(np.int64).min)


class IntegerKeys:
    """Distinct integer keys, sorted, and where a key column holds them (:meth:`positions`)."""

    def __init__(self, values: np.ndarray) -> None:
        values = values.astype(np.int64, copy=False)  # Paimon's integers are signed, at most 64 bits
        self.values = values
        self._marked: np.ndarray | None = None
        if len(values):
            low, high = int(values[0]), int(values[-1])
            span = high - low + 1
            if span <= max(_TABLE_BYTES, _TABLE_BYTES_PER_KEY * len(values)) and low > _INT64_MIN:
                # One unmarked value either side: a key outside the range is clipped onto it.
                marked = np.zeros(span + 2, np.bool_)
                marked[values - (low - 1)] = True
                self._marked, self._shift = marked, low - 1

    def positions(self, column: pa.ChunkedArray) -> np.ndarray | None:
        """The rows of ``column`` (an integer key column) holding a wanted key, in row
        order; None when it holds nulls or is not integer (then test it otherwise)."""
        if not pa.types.is_integer(column.type) or column.null_count:
            return None
        found: list[np.ndarray] = []
        offset = 0
        for chunk in column.chunks:
            keys = chunk.to_numpy().astype(np.int64, copy=False)
            if len(keys) and len(self.values):
                found.append(self._in_chunk(keys) + offset)
            offset += len(keys)
        return np.concatenate(found) if found else np.empty(0, np.int64)

    def _in_chunk(self, keys: np.ndarray) -> np.ndarray:
        if self._marked is not None:
            # np.take, not indexing with an array: the same result without indexing's
            # general machinery per row. A difference beyond int64 wraps to a value
            # outside the table too, clipped onto an unmarked end.
            return np.flatnonzero(np.take(self._marked, keys - self._shift, mode="clip"))
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            return np.flatnonzero(np.isin(keys, self.values, kind="sort"))
        return _searched(keys, self.values)


def _searched(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The rows of sorted ``keys`` holding one of ``values`` (sorted, distinct)."""
    within = values[np.searchsorted(values, keys[0], "left"):np.searchsorted(values, keys[-1], "right")]
    if len(within) * math.log2(len(keys) + 1) > len(keys):
        return np.flatnonzero(np.isin(keys, within, kind="sort"))  # as many keys as rows: one pass
    starts = np.searchsorted(keys, within, "left")
    counts = np.searchsorted(keys, within, "right") - starts
    held = counts > 0
    starts, counts = starts[held], counts[held]
    if len(counts) and int(counts.max()) > 1:  # a key with several records in one file
        starts = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
    return starts

