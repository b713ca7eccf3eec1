"""When the log no longer holds what a snapshot committed (retention, deleted records, a
truncated log), a transactional reader takes that snapshot's changes from the table
files instead: the rows of the data files the snapshot added to the partition's bucket
(bucket b is log partition b), with their row kinds. Then it goes on in the log.

For an append table these are exactly the committed records, and their number is checked
against the committed count. A primary-key table's delta holds, per key, the last change
of each write: the same final state, with intermediate changes of a key within one commit
merged (and no ``-U`` records for an ``upsert`` changelog). Only when the snapshot has
expired from the table as well are the changes gone: an error says so and what to do.
"""

from __future__ import annotations

from tablelog.errors import LogDataLostError
from tablelog.options import ChangelogMode
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.records import ProducedRange, RowKind

_ROW_KIND = "_row_kind"


def changes_from_table(
    context: ReadContext, snapshot_id: int, partition: int, ranges: list[ProducedRange], lost: LogDataLostError,
) -> list[Change]:
    """The changes snapshot ``snapshot_id`` committed to ``partition``, from the table
    files; ``lost``: what the log said (part of the error when the table has none either)."""
    table = context.table
    first, last = min(r.first for r in ranges), max(r.last for r in ranges)
    delta = table.store.read_delta(snapshot_id, [partition])
    if delta is None:
        raise context.lost(
            partition, first, last,
            f"are gone from the log ({_reason(lost)}), and snapshot {snapshot_id} has expired from the table "
            "too, so no copy of these changes is left. Start the reader again without this position "
            "(scan.mode=latest-full reads the current rows, then the log); to keep this from happening, "
            "give readers a consumer-id (expiry keeps the snapshots a consumer still needs) or keep "
            "snapshots longer than the log (snapshot.time-retained)",
        )
    if table.store.schema_id != context.schema_id:  # the table object's schema: into the reader's
        mapped = table.store.mapping(table.store.schema_id, context.schema_id).arrow(delta.drop_columns([_ROW_KIND]))
        delta = mapped.add_column(0, _ROW_KIND, delta.column(_ROW_KIND))
    drop_before_images = table.changelog_mode is ChangelogMode.UPSERT
    changes = []
    for row in delta.to_pylist():
        kind = RowKind(row.pop(_ROW_KIND))
        if kind is RowKind.UPDATE_BEFORE and drop_before_images:
            continue
        changes.append(Change(kind, row, snapshot_id, partition, None))
    committed = sum(r.count for r in ranges)
    # Committed counts are of records; only where a record is a row do they count rows.
    if not table.primary_key and not context.codec.batched and len(changes) != committed:
        raise context.lost(
            partition, first, last,
            f"are gone from the log ({_reason(lost)}), and the table files of snapshot {snapshot_id} hold "
            f"{len(changes)} rows of bucket {partition} where {committed} were committed",
        )
    return changes


def _reason(lost: LogDataLostError) -> str:
    return str(lost).split(" are referenced by a committed snapshot but ", 1)[-1]
