"""Sorted runs of key-value rows merged as a stream: a k-way merge that holds one Arrow
batch per run, not the runs.

Each run yields batches of its rows in key order, each key at most once (Paimon's sorted
run). A round takes the smallest *last* key among the runs' current batches (the bound):
every row at or below it, from every run, is there already (a run's later batches hold
only greater keys), so those rows hold every record of their keys. They are put in merge
order (key, then ``sequence.field``, then sequence number, as Paimon's merge reader
orders a key's records) and given out as one chunk; what is above the bound waits for
the next round. Memory is the runs' current batches and one chunk, whatever the runs hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.store.layout import SEQUENCE_NUMBER

#: The bytes of batches the runs' buffers take at once, shared between the runs (each
#: takes its part, or one row, at least).
BUFFER_BYTES = 16 << 20


@attrs.frozen
class MergeOrder:
    """How a key's records are ordered for its merge: by the ``key`` columns, then the
    ``sequence`` columns (``sequence.field``; nulls first in both directions, as Java's
    ``UserDefinedSeqComparator``), then ``_SEQUENCE_NUMBER``."""

    key: tuple[str, ...]
    sequence: tuple[str, ...] = ()
    sequence_ascending: bool = True


@attrs.frozen
class Chunk:
    """Rows holding every record of their keys, in merge order. ``distinct``: each key
    once (they came from a single run)."""

    rows: pa.Table
    distinct: bool


def merged_chunks(runs: Sequence[Iterable[pa.RecordBatch]], order: MergeOrder) -> Iterator[Chunk]:
    """The rows of ``runs`` (each in key order, a key at most once per run) as chunks in
    merge order: a key's records all in one chunk, the chunks in key order."""
    share = max(1, BUFFER_BYTES // max(1, len(runs)))
    streams = [_Run(iter(run), order.key, share) for run in runs]
    live = [run for run in streams if run.fill()]
    while len(live) > 1:
        bound = min(run.last_key() for run in live)
        parts = [part for run in live if (part := run.take_at_most(bound)).num_rows]
        if len(parts) == 1:
            yield Chunk(parts[0], distinct=True)
        else:
            yield Chunk(in_merge_order(pa.concat_tables(parts), order), distinct=False)
        live = [run for run in live if run.fill()]
    for run in live:  # the last run: its rows are in key order, each key once
        yield from (Chunk(rows, distinct=True) for rows in run.rest())


def in_merge_order(rows: pa.Table, order: MergeOrder) -> pa.Table:
    """``rows`` sorted by :class:`MergeOrder` (Paimon's writers sort their files' keys the
    same way, with nulls first)."""
    columns = [rows.column(name) for name in order.key]
    directions = ["ascending"] * len(columns)
    for name in order.sequence:
        column = rows.column(name)
        columns.append(_java_float_order(column) if pa.types.is_floating(column.type) else column)
        directions.append("ascending" if order.sequence_ascending else "descending")
    columns.append(rows.column(SEQUENCE_NUMBER))
    directions.append("ascending")
    names = [str(i) for i in range(len(columns))]  # no clash with the rows' own names
    indices = pc.sort_indices(pa.table(columns, names=names), sort_keys=list(zip(names, directions, strict=True)),
                              null_placement="at_start")
    return rows.take(indices)


def _java_float_order(column: Any) -> pa.Array:
    """Unsigned integers ordered as Java's ``Float/Double.compare`` orders ``column``
    (-0.0 before 0.0, every NaN above infinity), nulls kept."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = column.to_numpy(zero_copy_only=False)
    bits = values.view(np.dtype(f"uint{column.type.bit_width}"))
    sign = np.array(1 << (column.type.bit_width - 1), dtype=bits.dtype)
    keys = np.where(bits & sign, ~bits, bits ^ sign)
    keys[np.isnan(values)] = np.iinfo(bits.dtype).max
    return pa.array(keys, mask=column.is_null().to_numpy(zero_copy_only=False))


def group_ends(rows: pa.Table, key: Sequence[str]) -> np.ndarray:
    """Per row of ``rows`` (in key order), whether it is the last of its key's."""
    count = rows.num_rows
    ends = np.ones(count, bool)
    if count < 2:
        return ends
    differs = np.zeros(count - 1, bool)
    for name in key:
        column = rows.column(name)
        differs |= pc.not_equal(column.slice(1), column.slice(0, count - 1)).to_numpy(zero_copy_only=False)
    ends[:-1] = differs
    return ends


class _Run:
    """One run's batches, with the rows being merged (``buffer``): batches taken until they
    hold ``buffer_bytes``, so that a round's cost in Python is spread over many rows
    whatever the reader's batch size, and memory is bounded whatever the rows' width."""

    def __init__(self, batches: Iterator[pa.RecordBatch], key: Sequence[str], buffer_bytes: int) -> None:
        self._batches = _at_most(buffer_bytes, batches)
        self._buffer_bytes = buffer_bytes
        self._key = tuple(key)
        self._buffer: pa.Table | None = None

    def fill(self) -> bool:
        """Whether the run has rows left (more batches taken when the buffer is empty)."""
        if self._buffer is not None and self._buffer.num_rows:
            return True
        taken: list[pa.RecordBatch] = []
        size = 0
        for batch in self._batches:
            taken.append(batch)
            size += batch.nbytes
            if size >= self._buffer_bytes:
                break
        self._buffer = pa.Table.from_batches(taken) if taken else None
        return self._buffer is not None and self._buffer.num_rows > 0

    def last_key(self) -> tuple[Any, ...]:
        assert self._buffer is not None
        return self._key_at(self._buffer.num_rows - 1)

    def take_at_most(self, bound: tuple[Any, ...]) -> pa.Table:
        """The buffer's rows whose key is at most ``bound`` (removed from the buffer)."""
        buffer = self._buffer
        assert buffer is not None
        low, high = 0, buffer.num_rows  # keys ascend: the rows wanted are a prefix
        while low < high:
            middle = (low + high) // 2
            if self._key_at(middle) <= bound:
                low = middle + 1
            else:
                high = middle
        self._buffer = buffer.slice(low)
        return buffer.slice(0, low)

    def rest(self) -> Iterator[pa.Table]:
        while self.fill():
            assert self._buffer is not None
            yield self._buffer
            self._buffer = None

    def _key_at(self, row: int) -> tuple[Any, ...]:
        # Python's comparison of the values: how pypaimon orders keys (its key comparator
        # and IntervalPartition), and so how the files' runs were cut.
        assert self._buffer is not None
        return tuple(self._buffer.column(name)[row].as_py() for name in self._key)


def _at_most(size: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, each of more than ``size`` bytes in slices (zero-copy) that are not."""
    for batch in batches:
        if batch.nbytes <= size or batch.num_rows < 2:
            yield batch
            continue
        rows = max(1, size * batch.num_rows // batch.nbytes)
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)
