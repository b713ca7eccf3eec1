"""A snapshot's changes, read from the table files.

A table whose log carries its writes (``merge-engine = deduplicate`` without
``changelog-producer = lookup``) has them in its delta: per key, the row each write left,
with its kind (:mod:`~tablelog.store.deltas`). A table whose log carries the merged
changelog (every other engine, and deduplicate with ``lookup``) holds the writers'
*inputs* there: partial rows, increments, repeated keys. Its changes are, for each key k
of the snapshot's delta, what Paimon's ``lookup`` changelog producer emits between the
table's merged rows before and after it: ``changelog(state_{N-1}(k), state_N(k))``
(:func:`tablelog.merging.changelog`). Only those keys' rows are read, in the buckets and
table partitions they live in.

The relay publishes another writer's snapshot of a deduplicate table the same way, with
row-deduplicate always on (:func:`lookup_options`): its delta has no before-images.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablelog.merging import MergeOptions, changelog
from tablelog.store.deltas import ROW_KIND
from tablelog.store.key_records import key_tuples

if TYPE_CHECKING:
    from tablelog.store.files import TableFiles

Key = tuple[Any, ...]
_ROW_NUMBER = "__row_number"


def merge_options(files: TableFiles) -> MergeOptions | None:
    """The table's merge when its log carries the merged changelog; None otherwise (and
    for a table without a primary key, which Paimon never merges)."""
    return files.merge_options


def lookup_options(files: TableFiles) -> MergeOptions:
    """How a snapshot's changes are computed from the rows before and after it: the
    table's merge when its log carries the merged changelog, else Paimon's ``lookup``
    producer on a deduplicate table with ``changelog-producer.row-deduplicate`` (a row
    written again unchanged is no change)."""
    merged = merge_options(files)
    if merged is not None:
        return merged
    schema, keys = files.schema, files.primary_key
    return MergeOptions(
        columns=tuple(schema.names), types={f.name: f.type for f in schema},
        nullable={f.name: f.nullable and f.name not in keys for f in schema}, primary_key=keys, row_deduplicate=True,
    )


def snapshot_changes(files: TableFiles, snapshot_id: int, delta: pa.Table, schema_id: int | None = None) -> pa.Table | None:
    """The changes of snapshot ``snapshot_id`` whose delta rows are ``delta`` (all of them,
    or those of some buckets or log partitions, as :meth:`~tablelog.store.TableFiles.read_delta`
    returns them, in schema ``schema_id``), in the same shape: ``delta`` itself where the
    log carries the writes, else :func:`delta_changes` of it. None: the snapshot before it
    has expired (or this one, while being read)."""
    options = merge_options(files)
    return delta if options is None else delta_changes(files, snapshot_id, delta, options, schema_id)


def delta_changes(
    files: TableFiles, snapshot_id: int, delta: pa.Table, options: MergeOptions, schema_id: int | None = None,
) -> pa.Table | None:
    """``changelog(state_{N-1}(k), state_N(k), options)`` for every key k of ``delta``
    (rows of snapshot ``snapshot_id``'s delta, in schema ``schema_id``), keys in the order
    they first appear there; the same shape as ``delta``. None when the snapshot or the one
    before it has expired."""
    if delta.num_rows == 0:
        return delta
    keys = delta.select(list(files.primary_key)).group_by(list(files.primary_key)).aggregate([])
    order = list(dict.fromkeys(key_tuples(delta, files.primary_key)))
    buckets = _buckets(files, keys)
    partitions = _table_partitions(files, keys)
    try:
        before = _rows_by_key(files, snapshot_id - 1, keys, buckets, partitions, schema_id)
        after = _rows_by_key(files, snapshot_id, keys, buckets, partitions, schema_id)
    except FileNotFoundError:  # expired while being read
        return None
    if before is None or after is None:
        return None
    rows: list[Mapping[str, Any]] = []
    kinds: list[str] = []
    for key in order:
        for kind, row in changelog(before.get(key), after.get(key), options):
            kinds.append(kind.value)
            rows.append(row)
    columns = delta.drop_columns([ROW_KIND])
    changes = pa.Table.from_pylist([dict(r) for r in rows], schema=columns.schema)
    return changes.add_column(0, delta.schema.field(ROW_KIND), pa.array(kinds, delta.schema.field(ROW_KIND).type))


def _buckets(files: TableFiles, keys: pa.Table) -> list[int] | None:
    """The buckets the keys live in (None: every bucket, where they do not follow from the key)."""
    if files.bucket <= 0:
        return None
    return [bucket for bucket, _ in files.key_hash_rows(keys, files.bucket)]


def _table_partitions(files: TableFiles, keys: pa.Table) -> list[dict[str, Any]] | None:
    """The table partitions the keys live in (the partition columns are part of the key)."""
    if not files.partition_keys:
        return None
    return keys.select(list(files.partition_keys)).group_by(list(files.partition_keys)).aggregate([]).to_pylist()


def _rows_by_key(
    files: TableFiles, snapshot_id: int, keys: pa.Table, buckets: list[int] | None,
    partitions: list[dict[str, Any]] | None, schema_id: int | None,
) -> dict[Key, dict[str, Any]] | None:
    """The merged rows of ``keys`` at ``snapshot_id`` (none before the first), by key; None: expired."""
    if snapshot_id < 1:
        return {}
    if files.snapshot(snapshot_id) is None:
        return None
    primary_key = list(files.primary_key)
    rows = files.read_rows(snapshot_id, buckets, schema_id, partitions=partitions)
    # Joined on the key columns alone: Arrow joins refuse nested types in the other columns.
    numbered = rows.select(primary_key).append_column(_ROW_NUMBER, pa.array(range(rows.num_rows), pa.int64()))
    wanted = numbered.join(keys, primary_key, join_type="left semi").column(_ROW_NUMBER)
    rows = rows.take(wanted)
    return dict(zip(key_tuples(rows, primary_key), rows.to_pylist(), strict=True))

