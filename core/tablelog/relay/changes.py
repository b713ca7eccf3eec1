"""A foreign snapshot's changes as the log carries them: what a relay publishes.

The table files of a snapshot another writer committed hold, per key, the row it left
(``changelog-producer = none``): an update has no before-image there, a delete may have
no more than the key, and an insert of a key that existed is an update. A log consumer
(Flink's ``debezium-json`` above all) needs the full changelog, so for a primary-key
table the changes are the difference between the table before and after the snapshot,
for the keys it wrote (Paimon's ``lookup`` changelog producer emits the same, with
``changelog-producer.row-deduplicate``): ``+I`` of a new key, ``-U``/``+U`` of a changed
row, ``-D`` of a removed one, nothing for a row left as it was. An ``OVERWRITE`` may
remove keys it did not write: there every key of the table is compared.

An append table's changes are its delta rows as written. An ``OVERWRITE`` of one
removes rows no key identifies: it is refused, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablelog.errors import TablelogError
from tablelog.records import RowKind

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo, TableFiles

_ROW_KIND = "_row_kind"


class RelayError(TablelogError):
    """A foreign snapshot's changes cannot be published (expired, or an overwrite of an append table)."""


def snapshot_changes(files: TableFiles, snapshot: SnapshotInfo) -> tuple[pa.Table, list[RowKind]]:
    """The changes ``snapshot`` (committed by another writer) made, in the table object's
    schema, with one row kind per row."""
    primary_key = files.primary_key
    overwrite = snapshot.commit_kind == "OVERWRITE"
    if overwrite and not primary_key:
        raise RelayError(
            f"table {files.identifier!r}: snapshot {snapshot.id} is an OVERWRITE of a table without a primary "
            "key: the rows it removed have no key to name them in the log, so the relay cannot publish it. "
            "Publish nothing for it by starting the relay after it (--from-snapshot "
            f"{snapshot.id + 1}), and tell the log's consumers"
        )
    if overwrite:  # its delta holds the files it removed too: every key is compared
        before = _rows_by_key(files, snapshot.id - 1, snapshot.id)
        after = _rows_by_key(files, snapshot.id, snapshot.id)
        keys: Iterable[tuple[Any, ...]] = dict.fromkeys([*before, *after])
    else:
        delta = files.read_delta(snapshot.id, None)
        if delta is None:
            raise _expired(files, snapshot.id)
        if not primary_key:
            return delta.drop_columns([_ROW_KIND]), [RowKind(k) for k in delta.column(_ROW_KIND).to_pylist()]
        keys = _keys(delta, primary_key)
        buckets = _buckets(files, delta.drop_columns([_ROW_KIND]))
        before = _rows_by_key(files, snapshot.id - 1, snapshot.id, buckets, set(keys))
        after = _rows_by_key(files, snapshot.id, snapshot.id, buckets, set(keys))
    rows: list[dict[str, Any]] = []
    kinds: list[RowKind] = []
    for key in dict.fromkeys(keys):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None:
            rows.append(new)  # type: ignore[arg-type]
            kinds.append(RowKind.INSERT)
        elif new is None:
            rows.append(old)
            kinds.append(RowKind.DELETE)
        else:
            rows += [old, new]
            kinds += [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER]
    return pa.Table.from_pylist(rows, schema=files.schema), kinds


def _keys(data: pa.Table, primary_key: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return list(zip(*(data.column(k).to_pylist() for k in primary_key), strict=True))


def _buckets(files: TableFiles, delta: pa.Table) -> list[int] | None:
    """The buckets the delta's keys live in (None: every bucket, where they do not follow from the key)."""
    if files.bucket <= 0 or delta.num_rows == 0:
        return None
    return [bucket for bucket, _ in files.key_hash_rows(delta, files.bucket)]


def _rows_by_key(
    files: TableFiles, snapshot_id: int, foreign: int, buckets: list[int] | None = None,
    keys: set[tuple[Any, ...]] | None = None,
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rows of the table at ``snapshot_id`` (none before the first), by key, for the
    changes of snapshot ``foreign``; with ``buckets`` and ``keys``, those only."""
    if snapshot_id < 1:
        return {}
    if files.snapshot(snapshot_id) is None:
        raise _expired(files, foreign) if snapshot_id == foreign else _expired(files, snapshot_id, before=foreign)
    rows = files.read_rows(snapshot_id, buckets)
    result = {}
    for key, row in zip(_keys(rows, files.primary_key), rows.to_pylist(), strict=True):
        if keys is None or key in keys:
            result[key] = row
    return result


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
