"""Each key's records in a chunk of merged runs (:mod:`.sorted_runs`) merged into the
key's one record, with the table's merge engine, for compaction.

``deduplicate`` keeps a key's last record in merge order, as pypaimon's merge read does.
The other engines merge as :mod:`tablelog.merging` does key by key (what the table's
reads give, :mod:`.merged_reads`): the common cases are computed for all their keys at
once in Arrow (a key's one insert; several inserts folded by
:func:`tablelog.merging.merged_arrow.merge_stored`; first-row's first record), every
other key (retractions, sequence groups, ``listagg``, a null where the merge refuses
one, an overflow) row by row, only those keys of the chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.merging import KeyValue, MergeEngine, MergeOptions, merge
from tablelog.merging.engines import single_add_is_the_row
from tablelog.merging.merged_arrow import merge_stored, pairs_merge_in_arrow
from tablelog.store.layout import SEQUENCE_NUMBER, VALUE_KIND, retractions
from tablelog.store.merged_reads import KIND_CODES, ROW_KINDS
from tablelog.store.sorted_runs import Chunk, group_ends

#: A chunk's rows merged: one record per key (none for a key the merge removes), in key order.
KeyMerge = Callable[[Chunk], pa.Table]
_INSERT = 0


def key_merge(options: MergeOptions, key: Sequence[str], merged_by_tablelog: bool) -> KeyMerge:
    """The merge of a chunk's keys: pypaimon's deduplicate, or (``merged_by_tablelog``)
    the table's engine as tablelog merges it."""
    if not merged_by_tablelog:
        return lambda chunk: last_records(chunk, key)
    return _EngineMerge(options, tuple(key))


def last_records(chunk: Chunk, key: Sequence[str]) -> pa.Table:
    """Each key's last record (``DeduplicateMergeFunction``: a retraction too)."""
    return chunk.rows if chunk.distinct else chunk.rows.filter(pa.array(group_ends(chunk.rows, key)))


class _EngineMerge:
    """The merge of a chunk's keys in Arrow where it can be: each such key's merged record
    is one of its records (its template: the first, the only one, the last) as it is, or
    as an insert, or as an insert with merged values in place of its own."""

    def __init__(self, options: MergeOptions, key: tuple[str, ...]) -> None:
        self.options = options
        self.key = key
        self.value_schema = pa.schema([pa.field(c, options.types[c]) for c in options.columns])
        self.single_adds = single_add_is_the_row(options)
        self.pairs_in_arrow = pairs_merge_in_arrow(options)

    def __call__(self, chunk: Chunk) -> pa.Table:
        rows = chunk.rows
        ends = np.ones(rows.num_rows, bool) if chunk.distinct else group_ends(rows, self.key)
        keys = _Keys(ends, retractions(rows))
        merged = _Merged(keys.count)
        engine = self.options.engine
        if engine is MergeEngine.FIRST_ROW:
            self._first_rows(keys, merged)
        elif engine in (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATION):
            self._adds(rows, keys, merged)
        parts = [(np.flatnonzero(merged.template >= 0), merged.rows(rows))]
        left = np.flatnonzero(~merged.done[keys.of_row])
        if left.size:
            parts.append(self._row_by_row(rows.take(pa.array(left)), keys.of_row[left], rows.schema))
        return _in_key_order(parts, rows.schema)

    def _first_rows(self, keys: _Keys, merged: _Merged) -> None:
        """``FirstRowMergeFunction``: a key's first record; retractions skipped with
        ``ignore-delete`` (a key of retractions only: no record), else refused (row by row)."""
        if self.options.ignore_delete:
            adds = np.flatnonzero(~keys.retracts)
            firsts = adds[_firsts(keys.of_row[adds])]
            merged.done[:] = True
        else:
            firsts = np.flatnonzero(keys.starts & ~keys.has_retraction[keys.of_row])
        merged.take(keys.of_row[firsts], firsts, as_inserts=False)

    def _adds(self, rows: pa.Table, keys: _Keys, merged: _Merged) -> None:
        """Partial-update and aggregation keys without retractions: a key's one insert is
        its row (as an insert), several are folded pair by pair in Arrow."""
        options = self.options
        clean = ~keys.has_retraction
        if self.single_adds:
            alone = keys.starts & (clean & (keys.sizes == 1))[keys.of_row]
            if options.engine is MergeEngine.PARTIAL_UPDATE:  # its merge refuses a null in a NOT NULL column
                for column in options.columns:
                    if not options.nullable[column]:
                        alone &= rows.column(column).is_valid().to_numpy(zero_copy_only=False)
            chosen = np.flatnonzero(alone)
            merged.take(keys.of_row[chosen], chosen, as_inserts=True)
        several = clean & (keys.sizes > 1) & ~merged.done
        if not (self.pairs_in_arrow and several.any()):
            return
        members = np.flatnonzero(several[keys.of_row])
        records = rows.select([*options.columns, SEQUENCE_NUMBER]).take(pa.array(members))
        folded = merge_stored(options, records, keys.of_row[members], self.value_schema)
        if folded is None:
            return  # those keys row by row
        lasts = np.flatnonzero(keys.ends & several[keys.of_row])  # the merge's sequence number is the last one's
        merged.take(keys.of_row[lasts], lasts, as_inserts=True, values=folded)

    def _row_by_row(self, rows: pa.Table, of_row: np.ndarray, schema: pa.Schema) -> tuple[np.ndarray, pa.Table]:
        """:func:`tablelog.merging.merge` of each key's records, as a merge read gives it
        (:class:`tablelog.store.merged_reads.TablelogMergeFunction`)."""
        names = [n for n in schema.names if not _is_system(n)]  # the value row: every column
        records = rows.to_pylist()
        merged_rows: list[dict[str, Any]] = []
        merged_keys: list[int] = []
        starts = np.flatnonzero(np.r_[True, of_row[1:] != of_row[:-1]])
        for start, end in zip(starts, [*starts[1:], len(records)], strict=True):
            group = records[start:end]
            result = merge([KeyValue(ROW_KINDS[r[VALUE_KIND]], {n: r[n] for n in names}, int(r[SEQUENCE_NUMBER]))
                            for r in group], self.options)
            if result is None:
                continue
            last = group[-1]
            merged_rows.append({
                **{name: last[name] for name in self.key}, SEQUENCE_NUMBER: result.sequence,
                VALUE_KIND: KIND_CODES[result.kind], **{n: result.row.get(n, last[n]) for n in names},
            })
            merged_keys.append(int(of_row[start]))
        return np.array(merged_keys, np.int64), pa.Table.from_pylist(merged_rows, schema=schema)


