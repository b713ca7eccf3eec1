"""Every record a table holds of some keys, unmerged: what a lookup merges
(:mod:`tablelog.merging`), read as Paimon's lookup reads a key's levels.

Only the files whose key range (``DataFileMeta`` min/max key) holds a wanted key are
read: each decoded once by pypaimon's own reader of key-value files (older schemas mapped
to the table's by field id, files with or without ``_KEY_`` columns) into the machine's
lookup cache (:mod:`.lookup_cache`), from which later lookups map it; rows are filtered
by key in Arrow before any Python object is made. With dynamic buckets the bucket of a
key is not known: every bucket's files are pruned by key range.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.merging import KeyValue, MergeOptions, sort_records
from tablelog.records import RowKind
from tablelog.store.compaction import bucket_files
from tablelog.store.integer_keys import IntegerKeys
from tablelog.store.layout import SEQUENCE_NUMBER, VALUE_KIND
from tablelog.store.lookup_cache import LookupCache, decoded_records, record_schema

_KINDS = (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE)
Key = tuple[Any, ...]


def key_tuples(table: pa.Table, key_columns: Sequence[str]) -> list[Key]:
    """Each row's values of ``key_columns``, as tuples (a primary key's, in its order)."""
    return list(zip(*(table.column(c).to_pylist() for c in key_columns), strict=True))


def key_records(
    paimon: Any, options: MergeOptions, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
    cache: LookupCache | None = None,
) -> dict[Key, list[KeyValue]]:
    """The records of each key of ``keys`` (primary-key columns) in the files of
    ``snapshot_id`` (None: none) and in ``extra_files`` (uncommitted commit messages),
    each key's in merge order; keys without a record are absent. ``cache``: where decoded
    files are kept (None: each file is decoded again)."""
    return records_by_key(key_record_table(paimon, options, snapshot_id, keys, extra_files, cache), options)


def key_record_table(
    paimon: Any, options: MergeOptions, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
    cache: LookupCache | None = None, buckets: Collection[int] | None = None,
) -> pa.Table:
    """The records :func:`key_records` finds, as one Arrow table (:func:`record_schema`),
    in no particular order. ``buckets``: the keys are all in these buckets (of every
    table partition): only their files are read."""
    primary_key = options.primary_key
    schema = record_schema(options)
    if not keys.num_rows:
        return schema.empty_table()
    groups: list[tuple[tuple[Any, ...], int, Sequence[Any]]] = []
    if snapshot_id is not None:
        groups += [(b.partition, b.bucket, b.files) for b in bucket_files(paimon, snapshot_id)]
    groups += [(tuple(m.partition), int(m.bucket), m.new_files) for m in extra_files if getattr(m, "new_files", None)]
    partition_keys = tuple(paimon.partition_keys or ())
    wanted = _WantedKeys(keys, primary_key, partition_keys)
    chosen: dict[tuple[Any, ...], tuple[_InPartition, list[tuple[int, Any]]]] = {}
    for partition, bucket, files in groups:
        if buckets is not None and bucket not in buckets:
            continue
        in_partition = wanted.in_partition(partition)
        if in_partition is not None:
            chosen.setdefault(partition, (in_partition, []))[1].extend(
                (bucket, f) for f in files if in_partition.may_hold(f))
    found: list[pa.Table] = []
    for partition, (in_partition, its_files) in chosen.items():
        found += _records(paimon, options, schema, partition, its_files, in_partition, cache)
    return pa.concat_tables(found) if found else schema.empty_table()


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


class _WantedKeys:
    """The keys of a lookup, as each partition can hold them (:meth:`in_partition`).

    Keys without partition columns are the same in every partition, worked out once, and
    with one key column in Arrow and numpy: no Python object per key. Keys holding
    partition columns are Python tuples, those of each partition picked out of them."""

    def __init__(self, keys: pa.Table, primary_key: Sequence[str], partition_keys: Sequence[str]) -> None:
        self._keys = keys
        self._primary_key = primary_key
        self._in_key = [(primary_key.index(p), value_at) for value_at, p in enumerate(partition_keys)
                        if p in primary_key]
        self._wanted: set[Key] | None = None
        self._partitions: dict[tuple[Any, ...], _InPartition | None] = {}

    def in_partition(self, partition: tuple[Any, ...]) -> _InPartition | None:
        """The wanted keys ``partition`` can hold (None: none)."""
        at = () if not self._in_key else partition
        if at not in self._partitions:
            self._partitions[at] = self._of_partition(partition) if self._in_key else self._everywhere()
        return self._partitions[at]

    def _everywhere(self) -> _InPartition:
        primary_key = self._primary_key
        if len(primary_key) == 1:
            column = self._keys.column(primary_key[0])
            if pa.types.is_integer(column.type) and not column.null_count:
                ranges = np.sort(column.to_numpy())
                if len(ranges) > 1 and bool(np.any(ranges[1:] == ranges[:-1])):
                    ranges = np.unique(ranges)
                values = pa.array(ranges, column.type)
                return _InPartition(ranges, _ValueSets(primary_key, values={primary_key[0]: values}), None, single=True)
        value_sets = _ValueSets.of_keys(self._keys, primary_key)
        if len(primary_key) == 1:
            values = value_sets.values[primary_key[0]]
            return _InPartition(values.take(pc.sort_indices(values)).to_pylist(), value_sets, None, single=True)
        wanted = self._wanted_tuples()
        return _InPartition(sorted(wanted), value_sets, wanted)

    def _of_partition(self, partition: tuple[Any, ...]) -> _InPartition | None:
        at = [(i, partition[value_at]) for i, value_at in self._in_key if value_at < len(partition)]
        wanted = self._wanted_tuples()
        candidates = {key for key in wanted if all(key[i] == value for i, value in at)} if at else wanted
        if not candidates:
            return None
        trimmed = [i for i in range(len(self._primary_key)) if i not in {i for i, _ in self._in_key}]
        ranges = sorted(tuple(key[i] for i in trimmed) for key in candidates)
        return _InPartition(ranges, _ValueSets(self._primary_key, candidates), candidates)

    def _wanted_tuples(self) -> set[Key]:
        if self._wanted is None:
            self._wanted = set(key_tuples(self._keys, self._primary_key))
        return self._wanted


@attrs.frozen
class _InPartition:
    """The wanted keys one partition can hold."""

    #: Sorted: the key values (``single``: one key column; a numpy array for an integer
    #: column), else key tuples without the partition's columns, as files' key ranges are.
    ranges: Any
    value_sets: _ValueSets
    #: The keys, for the exact check of rows that several key columns' masks let through
    #: (None: the mask of one key column is exact).
    candidates: set[Key] | None
    single: bool = False
    #: One integer key column's keys (``ranges``), found in files by :class:`IntegerKeys`.
    integer_keys: IntegerKeys | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.ranges, np.ndarray):
            object.__setattr__(self, "integer_keys", IntegerKeys(self.ranges))

    def may_hold(self, file: Any) -> bool:
        """Whether a file's key range (``DataFileMeta`` min/max key) holds a wanted key."""
        ranges = self.ranges
        try:
            low, high = tuple(file.min_key.values), tuple(file.max_key.values)
            if self.single:
                low, high = low[0], high[0]
            at = int(np.searchsorted(ranges, low)) if isinstance(ranges, np.ndarray) else bisect.bisect_left(ranges, low)
            return bool(at < len(ranges) and ranges[at] <= high)
        except (AttributeError, TypeError, IndexError, ValueError, OverflowError):
            return True  # no comparable range: read it


