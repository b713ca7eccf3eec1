"""Every data file of a snapshot, per (partition, bucket), planned from the last plan.

A lookup before each commit of a merge-engine table, and the check whether a bucket
needs compaction, want the files of the latest snapshot. Planning it whole reads every
manifest of the table, which grows with the table; snapshot ``n + 1`` differs from
snapshot ``n`` by its delta manifests alone (the files its commit added and deleted). So
the last plan of each table is kept in the process and moved forward by the deltas of the
snapshots since: a commit's plan reads a few small files whatever the table's size.

A table dropped and created again at the same path numbers its snapshots anew, so a kept
plan is trusted only for the same table: the same current schema (its id and creation
time) and, while the planned snapshot is not expired, the same delta manifest list in
it. Anything else (a schema change, a snapshot between expired, one too far ahead, an
older one) plans whole again. A plan is a snapshot's files as Paimon merges its manifest
entries (each added file, less the deleted ones, by Paimon's file identifier).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import attrs

from tablelog.store.manifests import list_entries

#: Snapshots a kept plan is moved forward by, at most, before a whole plan is cheaper.
_MAX_STEPS = 64
#: Tables whose last plan a process keeps (least recently used dropped first).
_MAX_TABLES = 16

BucketKey = tuple[tuple[Any, ...], int]
#: A data file within its bucket, as Paimon tells manifest entries apart.
_FileKey = tuple[Any, ...]


@attrs.define
class _Plan:
    #: The table's current schema id and its creation time, when planned.
    table: tuple[int, int]
    snapshot_id: int
    delta_list: str
    buckets: dict[BucketKey, dict[_FileKey, Any]]


_PLANS: OrderedDict[str, _Plan] = OrderedDict()
_TABLE_LOCKS: dict[str, threading.Lock] = {}
_LOCK = threading.Lock()


def snapshot_files(paimon: Any, snapshot_id: int) -> dict[BucketKey, list[Any]]:
    """The data files (``DataFileMeta``, their paths set) of each (partition values,
    bucket) of the table at ``snapshot_id``, which must exist."""
    snapshots = paimon.snapshot_manager()
    target = snapshots.get_snapshot_by_id(snapshot_id)
    if target is None:
        raise FileNotFoundError(f"snapshot {snapshot_id} of {paimon.table_path} does not exist")
    key = str(paimon.table_path)
    table = (int(paimon.table_schema.id), int(paimon.table_schema.time_millis or 0))
    with _table_lock(key):  # one plan of a table at a time; other tables' go on
        with _LOCK:
            plan = _PLANS.get(key)
        if plan is None or plan.table != table or not _advanced(paimon, plan, target):
            plan = _Plan(table, target.id, target.delta_manifest_list, _whole(paimon, target))
        with _LOCK:
            kept = _PLANS.get(key)
            if kept is None or kept.table != table or kept.snapshot_id <= plan.snapshot_id:
                _PLANS[key] = plan  # the newest plan of the table as it is now
            _PLANS.move_to_end(key)
            while len(_PLANS) > _MAX_TABLES:
                _PLANS.pop(next(iter(_PLANS)))
        return {bucket: list(files.values()) for bucket, files in plan.buckets.items() if files}


def _table_lock(key: str) -> threading.Lock:
    with _LOCK:
        return _TABLE_LOCKS.setdefault(key, threading.Lock())


def forget_plans() -> None:
    """Drop every kept plan (tests; a process that wants to plan whole again)."""
    with _LOCK:
        _PLANS.clear()


def _advanced(paimon: Any, plan: _Plan, target: Any) -> bool:
    """Move ``plan`` forward to ``target`` by the deltas between; False when it cannot
    be (then ``plan`` may be half moved: plan whole)."""
    if plan.snapshot_id == target.id:
        return plan.delta_list == target.delta_manifest_list
    if not plan.snapshot_id < target.id <= plan.snapshot_id + _MAX_STEPS:
        return False
    snapshots = paimon.snapshot_manager()
    try:
        start = _existing(snapshots, plan.snapshot_id)
        if start is not None and start.delta_manifest_list != plan.delta_list:
            return False
        steps = [snapshots.get_snapshot_by_id(i) for i in range(plan.snapshot_id + 1, target.id)] + [target]
        if any(step is None for step in steps):
            return False
        for step in steps:
            _apply(paimon, plan.buckets, _delta_entries(paimon, step))
            plan.snapshot_id, plan.delta_list = step.id, step.delta_manifest_list
    except FileNotFoundError:  # expired meanwhile
        return False
    return True


def _existing(snapshots: Any, snapshot_id: int) -> Any:
    """Snapshot ``snapshot_id``, None when expired."""
    try:
        return snapshots.get_snapshot_by_id(snapshot_id)
    except FileNotFoundError:
        return None


def _whole(paimon: Any, snapshot: Any) -> dict[BucketKey, dict[_FileKey, Any]]:
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    manifests = ManifestListManager(paimon).read_all(snapshot)
    entries = ManifestFileManager(paimon).read_entries_parallel(manifests, max_workers=4) if manifests else []
    buckets: dict[BucketKey, dict[_FileKey, Any]] = {}
    _apply(paimon, buckets, entries)
    return buckets


def _delta_entries(paimon: Any, snapshot: Any) -> list[Any]:
    return list_entries(paimon, snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)


@attrs.frozen
class SnapshotPairs:
    """What one snapshot's commit changed, per (partition values, bucket), as its delta
    manifests say (whoever committed it: tablelog, a Java writer or job, a Flink one)."""

    commit_kind: str
    #: The pairs it added files to.
    added: frozenset[BucketKey]
    #: The pairs it deleted files from (a compaction's inputs, an overwrite's old files).
    deleted: frozenset[BucketKey]


#: Each read snapshot's pairs, by its delta manifest list (a name no other snapshot has).
_DELTA_PAIRS: OrderedDict[str, SnapshotPairs] = OrderedDict()
_MAX_DELTA_PAIRS = 4096


def delta_pairs(paimon: Any, snapshot_id: int) -> SnapshotPairs | None:
    """The pairs snapshot ``snapshot_id`` changed; None when it does not exist (expired)."""
    snapshots = paimon.snapshot_manager()
    try:
        snapshot = snapshots.get_snapshot_by_id(snapshot_id)
        if snapshot is None:
            return None
        key = str(snapshot.delta_manifest_list)
        with _LOCK:
            known = _DELTA_PAIRS.get(key)
        if known is not None:
            return known
        added: set[BucketKey] = set()
        deleted: set[BucketKey] = set()
        for entry in _delta_entries(paimon, snapshot):
            (added if entry.kind == 0 else deleted).add((tuple(entry.partition.values), int(entry.bucket)))
    except FileNotFoundError:  # expired while read
        return None
    pairs = SnapshotPairs(str(snapshot.commit_kind).rsplit(".", 1)[-1], frozenset(added), frozenset(deleted))
    with _LOCK:
        _DELTA_PAIRS[key] = pairs
        while len(_DELTA_PAIRS) > _MAX_DELTA_PAIRS:
            _DELTA_PAIRS.popitem(last=False)
    return pairs


def _apply(paimon: Any, buckets: dict[BucketKey, dict[_FileKey, Any]], entries: Iterable[Any]) -> None:
    """Add the added files of ``entries``, then remove the deleted ones (a file moved to
    another level is deleted at one and added at the other)."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    deleted: list[Any] = []
    for entry in entries:
        if entry.kind != 0:
            deleted.append(entry)
            continue
        partition = tuple(entry.partition.values)
        file = entry.file
        # the path a plan's split gives its files: readers open them by it
        file.file_path = file.physical_path() if file.external_path else canonical_data_file_path(
            paimon, partition, entry.bucket, file.file_name)
        buckets.setdefault((partition, int(entry.bucket)), {})[_file_key(file)] = file
    for entry in deleted:
        held = buckets.get((tuple(entry.partition.values), int(entry.bucket)))
        if held is not None:
            held.pop(_file_key(entry.file), None)


def _file_key(file: Any) -> _FileKey:
    return (file.level, file.file_name, tuple(file.extra_files or ()), file.embedded_index, file.external_path)