class _Keys:
    """The keys of a chunk's rows (in key order), from the rows ending a key."""

    def __init__(self, ends: np.ndarray, retracts: np.ndarray) -> None:
        self.ends = ends
        self.retracts = retracts
        self.starts = np.r_[True, ends[:-1]]
        self.of_row = np.cumsum(self.starts) - 1  # each row's key, numbered from 0
        self.count = int(self.of_row[-1]) + 1 if len(ends) else 0
        self.sizes = np.bincount(self.of_row, minlength=self.count)
        self.has_retraction = np.bincount(self.of_row, weights=retracts, minlength=self.count) > 0


def _firsts(of_row: np.ndarray) -> np.ndarray:
    """Per row (of rows in key order), whether it is the first of its key's."""
    return np.r_[True, of_row[1:] != of_row[:-1]] if of_row.size else np.zeros(0, bool)


class _Merged:
    """The keys of a chunk merged in Arrow: per key, the row its record is made of (-1:
    none), whether that becomes an insert, and values folded in place of its own."""

    def __init__(self, count: int) -> None:
        self.template = np.full(count, -1, np.int64)
        self.done = np.zeros(count, bool)  # merged here (with a record or none)
        self._inserts = np.zeros(count, bool)
        self._values: list[tuple[np.ndarray, pa.Table]] = []  # the keys, their folded values

    def take(self, keys: np.ndarray, rows: np.ndarray, *, as_inserts: bool, values: pa.Table | None = None) -> None:
        self.template[keys] = rows
        self.done[keys] = True
        self._inserts[keys] = as_inserts
        if values is not None:
            self._values.append((keys, values))

    def rows(self, rows: pa.Table) -> pa.Table:
        """The merged records, in key order."""
        kept = self.template >= 0
        merged = rows.take(pa.array(self.template[kept]))
        schema = merged.schema
        if self._inserts.any():
            index = schema.get_field_index(VALUE_KIND)
            kinds = np.where(self._inserts[kept], _INSERT, merged.column(index).to_numpy()).astype(np.int8)
            merged = merged.set_column(index, schema.field(index), pa.array(kinds))
        for keys, values in self._values:  # a folded key's values, each in place of its template's
            at = np.zeros(len(self.template), bool)
            at[keys] = True
            mask = pa.array(at[kept])
            for name in values.column_names:
                index = schema.get_field_index(name)
                field = schema.field(index)
                replaced = pc.replace_with_mask(merged.column(index), mask, values.column(name).cast(field.type).combine_chunks())
                merged = merged.set_column(index, field, replaced)
        return merged


def _in_key_order(parts: list[tuple[np.ndarray, pa.Table]], schema: pa.Schema) -> pa.Table:
    parts = [(keys, rows) for keys, rows in parts if rows.num_rows]
    if not parts:
        return schema.empty_table()
    if len(parts) == 1:
        return parts[0][1]
    order = np.argsort(np.concatenate([keys for keys, _ in parts]), kind="stable")
    return pa.concat_tables([rows for _, rows in parts]).take(pa.array(order))


def _is_system(name: str) -> bool:
    return name.startswith("_KEY_") or name in (SEQUENCE_NUMBER, VALUE_KIND)
