"""A snapshot's changes as the table files hold them: the rows of the data files its
commit added (its *delta*), with their row kinds, read as Paimon's streaming reads read
them (``changelog-producer = none``: the delta files are the changelog).

An append table's delta rows are exactly the rows written. A primary-key table's delta
holds what each write left per key, with its kind (``+I``, ``+U``, ``-D``, ``-U``): the
writer merges the changes of one key within one commit into the last of them.

An ``OVERWRITE`` snapshot (a dropped or overwritten partition) removes files rather than
adding changes: its delta is the difference of the rows before and after it, a ``-D``
of each row it removed, then a ``+I`` of each it added (:func:`overwrite_delta`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablelog.store.pypaimon_internals import delta_plan
from tablelog.store.schema import KIND_FIELD

if TYPE_CHECKING:
    from tablelog.store.evolution import SchemaMapping

#: The row-kind column of what :func:`read_delta` returns.
ROW_KIND = "_row_kind"


class DeltaRemovesFilesError(Exception):
    """The snapshot removed data files (an overwrite, a rewrite by another engine): the
    files it added are not its changes, and no delta of it is read."""


def read_delta(
    paimon: Any, snapshot_id: int, buckets: Iterable[int] | None, mapping: Callable[[int], SchemaMapping],
) -> pa.Table | None:
    """The delta rows of ``snapshot_id`` in ``buckets`` (None: every bucket; a ``_row_kind`` column, then the
    columns of the schema ``mapping`` maps into from the id of the schema the snapshot was
    committed under); None when the snapshot or a file of its delta is gone (expired).
    Raises :class:`DeltaRemovesFilesError` for a snapshot that also removed files."""
    # Paimon reads a snapshot in the schema it was committed with (one the table object,
    # opened before an alter, may not know).
    paimon = paimon.copy({"scan.snapshot-id": str(snapshot_id)})
    delta = _read_delta(paimon, snapshot_id, buckets)
    if delta is None:
        return None
    rows = mapping(int(paimon.table_schema.id)).arrow(delta.drop_columns([ROW_KIND]))
    return rows.add_column(0, pa.field(ROW_KIND, pa.string()), delta.column(ROW_KIND).cast(pa.string()))


def _read_delta(paimon: Any, snapshot_id: int, buckets: Iterable[int] | None) -> pa.Table | None:
    from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan

    snapshot = paimon.snapshot_manager().get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        return None
    wanted = None if buckets is None else set(buckets)
    try:
        scan = AsyncStreamingTableScan(paimon, prefetch_enabled=False)
        splits = [s for s in delta_plan(scan, snapshot).splits() if wanted is None or s.bucket in wanted]
        read = paimon.new_stream_read_builder().with_include_row_kind(True).new_read()
        result = read.to_arrow(splits) if splits else None
    except FileNotFoundError:
        return None  # expired while being read
    except ValueError as err:
        # pypaimon's delta plan takes only files a snapshot added, and refuses one that also removed some.
        if "only ADD entries" in str(err):
            raise DeltaRemovesFilesError(f"snapshot {snapshot_id} removed data files") from err
        raise
    if result is None:
        return None if paimon.snapshot_manager().get_snapshot_by_id(snapshot_id) is None else _empty(paimon)
    if KIND_FIELD in result.schema.names:
        result = result.drop_columns([KIND_FIELD])
    return result


def _empty(paimon: Any) -> pa.Table:
    from pypaimon.schema.data_types import PyarrowFieldParser

    fields = [f for f in PyarrowFieldParser.from_paimon_schema(paimon.table_schema.fields) if f.name != KIND_FIELD]
    return pa.schema([pa.field(ROW_KIND, pa.string()), *fields]).empty_table()


def overwrite_delta(before: pa.Table, after: pa.Table) -> pa.Table:
    """The changes from the rows ``before`` to the rows ``after`` (one schema): a ``-D``
    of each row only ``before`` has, then a ``+I`` of each row only ``after`` has."""
    rows_before, rows_after = before.to_pylist(), after.to_pylist()
    kept = Counter(_row_text(row) for row in rows_after) & Counter(_row_text(row) for row in rows_before)
    removed = _without(rows_before, Counter(kept))
    added = _without(rows_after, Counter(kept))
    kinds = ["-D"] * len(removed) + ["+I"] * len(added)
    rows = pa.Table.from_pylist(removed + added, before.schema)
    return rows.add_column(0, pa.field(ROW_KIND, pa.string()), pa.array(kinds, pa.string()))


def _row_text(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=repr)


def _without(rows: list[dict[str, Any]], kept: Counter[str]) -> list[dict[str, Any]]:
    """``rows`` but as many of each row as ``kept`` counts (it is used up)."""
    result = []
    for row in rows:
        text = _row_text(row)
        if kept[text]:
            kept[text] -= 1
        else:
            result.append(row)
    return result
