"""The committer's changes of a merged-changelog table, when the ones its write attempts
computed no longer hold (:mod:`tablelog.commit.merged_conflicts`).

The commit's changes are computed again, for every key it wrote, from the snapshot the
commit follows: before = the merge of the key's records there, after = the merge of those
and the commit's own records (read from its prepared data files, with the sequence
numbers the table will merge them by). They are produced under a token of their own,
and the commit records that token's ranges in place of its attempts' (whose records are
then never committed, like a failed attempt's).

Readers in eventual mode saw the attempts' changes already. Where the commit's changes
leave a key's last record wrong for them (a key with no change of its own: a first-row
key another writer inserted first, a write that left the row as it was), a correction
with the key's true row (``+U``) or its removal (``-D``) is produced first, under
another token that is never committed: transactional readers never see it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pyarrow as pa

from tablelog.commit.leases import log_deletes_before, release_leases
from tablelog.commit.merged_conflicts import merged_receipts
from tablelog.merging import KeyValue, MergeOptions, merge, merged_row
from tablelog.records import RowKind
from tablelog.store.key_records import key_tuples
from tablelog.writing.merged import Key, key_change_lists, key_table

if TYPE_CHECKING:
    from tablelog.commit.log_commit import WriteReceipt
    from tablelog.logs.pool import LogPool
    from tablelog.table_view import TableView

#: The writer id of the committer's write tasks (never a commit's writer id).
REPAIR_WRITER = "tablelog-merged-changes"


class ChangeTask(Protocol):
    """A write task that produces rows to the log under a token of its own, with no data
    files (:meth:`tablelog.writing.write_task.WriteTask.produce_changes`)."""

    def produce_changes(self, rows: pa.Table, kinds: list[RowKind]) -> int: ...
    def finish(self) -> WriteReceipt: ...
    def abort(self) -> None: ...


def repair(
    table: TableView, receipts: Sequence[WriteReceipt], latest: int | None, log_pool: LogPool | None,
    *, new_task: Callable[[str], ChangeTask],
) -> list[WriteReceipt]:
    """``receipts`` with the merged-changelog ones' log records replaced by the commit's
    changes computed after snapshot ``latest``; ``new_task(name)`` opens a task that produces."""
    options = table.files.merge_options
    merged = merged_receipts(receipts)
    if options is None or not merged:
        return list(receipts)
    keys = _distinct_keys([r.written_keys for r in merged], options.primary_key)
    lookup = key_table(keys, options)
    stored = table.files.key_records(latest, lookup)
    new = table.files.key_records(None, lookup, extra_files=[m for r in merged for m in r.paimon_messages])
    rows: list[Mapping[str, Any]] = []
    kinds: list[RowKind] = []
    corrections: list[Mapping[str, Any]] = []
    correction_kinds: list[RowKind] = []
    for key, its_changes in key_change_lists(keys, stored, new, options):
        for kind, row in its_changes:
            rows.append(row)
            kinds.append(kind)
        if not its_changes and new.get(key):  # eventual readers may hold a provisional change of it
            row, kind = _true_row(stored.get(key, []), new[key], options)
            corrections.append(row)
            correction_kinds.append(kind)
    schema = table.codec.schema
    if corrections:
        correction = _produced(new_task("correction"), pa.Table.from_pylist(corrections, schema=schema), correction_kinds)
        if log_deletes_before(table):
            release_leases(table, [correction])  # never to be committed
    changes = _produced(new_task("changes"), pa.Table.from_pylist(rows, schema=schema), kinds)
    repaired = [
        attrs.evolve(r, ranges=(), projection_ranges=()) if any(r is m for m in merged) else r for r in receipts
    ]
    return [*repaired, attrs.evolve(changes, paimon_messages=[])]


def _produced(task: ChangeTask, rows: pa.Table, kinds: list[RowKind]) -> WriteReceipt:
    """``rows`` produced by ``task``, flushed: its receipt."""
    try:
        task.produce_changes(rows, kinds)
        return task.finish()
    except BaseException:
        task.abort()
        raise


def _distinct_keys(tables: Sequence[pa.Table], key_columns: Sequence[str]) -> list[Key]:
    keys: dict[Key, None] = {}
    for table in tables:
        keys.update(dict.fromkeys(key_tuples(table, key_columns)))
    return list(keys)


def _true_row(stored: list[KeyValue], new: list[KeyValue], options: MergeOptions) -> tuple[Mapping[str, Any], RowKind]:
    """A correction of a key the commit leaves unchanged: its true row as a ``+U``, or a
    ``-D`` when the table holds none (the row the commit's record carries)."""
    after = merged_row(merge([*stored, *new], options))
    return (after, RowKind.UPDATE_AFTER) if after is not None else (new[-1].row, RowKind.DELETE)
