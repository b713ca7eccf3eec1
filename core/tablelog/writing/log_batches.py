"""A write attempt's rows encoded as the log's records: the batches of the table topic and
of its projection stream (:mod:`tablelog.formats.projection`), each batch the attempt's
next records in one log partition."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tablelog.options import ChangelogMode
from tablelog.records import ProduceBatch, RowKind
from tablelog.writing.routing import partition_order

if TYPE_CHECKING:
    from tablelog.table_view import TableView


#: ``(log partition, first row, end row)``: rows of one partition.
Group = tuple[int, int, int]

#: Rows encoded at once: a batch costs more per record the larger it is (a write of many
#: rows, a merged-changelog attempt's changes) and the records are the same either way.
SLICE_ROWS = 10_000


def encode(
    table: TableView, arrow: pa.Table, kinds: list[RowKind], token: str,
    seq: dict[int, int], projection_seq: dict[int, int],
    *, groups: Sequence[Group] | None = None, rows_of: np.ndarray | None = None,
) -> tuple[list[ProduceBatch], list[ProduceBatch]]:
    """The batches of the table topic and of its projection stream, all encoded before
    any is produced: a row too large fails the write with nothing sent. ``seq`` and
    ``projection_seq``: the attempt's next sequence number per partition of each (advanced).
    ``groups``: the rows are grouped by log partition already, ``(partition, start, stop)``
    each (the data files' routing, :mod:`tablelog.store.bucket_routing`; None: grouped
    here); ``rows_of``: the caller's row of each row, for errors (None: the same)."""
    batches: list[ProduceBatch] = []
    projected: list[ProduceBatch] = []
    for start in range(0, arrow.num_rows, SLICE_ROWS):
        stop = min(start + SLICE_ROWS, arrow.num_rows)
        in_slice = None if groups is None else [
            (partition, max(first, start) - start, min(end, stop) - start)
            for partition, first, end in groups if first < stop and end > start]
        more, more_projected = _encode_slice(
            table, arrow.slice(start, SLICE_ROWS), kinds[start:stop], token, seq, projection_seq, start,
            in_slice, rows_of)
        batches += more
        projected += more_projected
    return batches, projected


def _encode_slice(
    table: TableView, arrow: pa.Table, kinds: list[RowKind], token: str,
    seq: dict[int, int], projection_seq: dict[int, int], first_row: int,
    groups: list[Group] | None, rows_of: np.ndarray | None,
) -> tuple[list[ProduceBatch], list[ProduceBatch]]:
    """:func:`encode` of the rows from row ``first_row`` on."""
    input_rows: list[int] | None = None  # input row of each encoded row, when not the same
    # Rows of one kind (every insert-only write): the first says whether any is a -U,
    # without comparing every row's kind.
    one_kind = kinds.count(kinds[0]) == len(kinds)
    has_update_before = kinds[0] is RowKind.UPDATE_BEFORE if one_kind else RowKind.UPDATE_BEFORE in kinds
    if table.changelog_mode is ChangelogMode.UPSERT and has_update_before:
        # upsert logs carry no -U: the +U that follows holds the new row
        input_rows = [i for i, k in enumerate(kinds) if k is not RowKind.UPDATE_BEFORE]
        arrow, kinds = arrow.take(pa.array(input_rows, pa.int64())), [kinds[i] for i in input_rows]
        groups = None  # of the rows before: grouped again
    if arrow.num_rows == 0:
        return [], []
    # Encode the rows grouped by partition: each partition's batch is then a slice
    # of the encoded lists (a per-row look-up to split them costs as much as the
    # JSON encoding itself).
    order = None
    if groups is None:
        order, groups = partition_order(table.files, arrow, table.log_partitions)
        if order is not None:
            arrow = arrow.take(order)
            if kinds.count(kinds[0]) != len(kinds):
                kinds = list(map(kinds.__getitem__, order.tolist()))

    def input_row(row: int) -> int:
        """The input row an encoded row came from, for an error that names it."""
        if order is not None:
            row = int(order[row])
        row = first_row + (input_rows[row] if input_rows is not None else row)
        return row if rows_of is None else int(rows_of[row])

    now = int(time.time() * 1000)
    limit = table.options.log_max_record_bytes
    codec, projection = table.codec, table.projection
    encoded = codec.encode_partitions(arrow, kinds, groups, now, limit, input_row)
    # The projection stream's records: the same rows, its columns only.
    projected = codec.encode_partitions(
        arrow.select(projection), kinds, groups, now, limit, input_row) if projection else []
    return (
        [next_batch(token, partition, keys, values, now, seq) for partition, keys, values in encoded],
        [next_batch(token, partition, keys, values, now, projection_seq) for partition, keys, values in projected],
    )


def next_batch(
    token: str, partition: int, keys: Sequence[bytes | None], values: Sequence[bytes], now: int,
    seq: dict[int, int],
) -> ProduceBatch:
    """The attempt's next records in ``partition`` (of the table topic, or of the stream
    whose sequence numbers ``seq`` holds): their sequence numbers follow the ones it
    produced there before."""
    batch = ProduceBatch(token=token, partition=partition, keys=keys, values=values,
                         timestamp_ms=now, first_seq=seq[partition])
    seq[partition] += len(values)
    return batch
