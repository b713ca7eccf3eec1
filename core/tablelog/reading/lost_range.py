"""An eventual reader whose log positions are gone (retention, a truncated log) takes the
changes committed there from the table files, then goes on in the log at its earliest
retained position.

The lost positions ``first .. end - 1`` of a partition are mapped to the snapshots that
committed records in them through the log commits (each snapshot's produced ranges); the
reader returns each such snapshot's changes of that partition, read as the transactional
fallback reads them (:mod:`tablelog.reading.table_changes`). Eventual reads are at least
once of committed changes: a snapshot whose ranges reach past ``end`` or before
``first`` is returned whole, so its records there may come twice; records in the lost
positions that no snapshot committed (failed or replayed attempts) are gone, as no
reader was owed them.

Whether the table still holds every snapshot that may have committed records there: the
records of snapshot *s* all lie before the log end it recorded, and log ends only grow.
So a retained snapshot whose recorded end is at or before ``first`` proves that every
snapshot with records at ``first`` or later is retained (retained snapshots are the
newest ones). Without such a snapshot, and with older snapshots expired, an expired one
may have had records there: the changes may be gone from both copies, and it is an error
naming what is gone and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablelog.commit.history import log_commits
from tablelog.errors import LogDataLostError
from tablelog.reading.batch import Batch
from tablelog.reading.context import ReadContext
from tablelog.reading.table_changes import changes_from_table, lost_reason
from tablelog.records import ProducedRange

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo


def committed_changes_lost_from_log(
    context: ReadContext, partition: int, first: int, end: int, lost: LogDataLostError, out: Batch,
) -> None:
    """Append to ``out`` the changes of every snapshot that committed records to
    ``partition`` at positions ``first .. end - 1``, from the table files, in commit order."""
    store = context.table.files
    proven_start = False  # a retained snapshot ended at or before ``first``
    owners = []
    log = context.table.log_name
    for snapshot, record in log_commits(store):
        if not record.is_of(*log):
            continue  # its positions are another log's (the table's log changed: log_eras)
        recorded_end = record.end_positions.get(partition)
        if recorded_end is not None and recorded_end <= first:
            proven_start = True
            continue
        ranges = record.ranges_by_partition().get(partition, [])
        if any(r.first < end and r.last >= first for r in ranges):
            owners.append((snapshot, ranges))
    earliest = store.earliest_snapshot_id()
    if not proven_start and earliest is not None and earliest > 1:
        raise context.lost(
            partition, first, end - 1,
            f"are gone from the log ({lost_reason(lost)}), and snapshots before {earliest} have expired from "
            f"the table, so the changes they committed at these positions may have no copy left. Start "
            "the reader again without this position (scan.mode=latest-full reads the current rows, then "
            "the log); to keep this from happening, keep snapshots longer than the log "
            "(snapshot.time-retained, snapshot.num-retained.min) or read transactionally with a "
            "consumer-id (expiry keeps the snapshots a consumer still needs)",
        )
    for snapshot, ranges in owners:
        snapshot_changes_from_table(context, snapshot, partition, ranges, lost, out)


def snapshot_changes_from_table(
    context: ReadContext, snapshot: SnapshotInfo, partition: int, ranges: list[ProducedRange],
    lost: LogDataLostError, out: Batch,
) -> None:
    """Append the changes ``snapshot`` committed to ``partition`` (its ``ranges`` there),
    from the table files, in the reader's schema (moved to the snapshot's when newer)."""
    if context.upgrade(snapshot.schema_id):  # this snapshot's changes and the ones after it
        out.in_schema(context)
    out.changes(context.schema_id).extend(changes_from_table(context, snapshot.id, partition, ranges, lost))

