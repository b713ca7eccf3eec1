"""Which key a row holds, as its key's *place* (its index among an attempt's distinct
keys, in first-write order), computed in numpy (a key of one integer column) or Arrow:
the merged writer's bookkeeping for tens of thousands of keys, without a Python tuple
per row; and its records and changes put in the order of their keys' places.

Keys compare as Arrow's hash grouping and joins compare them (by value, per column);
when a key column's type cannot be grouped or joined in Arrow, the same is done with
Python tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from tablelog.records import RowKind
from tablelog.store.key_records import key_tuples

_ROW = "__tablelog_row"
_PLACE = "__tablelog_place"


def first_rows(table: pa.Table, key_columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct key of ``table``, in first-write order: the row where it first
    appears, and how many rows hold it."""
    count = table.num_rows
    if not count:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    single = _integers(table, key_columns)
    if single is not None:
        # np.unique's first indices need a stable sort: an unstable one and each group's
        # smallest row give the same, faster
        order = np.argsort(single)
        ordered = single[order]
        starts = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1]))
        first = np.minimum.reduceat(order, starts)
        counts = np.diff(np.append(starts, count))
        by_first = np.argsort(first)  # rows are distinct: no tie to keep in order
        return first[by_first].astype(np.int64), counts[by_first].astype(np.int64)
    try:
        grouped = (
            table.select(list(key_columns)).append_column(_ROW, pa.array(np.arange(count, dtype=np.int64)))
            .group_by(list(key_columns), use_threads=False).aggregate([(_ROW, "min"), (_ROW, "count")])
        )
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _first_rows_in_python(key_tuples(table, key_columns))
    first = grouped.column(f"{_ROW}_min").to_numpy()
    counts = grouped.column(f"{_ROW}_count").to_numpy()
    order = np.argsort(first, kind="stable")
    return first[order].astype(np.int64), counts[order].astype(np.int64)


def places(table: pa.Table, keys: pa.Table) -> np.ndarray:
    """For each row of ``table``, the index in ``keys`` (distinct keys, the key columns)
    of the key it holds; every row's key must be among ``keys``."""
    count = table.num_rows
    found = np.zeros(count, np.int64)
    if not count:
        return found
    columns = list(keys.column_names)
    wanted, held = _integers(keys, columns), _integers(table, columns)
    if wanted is not None and held is not None:  # one integer column: a binary search
        if not len(wanted):
            raise ValueError(f"{count} rows hold a key but there are no keys")
        order = np.argsort(wanted)  # the keys are distinct: no tie to keep in order
        at = order[np.minimum(np.searchsorted(wanted, held, sorter=order), len(order) - 1)]
        if not np.array_equal(wanted[at], held):
            raise ValueError("a row holds a key that is not among the keys")
        return at.astype(np.int64)
    left = table.select(columns).append_column(_ROW, pa.array(np.arange(count, dtype=np.int64)))
    right = keys.cast(left.select(columns).schema).append_column(
        _PLACE, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    try:
        joined = left.join(right, keys=columns, join_type="inner", use_threads=False)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        return _places_in_python(key_tuples(table, columns), key_tuples(keys, columns))
    if joined.num_rows != count:
        raise ValueError(f"{count - joined.num_rows} of {count} rows hold a key that is not among the keys")
    found[joined.column(_ROW).to_numpy()] = joined.column(_PLACE).to_numpy()
    return found


_CHANGE_KINDS = (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER)


def kept_in_place_order(
    arrow: pa.Table, kinds: list[RowKind], first: np.ndarray, alone: np.ndarray, paired: np.ndarray,
    before: pa.Table, after: pa.Table, changed: bool,
) -> tuple[pa.Table, list[RowKind], pa.Table, list[RowKind]]:
    """The records, their kinds, the changes and theirs, of a merged attempt (rows
    ``arrow`` with ``kinds``; ``first``: each key's first row) when every key is kept as written (``alone``: not in the
    table, ``+I``) or merged in Arrow (``paired``: ``-U`` of ``before``, ``+U`` of
    ``after``, one row per paired key in place order), put in key order by arithmetic on
    the places rather than by sorting."""
    kept_at = np.flatnonzero(alone | paired)
    kept_rows = first[kept_at]
    records = arrow.take(pa.array(kept_rows, pa.int64()))
    one_kind = bool(kinds) and kinds.count(kinds[0]) == len(kinds)
    record_kinds = [kinds[0]] * len(kept_rows) if one_kind else [kinds[i] for i in kept_rows.tolist()]
    inserts = arrow.take(pa.array(first[alone], pa.int64()))
    if not changed or not paired.any():
        return records, record_kinds, inserts, [RowKind.INSERT] * inserts.num_rows
    updated = paired[kept_at]  # per kept key, in place order: two changes, else one
    width = 1 + updated.astype(np.int64)
    start = np.cumsum(width) - width
    count_alone, count_paired = inserts.num_rows, int(updated.sum())
    order = np.empty(count_alone + 2 * count_paired, np.int64)
    codes = np.empty(len(order), np.int8)
    order[start[~updated]], codes[start[~updated]] = np.arange(count_alone), 0
    order[start[updated]], codes[start[updated]] = count_alone + np.arange(count_paired), 1
    order[start[updated] + 1], codes[start[updated] + 1] = count_alone + count_paired + np.arange(count_paired), 2
    changes = pa.concat_tables([inserts, before, after]).take(pa.array(order))
    return records, record_kinds, changes, [_CHANGE_KINDS[c] for c in codes.tolist()]


def _integers(table: pa.Table, key_columns: Sequence[str]) -> np.ndarray | None:
    """The values of a key of one integer column without nulls, as numpy (else None)."""
    if len(key_columns) != 1:
        return None
    column = table.column(key_columns[0])
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    return column.to_numpy().astype(np.int64, copy=False) if not pa.types.is_uint64(column.type) else None


def _first_rows_in_python(row_keys: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    first: dict[Any, int] = {}
    counts: dict[Any, int] = {}
    for row, key in enumerate(row_keys):
        first.setdefault(key, row)
        counts[key] = counts.get(key, 0) + 1
    return (np.fromiter(first.values(), np.int64, len(first)),
            np.fromiter((counts[k] for k in first), np.int64, len(first)))


def _places_in_python(row_keys: list[Any], keys: list[Any]) -> np.ndarray:
    at = {key: place for place, key in enumerate(keys)}
    return np.fromiter((at[key] for key in row_keys), np.int64, len(row_keys))
