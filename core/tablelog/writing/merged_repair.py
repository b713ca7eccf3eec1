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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pyarrow as pa

from tablelog.commit.leases import log_deletes_before, release_leases
from tablelog.commit.merged_conflicts import merged_receipts
from tablelog.merging import merge, merged_row
from tablelog.records import RowKind
from tablelog.writing.merged import Key, key_changes, key_table

if TYPE_CHECKING:
    from tablelog.commit.log_commit import WriteReceipt
    from tablelog.logs.pool import LogPool
    from tablelog.table_view import TableView

#: The writer id of the committer's write tasks (never a commit's writer id).
REPAIR_WRITER = "tablelog-merged-changes"


class ChangeTask(Protocol):
    """A write task that produces rows to the log under a token of its own, with no data
    files (:meth:`tablelog.writing.writer.WriteTask.produce_changes`)."""

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
    rows, kinds = key_changes(keys, stored, new, options)
    schema = table.codec.schema
    corrections, correction_kinds = _corrections(keys, stored, new, rows, options)
    if corrections:
        task = new_task("correction")
        try:
            task.produce_changes(pa.Table.from_pylist(corrections, schema=schema), correction_kinds)
            correction = task.finish()
        except BaseException:
            task.abort()
            raise
        if log_deletes_before(table):
            release_leases(table, [correction])  # never to be committed
    task = new_task("changes")
    try:
        task.produce_changes(pa.Table.from_pylist(rows, schema=schema), kinds)
        changes = task.finish()
    except BaseException:
        task.abort()
        raise
    repaired = [
        attrs.evolve(r, ranges=(), projection_ranges=()) if any(r is m for m in merged) else r for r in receipts
    ]
    return [*repaired, attrs.evolve(changes, paimon_messages=[])]


def _distinct_keys(tables: Sequence[Any], key_columns: Sequence[str]) -> list[Key]:
    keys: dict[Key, None] = {}
    for table in tables:
        columns = [table.column(c).to_pylist() for c in key_columns]
        keys.update(dict.fromkeys(zip(*columns, strict=True)))
    return list(keys)


def _corrections(keys: Sequence[Key], stored: Any, new: Any, changes: Sequence[Any], options: Any,
                 ) -> tuple[list[dict[str, Any]], list[RowKind]]:
    """For each key whose changes are none: its true row as a ``+U``, or a ``-D`` when the
    table holds none (the row the commit's record carries)."""
    changed = {tuple(row[c] for c in options.primary_key) for row in changes}
    rows: list[dict[str, Any]] = []
    kinds: list[RowKind] = []
    for key in keys:
        if key in changed or not new.get(key):
            continue
        after = merged_row(merge([*stored.get(key, []), *new[key]], options))
        if after is not None:
            rows.append(dict(after))
            kinds.append(RowKind.UPDATE_AFTER)
        else:
            rows.append(dict(new[key][-1].row))
            kinds.append(RowKind.DELETE)
    return rows, kinds
