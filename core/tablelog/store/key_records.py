"""Every record a table holds of some keys, unmerged: what a lookup merges
(:mod:`tablelog.merging`), read as Paimon's lookup reads a key's levels.

Files are read one at a time, only those whose key range (``DataFileMeta`` min/max key)
holds a wanted key, with pypaimon's own reader of key-value files (Arrow batches; older
schemas mapped to the table's by field id, files with or without ``_KEY_`` columns); rows
are filtered by key in Arrow before any Python object is made. With dynamic buckets the
bucket of a key is not known: every bucket's files are pruned by key range.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.merging import KeyValue, MergeOptions, sort_records
from tablelog.records import RowKind
from tablelog.store.compaction import bucket_files
from tablelog.store.layout import SEQUENCE_NUMBER, VALUE_KIND
from tablelog.store.pypaimon_internals import key_value_file_batches

_KINDS = (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE)
Key = tuple[Any, ...]


def key_tuples(table: pa.Table, key_columns: Sequence[str]) -> list[Key]:
    """Each row's values of ``key_columns``, as tuples (a primary key's, in its order)."""
    return list(zip(*(table.column(c).to_pylist() for c in key_columns), strict=True))


def key_records(
    paimon: Any, options: MergeOptions, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
) -> dict[Key, list[KeyValue]]:
    """The records of each key of ``keys`` (primary-key columns) in the files of
    ``snapshot_id`` (None: none) and in ``extra_files`` (uncommitted commit messages),
    each key's in merge order; keys without a record are absent."""
    return records_by_key(key_record_table(paimon, options, snapshot_id, keys, extra_files), options)


def key_record_table(
    paimon: Any, options: MergeOptions, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
) -> pa.Table:
    """The records :func:`key_records` finds, as one Arrow table (:func:`record_schema`),
    in no particular order."""
    primary_key = options.primary_key
    wanted = set(key_tuples(keys, primary_key))
    schema = record_schema(options)
    if not wanted:
        return schema.empty_table()
    groups: list[tuple[tuple[Any, ...], int, Sequence[Any]]] = []
    if snapshot_id is not None:
        groups += [(b.partition, b.bucket, b.files) for b in bucket_files(paimon, snapshot_id)]
    groups += [(tuple(m.partition), int(m.bucket), m.new_files) for m in extra_files if getattr(m, "new_files", None)]
    partition_keys = tuple(paimon.partition_keys or ())
    found: list[pa.Table] = []
    trimmed = [i for i, k in enumerate(primary_key) if k not in partition_keys]
    in_partition: dict[tuple[Any, ...], tuple[set[Key], list[Key], _ValueSets]] = {}  # per partition, once
    for partition, bucket, files in groups:
        if partition not in in_partition:
            candidates = _in_partition(wanted, primary_key, partition_keys, partition)
            whole = len(trimmed) == len(primary_key)  # keys without partition columns: compared whole
            in_partition[partition] = (
                candidates, sorted(candidates) if whole else sorted(tuple(key[i] for i in trimmed) for key in candidates),
                _ValueSets.of_keys(keys, primary_key) if candidates is wanted else _ValueSets(primary_key, candidates))
        candidates, ranges, value_sets = in_partition[partition]
        if not candidates:
            continue
        chosen = [f for f in files if _may_hold(f, ranges)]
        found += _records(paimon, options, schema, partition, bucket, chosen, candidates, value_sets)
    return pa.concat_tables(found) if found else schema.empty_table()


def record_schema(options: MergeOptions) -> pa.Schema:
    """The columns of :func:`key_record_table`: the table's (current schema), then each
    record's sequence number and Paimon row-kind byte."""
    return pa.schema([
        *(pa.field(c, options.types[c]) for c in options.columns),
        pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8()),
    ])


def records_by_key(table: pa.Table, options: MergeOptions) -> dict[Key, list[KeyValue]]:
    """The records of a :func:`key_record_table` as :class:`~tablelog.merging.KeyValue`
    per key, each key's in merge order."""
    columns = options.columns
    values = [table.column(c).to_pylist() for c in columns]
    keys = zip(*(values[columns.index(k)] for k in options.primary_key), strict=True)
    kinds = table.column(VALUE_KIND).to_pylist()
    sequences = table.column(SEQUENCE_NUMBER).to_pylist()
    found: dict[Key, list[KeyValue]] = {}
    for key, row, kind, sequence in zip(keys, zip(*values, strict=True), kinds, sequences, strict=True):
        found.setdefault(key, []).append(KeyValue(_KINDS[kind], dict(zip(columns, row, strict=True)), int(sequence)))
    return {key: sort_records(records, options) for key, records in found.items()}


