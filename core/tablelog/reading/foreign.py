"""Snapshots other writers committed (*foreign* snapshots: pypaimon used directly, a
Flink or Spark Paimon job, a ``DELETE FROM``, a procedure): they have no log-commit
record, so their changes are in the table files only, and readers take them from there
(:func:`~tablelog.commit.log_commit.is_foreign` tells them apart; compactions carry none).

A snapshot that only added files (``APPEND``) gives its delta, as the log would have
given its records: per key what the commit left, with its row kind; on a table whose log
carries the merged changelog (a merge engine, ``changelog-producer = lookup``), the diff
of the table's merged rows before and after it for the keys it wrote, as tablelog's own
writers put in the log (:func:`tablelog.store.snapshot_changes`). A snapshot that also
removed files (``OVERWRITE``, a rewrite) gives the difference between the rows before it
and after it, per log partition: ``-D`` for each row it removed, then ``+I`` for each it
added (an unchanged row is neither).

A transactional reader's position inside a foreign snapshot counts, per log partition,
the changes of it already returned (the partitions are read in order, so the partitions
below the highest one named are done). The changes of a snapshot's partition come in the
same order at every read of the same files, so a position resumed there neither repeats
nor skips one.

An eventual reader returns a foreign snapshot's changes (at least once, like every
change it returns) when it has found the snapshot and read the log up to where the log
ended at the log commit before it, so that no change committed before the snapshot comes
after its changes (:class:`ForeignSnapshotsSeen`).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from tablelog.commit.history import last_end_positions
from tablelog.errors import TablelogError
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.reading.table_changes import delta_changes, partition_delta, partition_rows
from tablelog.records import RowKind
from tablelog.row_equality import row_items, row_key
from tablelog.store import DeltaRemovesFilesError

if TYPE_CHECKING:
    from tablelog.commit.log_commit import LogCommitRecord
    from tablelog.positions import ReaderPosition
    from tablelog.reading.batch import Batch
    from tablelog.store import SnapshotInfo

log = logging.getLogger(__name__)


def foreign_changes(context: ReadContext, snapshot: SnapshotInfo, partition: int) -> list[Change]:
    """The changes foreign snapshot ``snapshot`` made in log partition ``partition``, from the files."""
    if snapshot.commit_kind != "OVERWRITE":
        try:
            delta = partition_delta(context, snapshot.id, partition)
        except DeltaRemovesFilesError:
            return _difference(context, snapshot, partition)
        if delta is None:
            raise _expired(context, snapshot.id)
        return delta_changes(context, delta, snapshot.id, partition)
    return _difference(context, snapshot, partition)


def _difference(context: ReadContext, snapshot: SnapshotInfo, partition: int) -> list[Change]:
    """What turns the partition's rows before ``snapshot`` into its rows after it."""
    files = context.table.files
    for needed in (snapshot.id - 1, snapshot.id) if snapshot.id > 1 else (snapshot.id,):
        if files.snapshot(needed) is None:
            told_by = f"snapshot {snapshot.id} overwrote rows that only snapshot {needed} holds, and "
            raise _expired(context, needed, told_by if needed < snapshot.id else "")
    try:
        before = partition_rows(context, snapshot.id - 1, partition).to_pylist() if snapshot.id > 1 else []
        after = partition_rows(context, snapshot.id, partition).to_pylist()
    except FileNotFoundError:
        raise _expired(context, snapshot.id) from None
    keys = context.table.primary_key
    removed: list[dict[str, Any]]
    added: list[dict[str, Any]]
    if keys:
        old = {row_key(r, keys): r for r in before}
        new = {row_key(r, keys): r for r in after}
        removed = [r for k, r in old.items() if k not in new or row_items(new[k]) != row_items(r)]
        added = [r for k, r in new.items() if k not in old or row_items(old[k]) != row_items(r)]
    else:
        removed, added = _surplus(before, after), _surplus(after, before)
    return [Change(RowKind.DELETE, row, snapshot.id, partition, None) for row in removed] + [
        Change(RowKind.INSERT, row, snapshot.id, partition, None) for row in added
    ]


