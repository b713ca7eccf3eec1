"""A foreign snapshot's changes as the log carries them: what a relay publishes.

The table files of a snapshot another writer committed hold, per key, the row it left
(``changelog-producer = none``): an update has no before-image there, a delete may have
no more than the key, and an insert of a key that existed is an update. A log consumer
(Flink's ``debezium-json`` above all) needs the full changelog, so for a primary-key
table the changes are the difference between the table before and after the snapshot,
for the keys it wrote, as Paimon's ``lookup`` changelog producer emits it
(:func:`tablelog.store.delta_changes`): ``+I`` of a new key, ``-U``/``+U`` of a changed
row, ``-D`` of a removed one. A table whose log carries its writes gets
``changelog-producer.row-deduplicate`` (nothing for a row left as it was); one whose log
carries the merged changelog (merge engines, ``lookup``) gets its own merge and
row-deduplicate, as its writers' changes do. An ``OVERWRITE`` may remove keys it did not
write: its delta names every key whose row it removed or added.

An append table's changes are its delta rows as written. An ``OVERWRITE`` of one
removes rows no key identifies: it is refused, with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.errors import TablelogError
from tablelog.records import RowKind
from tablelog.store import delta_changes, lookup_options

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo, TableFiles

_ROW_KIND = "_row_kind"


class RelayError(TablelogError):
    """A foreign snapshot's changes cannot be published (expired, or an overwrite of an append table)."""


def snapshot_changes(files: TableFiles, snapshot: SnapshotInfo) -> tuple[pa.Table, list[RowKind]]:
    """The changes ``snapshot`` (committed by another writer) made, in the table object's
    schema, with one row kind per row."""
    primary_key = files.primary_key
    if snapshot.commit_kind == "OVERWRITE" and not primary_key:
        raise RelayError(
            f"table {files.identifier!r}: snapshot {snapshot.id} is an OVERWRITE of a table without a primary "
            "key: the rows it removed have no key to name them in the log, so the relay cannot publish it. "
            "Publish nothing for it by starting the relay after it (--from-snapshot "
            f"{snapshot.id + 1}), and tell the log's consumers"
        )
    delta = files.read_delta(snapshot.id, None)
    changes = delta if delta is None or not primary_key else delta_changes(
        files, snapshot.id, delta, lookup_options(files))
    if changes is None:
        raise _expired(files, snapshot.id) if files.snapshot(snapshot.id) is None else _expired(
            files, snapshot.id - 1, before=snapshot.id)
    return changes.drop_columns([_ROW_KIND]), [RowKind(k) for k in changes.column(_ROW_KIND).to_pylist()]


def _expired(files: TableFiles, snapshot_id: int, before: int | None = None) -> RelayError:
    what = (f"snapshot {snapshot_id}, the table before snapshot {before}," if before is not None
            else f"snapshot {snapshot_id}")
    return RelayError(
        f"table {files.identifier!r}: {what} has expired, so the changes of the foreign snapshot "
        f"{before or snapshot_id} can no longer be read and were never published to the log. Give the relay "
        "a consumer id (--consumer-id: expiry then keeps what it has yet to publish) or keep snapshots longer "
        "(snapshot.time-retained); to go on without them, start the relay after it "
        f"(--from-snapshot {(before or snapshot_id) + 1})"
    )
