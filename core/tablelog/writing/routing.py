"""Routing: each row's log partition, and the rows of given log partitions.

Fixed buckets: log partition = the row's Paimon bucket. Dynamic buckets (``bucket =
-1``): Paimon picks a key's bucket from an index of the keys it has seen, so the bucket
says nothing a reader or another writer could compute; the log partition is Paimon's
bucket hash of the bucket key modulo the log's partition count instead
(:func:`log_modulus`), the same for every writer, for good.

Paimon decides a row's bucket by a Murmur3 hash of the bucket key serialized as a
``BinaryRow``. For integer keys (the common case) this module computes the same
hash vectorized with numpy (:mod:`tablelog.store.integer_hash`); any other key type goes through Paimon's own
extractor (:meth:`tablelog.store.TableFiles.key_hash_rows`). A test checks both
agree, so tablelog's partitions stay identical to the buckets every Paimon engine
(Java, Rust, Python) writes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from tablelog.store.integer_hash import INTEGER_WIDTHS, grouped, integer_key_buckets

if TYPE_CHECKING:
    from tablelog.store import TableFiles



def log_modulus(store: TableFiles, log_partitions: int) -> int:
    """What a row's key hash is taken modulo to give its log partition: the bucket count
    (bucket b is partition b), or with dynamic buckets the log's ``log_partitions``."""
    return store.bucket if store.bucket > 0 else log_partitions


def partition_order(
    store: TableFiles, data: pa.Table, log_partitions: int
) -> tuple[np.ndarray | None, list[tuple[int, int, int]]]:
    """The rows grouped by log partition: ``(order, groups)``, where ``order`` lists row
    indices, partitions ascending and rows in input order within each, and every
    ``(partition, start, stop)`` of ``groups`` is one partition's slice of it.
    ``order`` is None when the input order already is that order (one partition).

    Slices rather than index lists: the writer encodes the rows in this order and
    hands each partition a slice of the encoded values, no per-row look-up."""
    n = data.num_rows
    if n == 0:
        return None, []
    modulus = log_modulus(store, log_partitions)
    if modulus == 1:
        return None, [(0, 0, n)]
    keys = list(store.log_key)
    if keys and all(data.schema.field(k).type in INTEGER_WIDTHS for k in keys):
        order, groups = grouped(integer_key_buckets([data.column(k) for k in keys], modulus), modulus)
    else:
        by_hash = store.key_hash_rows(data, modulus)
        order = np.fromiter((i for _, rows in by_hash for i in rows), np.int64, n)
        groups, start = [], 0
        for bucket, rows in by_hash:
            groups.append((bucket, start, start + len(rows)))
            start += len(rows)
    if len(groups) == 1:
        return None, groups
    return order, groups


def log_partition_rows(
    store: TableFiles, log_partitions: int, snapshot_id: int | None, wanted: Collection[int] | None,
    schema_id: int | None = None, table_partitions: Sequence[Mapping[str, Any]] | None = None,
) -> pa.Table:
    """The table's rows at ``snapshot_id`` (default the latest) whose log partition is in
    ``wanted`` (None: every row), in schema ``schema_id``, in ``table_partitions`` (None:
    all): fixed buckets read only those buckets' files; dynamic buckets read every row and
    keep those whose key hashes there."""
    if wanted is None:
        return store.read_rows(snapshot_id, None, schema_id, partitions=table_partitions)
    if store.bucket > 0:
        return store.read_rows(snapshot_id, sorted(wanted), schema_id, partitions=table_partitions)
    rows = store.read_rows(snapshot_id, None, schema_id, partitions=table_partitions)
    return _keep(store, rows, wanted, log_partitions)


def log_partition_delta(
    store: TableFiles, log_partitions: int, snapshot_id: int, wanted: Collection[int], schema_id: int | None = None
) -> pa.Table | None:
    """The rows snapshot ``snapshot_id`` added whose log partition is in ``wanted``, with
    their row kinds, in schema ``schema_id`` (:meth:`~tablelog.store.TableFiles.read_delta`); None: expired."""
    if store.bucket > 0:
        return store.read_delta(snapshot_id, sorted(wanted), schema_id)
    delta = store.read_delta(snapshot_id, None, schema_id)
    return None if delta is None else _keep(store, delta, wanted, log_partitions)


def _keep(store: TableFiles, rows: pa.Table, wanted: Collection[int], log_partitions: int) -> pa.Table:
    """The ``rows`` whose log partition is in ``wanted``, in their order."""
    if rows.num_rows == 0 or set(range(log_partitions)) <= set(wanted):
        return rows
    order, groups = partition_order(store, rows, log_partitions)
    keep = [np.arange(start, stop) for partition, start, stop in groups if partition in wanted]
    if not keep:
        return rows.slice(0, 0)
    selected = np.concatenate(keep)
    indices = selected if order is None else np.sort(order[selected])
    return rows.take(pa.array(indices, pa.int64()))
