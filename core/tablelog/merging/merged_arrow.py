"""The merge of one stored record and one new record per key, both adds, in Arrow: the
common case of a write to a key the table holds once (a partial-update table filled
column by column, an aggregation table counting), computed for every such key at once
rather than by :func:`tablelog.merging.merge` key by key.

Each function here gives what the row-by-row merge gives (``tablelog.merging.engines``
and ``aggregators``) for that case; a case it does not cover (a sequence field,
sequence groups, ``listagg``, decimals, an overflow, a null in a NOT NULL column) returns
None and the caller merges those keys row by row, which also raises the merge's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.merging.options import MergeEngine, MergeOptions

#: Paimon's column of each record's sequence number (write order).
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"


def pairs_merge_in_arrow(options: MergeOptions) -> bool:
    """Whether :func:`merge_pairs` covers the table's merge (it may still return None
    for particular rows)."""
    if options.sequence_fields or options.row_deduplicate:
        return False
    if options.engine is MergeEngine.PARTIAL_UPDATE:
        return not options.sequence_groups
    if options.engine is MergeEngine.AGGREGATION:
        return all(f.function in _AGGREGATES for f in options.functions.values())
    return True


def merge_stored(options: MergeOptions, records: pa.Table, places: np.ndarray, schema: pa.Schema) -> pa.Table | None:
    """Per key, the merge of its stored ``records`` (adds only, with their sequence
    numbers; ``places[i]``: the key of record i, as its place in the attempt), one row per
    key in ascending place, in ``schema``: the records folded in sequence order, each
    fold step a :func:`merge_pairs`. None when the row-by-row merge must do it."""
    count = len(places)
    order = np.argsort(places)  # a key's several records are put in sequence order below
    starts = np.ones(count, bool)
    starts[1:] = np.diff(places[order]) != 0
    several = not starts.all()
    if several:  # each key's records in sequence order: those of keys with several sorted again
        alone = starts & np.append(starts[1:], True)
        again = order[~alone]
        order[~alone] = again[np.lexsort((records.column(SEQUENCE_NUMBER).to_numpy()[again], places[again]))]
    rows = records.select(list(options.columns)).cast(schema).take(pa.array(order, pa.int64()))
    if not several:  # one record per key: it is the key's merge
        return rows
    index = np.arange(count)
    rank = index - np.maximum.accumulate(np.where(starts, index, 0))  # a record's place in its key's order
    key_of = np.cumsum(starts) - 1  # a record's key, as its row in ``merged``
    merged = rows.filter(pa.array(starts))
    for step in range(1, int(rank.max()) + 1):
        chosen = np.flatnonzero(rank == step)
        at = key_of[chosen]
        folded = merge_pairs(options, merged.take(pa.array(at, pa.int64())), rows.take(pa.array(chosen)), schema)
        if folded is None:
            return None
        rows_after = np.arange(merged.num_rows)  # the folded rows take their keys' places
        rows_after[at] = merged.num_rows + np.arange(len(at))
        merged = pa.concat_tables([merged, folded]).take(pa.array(rows_after, pa.int64()))
    return merged


def merge_pairs(options: MergeOptions, stored: pa.Table, new: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """Row i: the merged row of ``stored``'s row i (older) and ``new``'s row i (newer),
    both adds of the same key, in ``schema``; None when the row-by-row merge must do it."""
    columns = options.columns
    if any(not options.nullable[c] and (stored.column(c).null_count or new.column(c).null_count) for c in columns):
        return None
    engine = options.engine
    if engine is MergeEngine.DEDUPLICATE:
        return new
    if engine is MergeEngine.FIRST_ROW:
        return stored
    merged: list[Any] = []
    for column in columns:
        older, newer = stored.column(column), new.column(column)
        if engine is MergeEngine.PARTIAL_UPDATE:
            value = pc.coalesce(newer, older)
        else:
            value = _AGGREGATES[options.functions[column].function](older, newer, options.types[column])
        if value is None:
            return None
        merged.append(value)
    return pa.Table.from_arrays(merged, schema=schema)


def _null_skipping(combine: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An aggregator that skips nulls: the other input where one is null, else ``combine``."""

    def aggregate(accumulator: Any, value: Any) -> Any:
        both = pc.and_(pc.is_valid(accumulator), pc.is_valid(value))
        return pc.if_else(both, combine(accumulator, value), pc.coalesce(value, accumulator))

    return aggregate


def _sum(accumulator: Any, value: Any, type_: pa.DataType) -> Any:
    """``Sum``: integers overflow as errors (then None: the row-by-row merge raises)."""
    if pa.types.is_integer(type_):
        try:
            return _null_skipping(pc.add_checked)(accumulator, value)
        except pa.ArrowInvalid:
            return None
    if pa.types.is_float32(type_) or pa.types.is_float64(type_):
        return _null_skipping(pc.add)(accumulator, value)
    return None  # decimals: scale and precision as Java's DecimalUtils, row by row


def _min_max(function: Callable[..., Any]) -> Callable[[Any, Any, pa.DataType], Any]:
    """``Min``/``Max`` of integers (other types compare as Java does: row by row)."""

    def aggregate(accumulator: Any, value: Any, type_: pa.DataType) -> Any:
        return function(accumulator, value, skip_nulls=True) if pa.types.is_integer(type_) else None

    return aggregate


_AGGREGATES: dict[str, Callable[[Any, Any, pa.DataType], Any]] = {
    "sum": _sum,
    "min": _min_max(pc.min_element_wise),
    "max": _min_max(pc.max_element_wise),
    "last_value": lambda accumulator, value, type_: value,
    "last_non_null_value": lambda accumulator, value, type_: pc.coalesce(value, accumulator),
    "first_value": lambda accumulator, value, type_: accumulator,
    "first_non_null_value": lambda accumulator, value, type_: pc.coalesce(accumulator, value),
    "first_not_null_value": lambda accumulator, value, type_: pc.coalesce(accumulator, value),
    "bool_and": lambda accumulator, value, type_: _null_skipping(pc.and_)(accumulator, value),
    "bool_or": lambda accumulator, value, type_: _null_skipping(pc.or_)(accumulator, value),
    "primary-key": lambda accumulator, value, type_: value,
}
