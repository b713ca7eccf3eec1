"""The snapshots of one Paimon table: :class:`SnapshotInfo` and its look-ups (latest, earliest, by id, by time)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs


@attrs.frozen
class SnapshotInfo:
    id: int
    time_millis: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    total_record_count: int
    properties: Mapping[str, str]
    schema_id: int = 0
    #: The records of the data files this snapshot added (its delta).
    delta_record_count: int = 0


def _info(snapshot: Any) -> SnapshotInfo:
    return SnapshotInfo(
        id=snapshot.id,
        time_millis=snapshot.time_millis,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        commit_kind=str(snapshot.commit_kind),
        total_record_count=snapshot.total_record_count or 0,
        properties=dict(snapshot.properties or {}),
        schema_id=int(snapshot.schema_id or 0),
        delta_record_count=snapshot.delta_record_count or 0,
    )


#: How many snapshots past the LATEST hint are looked up one by one before a listing.
_HINT_FOLLOW_MAX = 100
# snapshot directory -> the latest snapshot id last found there: where to start when the
# LATEST hint is being rewritten (a writer truncates and writes it: a read may find it empty).
_last_found: dict[str, int] = {}


def _latest_id_from_hint(manager: Any) -> int | None:
    """The latest snapshot id, if the snapshot of that id can be read: the LATEST hint (or
    the id last found, while the hint is being rewritten), followed past the snapshots
    committed since, one existence check each (Java's ``SnapshotManager.findLatest``).
    None when there is no usable start: pypaimon then lists the snapshot directory, which
    it also does whenever the hint lags behind a commit: a read of every name in a
    directory of thousands of snapshots. (A warehouse is a filesystem catalog: its
    snapshots are files, never a REST catalog's.)"""
    file_io = manager.file_io
    try:
        start = int(file_io.read_file_utf8(manager.latest_file).strip())
    except Exception:  # noqa: BLE001 -- no hint, a half-written one, any store's error
        start = _last_found.get(manager.snapshot_dir, 0)
    if start <= 0:
        return None
    for _ in range(_HINT_FOLLOW_MAX):
        if not file_io.exists(manager.get_snapshot_path(start + 1)):
            return start
        start += 1
    return None


def latest_snapshot(manager: Any, read: Callable[[int], SnapshotInfo | None]) -> SnapshotInfo | None:
    """The latest snapshot in ``manager`` (the table's snapshot manager), the hinted one
    read with ``read`` (the table's :meth:`~tablelog.store.table.PaimonTable.snapshot`)."""
    hinted = _latest_id_from_hint(manager)
    if hinted is not None:
        # Reading the snapshot checks it exists: only an id read here is remembered.
        snapshot = read(hinted)
        if snapshot is not None:
            _last_found[manager.snapshot_dir] = snapshot.id
            return snapshot
    snapshot = manager.get_latest_snapshot()
    return None if snapshot is None else _info(snapshot)


def snapshot(manager: Any, snapshot_id: int) -> SnapshotInfo | None:
    """Snapshot ``snapshot_id`` (None: it does not exist)."""
    try:
        found = manager.get_snapshot_by_id(snapshot_id)
    except FileNotFoundError:
        return None
    return None if found is None else _info(found)


def earliest_id_of_non_empty(manager: Any, latest: Callable[[], SnapshotInfo | None]) -> int | None:
    """The earliest snapshot's id, for a caller that has seen a latest snapshot: the
    first that exists from the EARLIEST hint on (``latest``: the table's latest snapshot,
    read only when the hinted one is gone). Expiry in another process deletes
    snapshots while this looks; pypaimon's own look-up raises when a snapshot it was
    about to read is deleted (its existence check and its read are two steps), and a
    committer that hit that failed after its snapshot was committed."""
    file_io = manager.file_io
    try:
        start = int(file_io.read_file_utf8(f"{manager.snapshot_dir}/EARLIEST").strip())
    except Exception:  # noqa: BLE001 -- no hint, a half-written one, any store's error
        start = 1
    latest_info: SnapshotInfo | None = None  # read only when the hinted snapshot is gone
    snapshot_id = max(start, 1)
    while not file_io.exists(manager.get_snapshot_path(snapshot_id)):
        latest_info = latest_info or latest()
        if latest_info is None:
            return None
        if snapshot_id >= latest_info.id:
            return latest_info.id
        snapshot_id += 1
    return snapshot_id


def snapshot_at_or_before(manager: Any, millis: int) -> SnapshotInfo | None:
    """The newest snapshot taken at or before ``millis`` (None: none)."""
    found = manager.earlier_or_equal_time_mills(millis)
    return None if found is None else _info(found)


def snapshot_range(
    manager: Any, latest: SnapshotInfo | None, newest_first: bool, after: int, upto: int | None
) -> Iterator[SnapshotInfo]:
    """The kept snapshots with ``after < id <= upto`` (None: up to ``latest``), oldest first
    (or newest first); ``latest``: the table's latest snapshot, read by the caller."""
    if latest is None:
        return
    last = latest.id if upto is None else min(upto, latest.id)
    if newest_first and last == latest.id and last > after:
        # The latest exists (the caller read it): a walk that stops at it (the usual look-up
        # of the newest commits) reads nothing more, not even where the snapshots start.
        yield latest
        last -= 1
    first = max(earliest_id_of_non_empty(manager, lambda: latest) or 1, after + 1)
    ids = range(last, first - 1, -1) if newest_first else range(first, last + 1)
    for snapshot_id in ids:
        found = latest if snapshot_id == latest.id else snapshot(manager, snapshot_id)
        if found is not None:
            yield found