def _records(
    paimon: Any, options: MergeOptions, schema: pa.Schema, partition: tuple[Any, ...],
    files: Sequence[tuple[int, Any]], wanted: _InPartition, cache: LookupCache | None,
) -> Iterator[pa.Table]:
    """The records of the ``wanted`` keys in ``files`` (bucket, data file) of ``partition``,
    as tables of ``schema``, copied out of the cache's mapped files."""
    primary_key = options.primary_key
    tables = _file_tables(paimon, options, schema, partition, files, cache)
    if wanted.integer_keys is not None:
        # Only the found rows are copied out of a mapped file.
        for table in tables:
            indices = wanted.integer_keys.positions(table.column(primary_key[0]))
            found = table.filter(_key_mask(table, wanted.value_sets)) if indices is None else table.take(indices)
            if found.num_rows:
                yield found
        return
    # Files are filtered a group at a time, so that one group's rows are held (decoded) or
    # mapped (from the cache: their pages count in the process's resident memory) at once.
    for table in _grouped(tables, _MAPPED_BYTES if cache is not None else None):
        found = table.filter(_key_mask(table, wanted.value_sets))
        if not found.num_rows:
            continue
        if wanted.candidates is not None:  # the mask is a superset: keep the wanted keys
            candidates = wanted.candidates
            found = found.filter(pa.array([key in candidates for key in key_tuples(found, primary_key)], pa.bool_()))
        yield found


def _file_tables(
    paimon: Any, options: MergeOptions, schema: pa.Schema, partition: tuple[Any, ...],
    files: Sequence[tuple[int, Any]], cache: LookupCache | None,
) -> Iterator[pa.Table]:
    for bucket, file in files:
        if cache is None:
            yield decoded_records(paimon, options, schema, partition, bucket, file)
        else:
            yield cache.file_records(paimon, options, partition, bucket, file)


#: Rows filtered by key at once: a filter builds its set of the wanted keys each time, so
#: decoded files are taken together up to this many rows.
_FILTER_ROWS = 65_536
#: Bytes of mapped cache files filtered at once (:mod:`.lookup_cache`): a group's pages
#: stay mapped until it is filtered.
_MAPPED_BYTES = 32 * 2**20


def _grouped(tables: Iterable[pa.Table], max_bytes: int | None) -> Iterator[pa.Table]:
    """``tables`` (of one schema) concatenated into groups of about ``_FILTER_ROWS`` rows,
    or with ``max_bytes`` of about that many bytes."""
    held: list[pa.Table] = []
    size = 0
    for table in tables:
        if held and size >= (max_bytes or _FILTER_ROWS):
            yield pa.concat_tables(held)
            held, size = [], 0
        held.append(table)
        size += table.nbytes if max_bytes else table.num_rows
    if held:
        yield pa.concat_tables(held)


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
        values, wanted = table.column(column), value_sets.of(column, table.schema.field(column).type)
        if pa.types.is_integer(values.type) and not values.null_count and not wanted.null_count:
            part = pa.array(np.isin(values.to_numpy(), wanted.to_numpy()))  # whole, so that numpy may choose its table method
        else:
            part = pc.is_in(values, value_set=wanted)
        mask = part if mask is None else pc.and_(mask, part)
    return mask
