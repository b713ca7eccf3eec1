"""When the log no longer holds what a snapshot committed (retention, deleted records, a
truncated log), a transactional reader takes that snapshot's changes from the table
files instead: the rows of the data files the snapshot added whose log partition is the
partition's (:meth:`~tablelog.table_view.TableView.log_partition_changes`), with their row
kinds. Then it goes on in the log.

For an append table these are exactly the committed records, and their number is checked
against the committed count. A primary-key table's delta holds, per key, the last change
of each write: the same final state, with intermediate changes of a key within one commit
merged (and no ``-U`` records for an ``upsert`` changelog). A table whose log carries the
merged changelog (a merge engine, or ``changelog-producer = lookup``) holds the writers'
inputs there (partial rows, increments): its changes are read as the diff of its merged
rows before and after the snapshot, for the keys of the delta
(:func:`tablelog.store.snapshot_changes`), which is what its log carried. Only when the
snapshot has expired from the table as well are the changes gone: an error says so and
what to do.

A reader that had returned part of a snapshot's partition from the log gets only the
rest where the delta is in log order, else the partition again (:func:`not_yet_returned`);
a poll stops inside a partition only where the rest can be told (see
``TransactionalRead._may_stop_inside``), so the second happens only to positions made
elsewhere (``tail --limit``, a resumed reader inside a sparse range).
"""

from __future__ import annotations

import logging

import pyarrow as pa

from tablelog.errors import LogDataLostError
from tablelog.options import ChangelogMode
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.records import ProducedRange, RowKind

_ROW_KIND = "_row_kind"

log = logging.getLogger(__name__)


def changes_from_table(
    context: ReadContext, snapshot_id: int, partition: int, ranges: list[ProducedRange], lost: LogDataLostError,
    returned: int | None = 0,
) -> list[Change]:
    """The changes snapshot ``snapshot_id`` committed to ``partition``, from the table
    files; ``lost``: what the log said (part of the error when the table has none either).
    ``returned``: how many of them the reader already returned from the log (None: some,
    not known how many); see :func:`not_yet_returned`."""
    table = context.table
    first, last = min(r.first for r in ranges), max(r.last for r in ranges)
    if not context.read_from_table:  # once per reader: it may be a log option pointing elsewhere
        context.read_from_table = True
        log.warning(
            "table %r: the log does not have the records snapshot %d committed to partition %d (%s); "
            "this reader reads such changes from the table files (logged once per reader)",
            table.identifier, snapshot_id, partition, lost_reason(lost),
        )
    delta = partition_delta(context, snapshot_id, partition)
    if delta is None:
        raise context.lost(
            partition, first, last,
            f"are gone from the log ({lost_reason(lost)}), and {_expired_snapshot(context, snapshot_id)} has "
            "expired from the table too, so no copy of these changes is left. Start the reader again without this position "
            "(scan.mode=latest-full reads the current rows, then the log); to keep this from happening, "
            "give readers a consumer-id (expiry keeps the snapshots a consumer still needs) or keep "
            "snapshots longer than the log (snapshot.time-retained)",
        )
    changes = delta_changes(context, delta, snapshot_id, partition)
    committed = sum(r.count for r in ranges)
    # Committed counts are of records; only where a record is a row do they count rows.
    if not table.primary_key and not context.codec.rows_per_record_vary and len(changes) != committed:
        raise context.lost(
            partition, first, last,
            f"are gone from the log ({lost_reason(lost)}), and the table files of snapshot {snapshot_id} hold "
            f"{len(changes)} rows of log partition {partition} where {committed} were committed",
        )
    return not_yet_returned(context, changes, snapshot_id, partition, ranges, returned)


def _expired_snapshot(context: ReadContext, snapshot_id: int) -> str:
    """Which snapshot the changes of ``snapshot_id`` needed is gone: itself, or the one before
    it, which a merged-changelog table's changes are the difference from."""
    files = context.table.files
    if files.snapshot(snapshot_id) is None or snapshot_id == 1 or files.snapshot(snapshot_id - 1) is not None:
        return f"snapshot {snapshot_id}"
    return f"snapshot {snapshot_id - 1} (the table's changes in snapshot {snapshot_id} are the difference from it)"


def partition_delta(context: ReadContext, snapshot_id: int, partition: int) -> pa.Table | None:
    """The changes of ``snapshot_id`` in log partition ``partition`` from the files: its
    delta rows, or a merged-changelog table's diff (None: expired). Every read of a
    snapshot's changes from the files for one log partition goes through here: the one
    place that knows which rows a log partition holds."""
    return context.table.log_partition_changes(snapshot_id, [partition], context.schema_id)


def partition_rows(context: ReadContext, snapshot_id: int, partition: int) -> pa.Table:
    """The rows of snapshot ``snapshot_id`` in log partition ``partition``, in the reader's schema."""
    return context.table.log_partition_rows(snapshot_id, [partition], context.schema_id)


def delta_changes(context: ReadContext, delta: pa.Table, snapshot_id: int, partition: int) -> list[Change]:
    """A delta (:func:`partition_delta`, in the reader's schema) as changes; ``-U`` rows are
    left out where the table's changelog has none (``upsert``)."""
    drop_before_images = context.table.changelog_mode is ChangelogMode.UPSERT
    changes = []
    for row in delta.to_pylist():
        kind = RowKind(row.pop(_ROW_KIND))
        if kind is RowKind.UPDATE_BEFORE and drop_before_images:
            continue
        changes.append(Change(kind, row, snapshot_id, partition, None))
    return changes


def not_yet_returned(
    context: ReadContext, changes: list[Change], snapshot_id: int, partition: int, ranges: list[ProducedRange],
    returned: int | None,
) -> list[Change]:
    """What is left of a snapshot's partition for a reader that returned ``returned`` of
    its committed records from the log before the rest was lost.

    Exact where the delta lists the records in log order: an append table's partition
    holding one write's records (its data files hold the rows as written, and its log
    records are in write order), after the first ``returned``. A primary-key table's
    delta is one change per key in key order, and several writes' files say nothing of
    how their records interleave in the log: then the whole partition comes again (for a
    primary-key table the rows the reader ends with are the same)."""
    if returned == 0:
        return changes
    if context.codec.rows_per_record_vary:
        returned = None  # counted in records of many rows: which rows is not known
    if returned is not None and not context.table.primary_key and len(ranges) == 1:
        return changes[returned:]
    log.warning(
        "table %r: the log lost the rest of snapshot %d's changes in partition %d after the reader had "
        "returned %s of them; the table files cannot tell which, so all %d come again from the table "
        "(this snapshot's partition is read at least once)",
        context.table.identifier, snapshot_id, partition, "some" if returned is None else returned, len(changes),
    )
    return changes


def lost_reason(lost: LogDataLostError) -> str:
    """Why the log has no copy (the part of its message after what was lost)."""
    return str(lost).split(" are referenced by a committed snapshot but ", 1)[-1]