def _in_partition(wanted: set[Key], primary_key: Sequence[str], partition_keys: Sequence[str],
                  partition: tuple[Any, ...]) -> set[Key]:
    """The wanted keys that can be in ``partition`` (all, unless the key holds partition columns)."""
    at = [(primary_key.index(p), value) for p, value in zip(partition_keys, partition, strict=False) if p in primary_key]
    return {key for key in wanted if all(key[i] == value for i, value in at)} if at else wanted


def _may_hold(file: Any, ranges: list[Key]) -> bool:
    """Whether a file's key range holds one of the sorted ``ranges`` keys."""
    try:
        low, high = tuple(file.min_key.values), tuple(file.max_key.values)
        at = bisect.bisect_left(ranges, low)
        return at < len(ranges) and ranges[at] <= high
    except (AttributeError, TypeError):
        return True  # no comparable range: read it


def _records(
    paimon: Any, options: MergeOptions, schema: pa.Schema, partition: tuple[Any, ...], bucket: int,
    files: Sequence[Any], candidates: set[Key], value_sets: _ValueSets,
) -> Iterator[pa.Table]:
    """The records of ``candidates`` in ``files``, as tables of ``schema``."""
    if not files:
        return
    columns = options.columns
    partition_values = dict(zip(paimon.partition_keys or (), partition, strict=False))
    primary_key = options.primary_key
    for table in _grouped(key_value_file_batches(paimon, partition, bucket, files)):
        mask = _key_mask(table, value_sets)
        if mask is not None:
            table = table.filter(mask)
        n = table.num_rows
        if not n:
            continue
        names = set(table.column_names)
        arrays = [
            table.column(c).cast(options.types[c]) if c in names
            else pa.array([partition_values.get(c)] * n, options.types[c]) for c in columns
        ]
        found = pa.Table.from_arrays(
            [*arrays, table.column(SEQUENCE_NUMBER).cast(pa.int64()), table.column(VALUE_KIND).cast(pa.int8())],
            schema=schema)
        if len(primary_key) > 1:  # the mask is a superset: keep the wanted keys
            found = found.filter(pa.array([key in candidates for key in key_tuples(found, primary_key)], pa.bool_()))
        yield found


#: Rows filtered by key at once: a filter builds its hash set of the wanted keys each
#: time, so batches of one schema are taken together up to this many rows.
_FILTER_ROWS = 65_536


def _grouped(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
    """``batches`` as tables of about ``_FILTER_ROWS`` rows, each of one schema."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if held and (batch.schema != held[0].schema or rows >= _FILTER_ROWS):
            yield pa.Table.from_batches(held)
            held, rows = [], 0
        held.append(batch)
        rows += batch.num_rows
    if held:
        yield pa.Table.from_batches(held)


class _ValueSets:
    """Per key column, the values the wanted keys hold there, as an Arrow array of the
    column's type in a file (made once per type, not per batch)."""

    def __init__(self, primary_key: Sequence[str], candidates: Iterable[Key] = (),
                 values: dict[str, Any] | None = None) -> None:
        if values is None:
            keys = list(candidates)
            values = {column: list({key[i] for key in keys}) for i, column in enumerate(primary_key)}
        self.values: dict[str, Any] = values  # per column, a list or an Arrow array
        self._arrays: dict[tuple[str, pa.DataType], pa.Array] = {}

    @classmethod
    def of_keys(cls, keys: pa.Table, primary_key: Sequence[str]) -> _ValueSets:
        """The value sets of every key of ``keys`` (the key columns), made in Arrow."""
        return cls(primary_key, values={column: pc.unique(keys.column(column)) for column in primary_key})

    def of(self, column: str, type_: pa.DataType) -> pa.Array:
        array = self._arrays.get((column, type_))
        if array is None:
            values = self.values[column]
            array = values.cast(type_) if isinstance(values, pa.Array) else pa.array(values, type_)
            self._arrays[(column, type_)] = array
        return array


def _key_mask(table: pa.Table, value_sets: _ValueSets) -> Any:
    """Rows whose key columns each hold a value of a wanted key (exact for one column;
    a superset for several, checked again per row)."""
    mask = None
    for column in value_sets.values:
        if column not in table.column_names:
            continue
        part = pc.is_in(table.column(column), value_set=value_sets.of(column, table.schema.field(column).type))
        mask = part if mask is None else pc.and_(mask, part)
    return mask