def _surplus(rows: list[dict[str, Any]], other: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``rows`` that ``other`` does not hold as many times (as multisets)."""
    left = Counter(row_items(r) for r in other)
    result = []
    for row in rows:
        items = row_items(row)
        if left[items] > 0:
            left[items] -= 1
        else:
            result.append(row)
    return result


def _expired(context: ReadContext, snapshot_id: int, why: str = "") -> TablelogError:
    return TablelogError(
        f"table {context.table.identifier!r}: {why}snapshot {snapshot_id} expired (or its files did) while "
        "this reader read another writer's commit, whose changes are in no log and cannot be "
        "returned. Restart the reader with scan.mode=latest-full, and give readers a consumer-id so that "
        "expiry keeps the snapshots they still need"
    )


class ForeignSnapshotRead:
    """A transactional reader's reads of foreign snapshots, one log partition after another."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context
        #: The changes of the snapshot's partition being read: (snapshot id, partition, changes).
        self._held: tuple[int, int, list[Change]] | None = None

    def read(self, position: ReaderPosition, snapshot: SnapshotInfo, out: Batch, budget: int) -> bool:
        """Append the snapshot's changes in the reader's partitions to ``out``, from where
        ``position`` is inside it; False if the budget ran out first (``position`` then
        says how far it got)."""
        context = self._context
        begun = max(position.offsets, default=-1)
        for partition in range(context.table.log_partitions):
            if not context.reads(partition) or partition < begun:
                continue
            taken = position.offsets.get(partition, 0)
            if len(out) >= budget:
                position.offsets[partition] = taken
                return False
            changes = self._changes(snapshot, partition)
            rest = changes[taken:taken + max(0, budget - len(out))]
            self._add(rest, out)
            position.offsets[partition] = taken + len(rest)
            if taken + len(rest) < len(changes):
                return False
        self._held = None
        return True

    def _changes(self, snapshot: SnapshotInfo, partition: int) -> list[Change]:
        held = self._held
        if held is None or held[:2] != (snapshot.id, partition):
            held = self._held = (snapshot.id, partition, foreign_changes(self._context, snapshot, partition))
        return held[2]

    def _add(self, changes: list[Change], out: Batch) -> None:
        add_changes(self._context, changes, out)


def add_changes(context: ReadContext, changes: list[Change], out: Batch) -> None:
    """Append changes read from the files (in the reader's schema) to a poll's batch."""
    if not changes:
        return
    if out.arrow:
        out.add(context.to_arrow(changes), context.schema_id)
    else:
        out.changes(context.schema_id).extend(changes)


class ForeignSnapshotsSeen:
    """An eventual reader's foreign snapshots: it returns each one's changes in its
    partitions once it has read the log up to the end positions of the log commit
    before it (the snapshots are walked in order by the reader)."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context
        #: The log's end positions at the last log commit walked past (None: not known yet).
        self._ends: dict[int, int] | None = None
        self._warned = False

    def ready(self, position: ReaderPosition) -> bool:
        """Whether the reader at ``position`` has read every record committed before the
        next snapshot (``position.snapshot + 1``)."""
        if self._ends is None:
            table = self._context.table
            self._ends = last_end_positions(table.files, *table.log_name, upto=position.snapshot)
        return all(position.offsets.get(p, 0) >= end for p, end in self._ends.items() if self._context.reads(p))

    def ends_before(self) -> dict[int, int]:
        """The log's end positions at the last log commit before the next snapshot (after :meth:`ready`)."""
        return dict(self._ends or {})

    def passed(self, record: LogCommitRecord | None) -> None:
        """The reader walked past a snapshot (``record``: its log commit, if it has one)."""
        if record is not None and record.is_of(*self._context.table.log_name):  # another log's say nothing here
            self._ends = dict(record.end_positions)

    def read(self, snapshot: SnapshotInfo, out: Batch) -> None:
        context = self._context
        if context.upgrade(snapshot.schema_id):
            out.in_schema(context)
        for partition in range(context.table.log_partitions):
            if context.reads(partition):
                add_changes(context, foreign_changes(context, snapshot, partition), out)

    def expired(self, first: int, earliest: int) -> None:
        """Snapshots ``first .. earliest - 1`` expired before the reader looked at them."""
        if not self._warned:
            self._warned = True
            log.warning(
                "table %r: snapshots %d..%d expired before this eventual reader looked at them; the changes "
                "other writers committed there (if any) are not returned (logged once per reader). Keep "
                "snapshots longer than a reader pauses (snapshot.time-retained, snapshot.num-retained.min)",
                self._context.table.identifier, first, earliest - 1,
            )
        self._ends = None
